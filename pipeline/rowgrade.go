package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// RowConfig describes a RowGrader. Verifiers are needed; every other field
// has a working zero value.
type RowConfig struct {
	// Verifiers are the verifiers to bind tasks to.
	Verifiers []*verifiers.Verifier
	// Tasks is the tasks table (LoadTasks), if any.
	Tasks Tasks
	// Fields maps rollout fields to input columns.
	Fields columnar.FieldNames
	// SourceFile is written in each reward row's source_file and names
	// rows without a rollout id (SourceFile#row).
	SourceFile string
}

// RowGrader grades rows handed to it one batch at a time, outside a run,
// with the same per-row code as Run: a row gets the same verdict, checks
// and reward rows as it would in a file graded by Run with the same
// verifiers, tasks, fields, keep columns and source file name. It is safe
// for concurrent use; each call takes a grader (its reusable documents and
// buffers) from a pool.
//
// Verifier calls are not timed: a verifier that never returns holds the
// calling goroutine (Run's watchdog abandons the worker instead).
type RowGrader struct {
	base    plan
	unit    Unit
	graders sync.Pool
	vs      []*verifiers.Verifier
}

// NewRowGrader binds the verifiers to their tasks. Two verifiers binding
// one task, or sharing an id, is a ConfigError.
func NewRowGrader(cfg RowConfig) (*RowGrader, error) {
	bindings, err := Bind(cfg.Verifiers)
	if err != nil {
		return nil, err
	}
	p := plan{fields: cfg.Fields.WithDefaults(), bindings: bindings, tasks: cfg.Tasks, keep: []string{}, initials: jsonview.NewCache(initialCacheBytes)}
	p.skips = columnar.StateSkips(&p.fields, p.initials)
	g := &RowGrader{base: p, unit: Unit{Path: cfg.SourceFile}, vs: cfg.Verifiers}
	g.graders.New = func() any { return &rowWorker{g: grader{timedOut: -1}} }
	return g, nil
}

// rowWorker is a grader with its results buffer.
type rowWorker struct {
	g    grader
	plan plan
	res  results
}

// Grade grades the rows of b in order and calls each with every row's
// reward row and check rows, which are valid only during the call. keep
// names the metadata columns copied into the reward rows (nil: none).
// Grading stops at the first error each returns, which Grade returns.
func (g *RowGrader) Grade(b *columnar.Batch, keep []string, each func(rw *columnar.RewardRow, checks []columnar.CheckRow) error) error {
	w := g.graders.Get().(*rowWorker)
	defer g.graders.Put(w)
	w.plan = g.base
	if keep != nil {
		w.plan.keep = keep
	}
	w.g.plan = &w.plan
	w.res.reset()
	defer w.res.reset()
	w.g.gradeBatch(&g.unit, b, &w.res, 0)
	// A row has one check row per check it counts (none on an error).
	checks := w.res.checks
	for i := range w.res.rewards {
		rw := &w.res.rewards[i]
		n := int(rw.ChecksTotal)
		if err := each(rw, checks[:n:n]); err != nil {
			return err
		}
		checks = checks[n:]
	}
	return nil
}

// Verifiers describes the grader's verifiers as manifest.json does, in
// the order they were given.
func (g *RowGrader) Verifiers() []ManifestVerifier {
	out := make([]ManifestVerifier, len(g.vs))
	for i, v := range g.vs {
		sum := sha256.Sum256([]byte(v.Definition))
		out[i] = ManifestVerifier{ID: v.ID, Name: v.Name, Tasks: v.Tasks, Source: v.Source, Fingerprint: "sha256:" + hex.EncodeToString(sum[:])}
	}
	return out
}
