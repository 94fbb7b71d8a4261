package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/verifiers"
)

// Config describes one grading run. Its zero value grades nothing: Inputs
// and Verifiers are needed; every other field has a working default.
type Config struct {
	// Inputs are the files, directories, globs or "-" to grade.
	Inputs []string
	// Out is the output directory ("gavel-out" when empty).
	Out string
	// Format is the output format: parquet (default), arrow or jsonl.
	Format string
	// Verifiers are the verifiers to bind tasks to.
	Verifiers []*verifiers.Verifier
	// TasksFile is the tasks table, if any.
	TasksFile string
	// Fields maps rollout fields to input columns.
	Fields columnar.FieldNames
	// Keep names the metadata columns copied into the rewards; nil keeps
	// those of model, run_id and sample that the inputs have.
	Keep []string
	// Workers is the number of grading goroutines (0: the number of CPUs).
	Workers int
	// BatchSize is the number of rows per batch (0: 256). Results never
	// depend on it.
	BatchSize int
	// MaxErrors stops the run after that many rows with status error
	// (0: no limit).
	MaxErrors int64
	// Stdin is read for the input "-" (os.Stdin when nil).
	Stdin io.Reader
	// Progress, when set, is told how many rows are done, and the total
	// when it becomes known.
	Progress Progress
	// Version is written into the manifest.
	Version string
	// Flags are the result-affecting flags as given, for the manifest.
	Flags map[string]string
}

// Progress receives the progress of a run from one goroutine.
type Progress interface {
	// SetTotal gives the number of rows to grade, or -1 when unknown.
	SetTotal(total int64)
	// Add reports n more rows written.
	Add(n int)
	// Finish ends the display.
	Finish()
}

// ErrMaxErrors is returned when --max-errors stopped the run.
var ErrMaxErrors = errors.New("too many rows with status error")

// Result is what a run did.
type Result struct {
	Summary *Summary
	// ErrorRows is the number of rows with status error.
	ErrorRows int64
}

// Run grades every input of cfg into cfg.Out. It returns after every
// goroutine it started has exited. A ConfigError means nothing was
// written; any other error means the run stopped, with the parts completed
// so far in place and listed in the manifest.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	r, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// runner holds one run's state.
type runner struct {
	cfg      Config
	units    []Unit
	plan     *plan
	summary  *Summary
	manifest *Manifest
	start    time.Time
}

func prepare(cfg Config) (*runner, error) {
	if cfg.Out == "" {
		cfg.Out = "gavel-out"
	}
	if cfg.Format == "" {
		cfg.Format = columnar.FormatParquet
	}
	switch cfg.Format {
	case columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL:
	default:
		return nil, &ConfigError{Msg: fmt.Sprintf("unknown output format %q", cfg.Format), Hint: "--format parquet, --format arrow or --format jsonl"}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.NumCPU()
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.Stdin == nil {
		cfg.Stdin = os.Stdin
	}
	units, skipped, err := Inputs(cfg.Inputs)
	if err != nil {
		return nil, err
	}
	stdins := 0
	for _, u := range units {
		if u.Path == Stdin {
			stdins++
		}
	}
	if stdins > 1 {
		return nil, &ConfigError{Msg: "standard input (-) is named more than once"}
	}
	bindings, err := Bind(cfg.Verifiers)
	if err != nil {
		return nil, err
	}
	p := &plan{fields: cfg.Fields.WithDefaults(), bindings: bindings, keep: cfg.Keep}
	if cfg.TasksFile != "" {
		tasks, err := LoadTasks(cfg.TasksFile, cfg.Fields)
		if err != nil {
			return nil, &ConfigError{Msg: err.Error()}
		}
		p.tasks = tasks
	}
	if p.keep == nil {
		p.keep, err = defaultKeep(units, p.fields)
		if err != nil {
			return nil, err
		}
	}
	for _, k := range p.keep {
		if p.fields.Is(k) {
			return nil, &ConfigError{Msg: fmt.Sprintf("--keep %s: %s is a rollout field, not metadata", k, k)}
		}
	}
	r := &runner{cfg: cfg, units: units, plan: p, summary: newSummary(skipped)}
	r.manifest = newManifest(cfg, units)
	return r, nil
}

// Bind maps each task id to the one verifier that binds it. Two verifiers
// binding one task, or two verifiers with one id, is a ConfigError naming
// both.
func Bind(vs []*verifiers.Verifier) (map[string]*verifiers.Verifier, error) {
	ids := map[string]*verifiers.Verifier{}
	bindings := map[string]*verifiers.Verifier{}
	for _, v := range vs {
		if prev := ids[v.ID]; prev != nil {
			return nil, &ConfigError{Msg: fmt.Sprintf("verifier id %s is defined twice (%s and %s)", v.ID, prev.Source, v.Source)}
		}
		ids[v.ID] = v
		for _, t := range v.Tasks {
			if prev := bindings[t]; prev != nil {
				return nil, &ConfigError{Msg: fmt.Sprintf("task %s is bound by two verifiers: %s (%s) and %s (%s)", t, prev.ID, prev.Source, v.ID, v.Source)}
			}
			bindings[t] = v
		}
	}
	return bindings, nil
}

// defaultKeep returns those of model, run_id and sample that any input
// has: the columns of Parquet and Arrow files, the keys of the first
// object line of JSON Lines files. Standard input is not probed.
func defaultKeep(units []Unit, fields columnar.FieldNames) ([]string, error) {
	want := []string{"model", "run_id", "sample"}
	found := map[string]bool{}
	for _, u := range units {
		if u.Path == Stdin {
			continue
		}
		names, err := columnar.ProbeColumns(u.Path)
		if err != nil {
			return nil, fmt.Errorf("probe %s: %w", u.Path, err)
		}
		for _, n := range names {
			found[n] = true
		}
	}
	var keep []string
	for _, w := range want {
		if found[w] && !fields.Is(w) {
			keep = append(keep, w)
		}
	}
	return keep, nil
}

// job is one unit of work: a batch of a unit, or (batch nil) the end of a
// unit. seq orders jobs across the whole run.
type job struct {
	seq   int64
	unit  *Unit
	batch *columnar.Batch
	rows  int64 // rows of the unit, on the end-of-unit job
	res   *results
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	r.start = time.Now()
	if err := prepareOut(r.cfg.Out); err != nil {
		return nil, err
	}
	if err := r.manifest.write(r.cfg.Out); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	workers := r.cfg.Workers
	// tokens bounds the batches in flight (read, being graded, or waiting
	// to be put in order), and so the memory, whatever the speed of each
	// stage.
	tokens := make(chan struct{}, 2*workers+2)
	jobs := make(chan *job, workers)
	done := make(chan *job, 2*workers+2)
	resultPool := sync.Pool{New: func() any { return new(results) }}

	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		readErr = r.produce(ctx, tokens, jobs)
	}()
	var workerWG sync.WaitGroup
	for range workers {
		workerWG.Add(1)
		go func() {
			defer workerWG.Done()
			g := &grader{plan: r.plan}
			for j := range jobs {
				if j.batch != nil {
					res := resultPool.Get().(*results)
					res.reset()
					g.gradeBatch(j.unit, j.batch, res)
					j.batch.Release()
					j.batch = nil
					j.res = res
				}
				done <- j
			}
		}()
	}
	go func() {
		workerWG.Wait()
		close(done)
	}()

	errRows, writeErr := r.write(ctx, done, tokens, &resultPool)
	if writeErr != nil {
		cancel()
	}
	// Drain so that every goroutine can exit.
	for j := range done {
		if j.res != nil {
			resultPool.Put(j.res)
		}
	}
	wg.Wait()
	if r.cfg.Progress != nil {
		r.cfg.Progress.Finish()
	}

	elapsed := time.Since(r.start)
	r.summary.finish()
	r.summary.ElapsedSeconds = elapsed.Seconds()
	if elapsed > 0 {
		r.summary.RowsPerSecond = float64(r.summary.Rollouts) / elapsed.Seconds()
	}
	res := &Result{Summary: r.summary, ErrorRows: errRows}
	err := writeErr
	if err == nil && readErr != nil {
		err = readErr
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if mErr := r.manifest.write(r.cfg.Out); mErr != nil && err == nil {
		err = mErr
	}
	if sErr := writeJSON(filepath.Join(r.cfg.Out, "summary.json"), r.summary); sErr != nil && err == nil {
		err = sErr
	}
	return res, err
}

// produce reads every unit in order and sends its batches, then an
// end-of-unit job, taking a token for each.
func (r *runner) produce(ctx context.Context, tokens chan struct{}, jobs chan<- *job) error {
	var seq int64
	send := func(j *job) bool {
		select {
		case tokens <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		j.seq = seq
		seq++
		select {
		case jobs <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	opts := columnar.Options{Fields: r.plan.fields}
	if r.cfg.Progress != nil {
		r.cfg.Progress.SetTotal(r.totalRows(opts))
	}
	for i := range r.units {
		u := &r.units[i]
		rd, err := r.open(u, opts)
		if err != nil {
			return err
		}
		var rows int64
		for {
			b, err := rd.Next(r.cfg.BatchSize)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rd.Close()
				return err
			}
			rows += int64(len(b.Rows))
			if !send(&job{unit: u, batch: b}) {
				b.Release()
				rd.Close()
				return ctx.Err()
			}
		}
		if err := rd.Close(); err != nil {
			return fmt.Errorf("close %s: %w", u.Path, err)
		}
		if !send(&job{unit: u, rows: rows}) {
			return ctx.Err()
		}
	}
	return nil
}

func (r *runner) open(u *Unit, opts columnar.Options) (columnar.Reader, error) {
	if u.Path == Stdin {
		return columnar.NewJSONLReader("-", r.cfg.Stdin, opts)
	}
	return columnar.Open(u.Path, opts)
}

// totalRows sums the row counts recorded in the inputs' footers, or
// returns -1 when an input does not record one.
func (r *runner) totalRows(opts columnar.Options) int64 {
	var total int64
	for i := range r.units {
		u := &r.units[i]
		if u.Format == columnar.InputJSONL {
			return -1
		}
		rd, err := columnar.Open(u.Path, opts)
		if err != nil {
			return -1 // the producer reports the error when it gets there
		}
		n := rd.Rows()
		rd.Close()
		if n < 0 {
			return -1
		}
		total += n
	}
	return total
}

// write puts finished jobs back in input order (a reorder buffer keyed by
// seq) and writes them: it is the only goroutine that touches parts, the
// summary and the manifest, so their contents follow input order whatever
// the order in which workers finish. Each job's token is returned once the
// job is written, which bounds the reorder buffer.
func (r *runner) write(ctx context.Context, done <-chan *job, tokens <-chan struct{}, pool *sync.Pool) (errRows int64, err error) {
	pending := map[int64]*job{}
	var next int64
	var part *columnar.Part
	defer func() {
		if part != nil {
			part.Abort()
		}
	}()
	partOpts := columnar.PartOptions{Format: r.cfg.Format, Keep: r.plan.keep}
	for j := range done {
		pending[j.seq] = j
		for {
			j, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if part == nil {
				part, err = columnar.CreatePart(r.cfg.Out, j.unit.Index, partOpts)
				if err != nil {
					return errRows, err
				}
			}
			if j.res != nil {
				res := j.res
				j.res = nil
				for i := range res.rewards {
					rw := &res.rewards[i]
					r.summary.add(rw)
					if rw.Status == "error" {
						errRows++
					}
				}
				r.summary.Checks += int64(len(res.checks))
				if err := part.WriteRewards(res.rewards); err != nil {
					return errRows, err
				}
				if err := part.WriteChecks(res.checks); err != nil {
					return errRows, err
				}
				if r.cfg.Progress != nil {
					r.cfg.Progress.Add(len(res.rewards))
				}
				pool.Put(res)
				if r.cfg.MaxErrors > 0 && errRows >= r.cfg.MaxErrors {
					<-tokens
					return errRows, fmt.Errorf("%w: stopped after %d (--max-errors %d)", ErrMaxErrors, errRows, r.cfg.MaxErrors)
				}
			} else {
				if err := part.Close(); err != nil {
					return errRows, err
				}
				part = nil
				r.manifest.complete(j.unit.Index, j.rows)
				if err := r.manifest.write(r.cfg.Out); err != nil {
					return errRows, err
				}
			}
			<-tokens
		}
		if ctx.Err() != nil {
			return errRows, ctx.Err()
		}
	}
	return errRows, nil
}

// prepareOut creates the output directory and removes the results of an
// earlier run in it (parts, summary, manifest); other files are left alone.
func prepareOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	for _, sub := range []string{"rewards", "checks"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read output directory: %w", err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "part-") || strings.HasPrefix(e.Name(), ".part-") {
				if err := os.Remove(filepath.Join(dir, sub, e.Name())); err != nil {
					return fmt.Errorf("clear output directory: %w", err)
				}
			}
		}
	}
	for _, f := range []string{"summary.json", "manifest.json"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("clear output directory: %w", err)
		}
	}
	return nil
}

// writeJSON writes v as indented JSON under a temporary name and renames
// it into place.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	data = append(data, '\n')
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Manifest is manifest.json: what produced the results and which parts
// are complete.
type Manifest struct {
	Version   string             `json:"gavel_version"`
	Verifiers []ManifestVerifier `json:"verifiers"`
	Flags     map[string]string  `json:"flags"`
	Inputs    []ManifestInput    `json:"inputs"`
}

// ManifestVerifier identifies one loaded verifier.
type ManifestVerifier struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Tasks       []string `json:"tasks"`
	Source      string   `json:"source"`
	Fingerprint string   `json:"fingerprint"`
}

// ManifestInput is one input unit and the state of its part.
type ManifestInput struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Rows is the number of rows read (null until the part is complete).
	Rows     *int64 `json:"rows"`
	Part     string `json:"part"`
	Complete bool   `json:"complete"`
}

func newManifest(cfg Config, units []Unit) *Manifest {
	m := &Manifest{Version: cfg.Version, Flags: cfg.Flags}
	if m.Flags == nil {
		m.Flags = map[string]string{}
	}
	for _, v := range cfg.Verifiers {
		sum := sha256.Sum256([]byte(v.Definition))
		m.Verifiers = append(m.Verifiers, ManifestVerifier{
			ID: v.ID, Name: v.Name, Tasks: v.Tasks, Source: v.Source,
			Fingerprint: "sha256:" + hex.EncodeToString(sum[:]),
		})
	}
	sort.Slice(m.Verifiers, func(i, j int) bool { return m.Verifiers[i].ID < m.Verifiers[j].ID })
	for _, u := range units {
		m.Inputs = append(m.Inputs, ManifestInput{Path: u.Path, Size: u.Size, Part: columnar.PartName(u.Index, cfg.Format)})
	}
	return m
}

func (m *Manifest) complete(unit int, rows int64) {
	m.Inputs[unit].Rows = &rows
	m.Inputs[unit].Complete = true
}

func (m *Manifest) write(dir string) error {
	return writeJSON(filepath.Join(dir, "manifest.json"), m)
}
