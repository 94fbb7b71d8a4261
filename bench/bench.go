// Package bench is a library of grading workloads: generated datasets and
// the runs that grade them, driven by `go test -bench` in this package.
// Each workload is a Config value; nothing is global, so a benchmark can
// prepare several side by side and compare them in one run.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// Dataset is a generated CRM dataset on disk and what grading it must
// report.
type Dataset struct {
	// Path is the dataset file; Tasks the tasks table (tasks mode only).
	Path, Tasks string
	// Bytes is the dataset's size on disk.
	Bytes int64
	// Expected holds the verdict counts known by construction.
	Expected *gen.Expected
}

// DatasetConfig says what to generate. The zero value is 10,000 CRM
// rollouts as Parquet, seed 1.
type DatasetConfig struct {
	Rollouts  int
	Seed      uint64
	Ext       string // ".parquet" (default), ".jsonl" or ".jsonl.zst"
	TasksMode bool
	// UniqueWorlds generates a new world per rollout (gen.Config).
	UniqueWorlds bool
	// Tasks restricts the tasks drawn (nil: all five).
	Tasks []string
	// Nested stores states and logs as nested Parquet columns (gen
	// --nested) rather than JSON text.
	Nested bool
	// Reuse keeps a dataset that an earlier Generate wrote into the same
	// directory with the same configuration (its expected counts file is
	// written last, so its presence marks a complete dataset).
	Reuse bool
}

func (c DatasetConfig) withDefaults() DatasetConfig {
	if c.Rollouts == 0 {
		c.Rollouts = 10000
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Ext == "" {
		c.Ext = ".parquet"
	}
	return c
}

// Path returns the dataset's path in dir.
func (c DatasetConfig) Path(dir string) string {
	c = c.withDefaults()
	mode := ""
	if c.TasksMode {
		mode = "-tasks"
	}
	if c.UniqueWorlds {
		mode += "-unique"
	}
	for _, t := range c.Tasks {
		mode += "-" + strings.TrimPrefix(t, "TASK-")
	}
	if c.Nested {
		mode += "-nested"
	}
	return filepath.Join(dir, fmt.Sprintf("crm-%d-%d%s%s", c.Rollouts, c.Seed, mode, c.Ext))
}

// Generate writes the dataset into dir.
func (c DatasetConfig) Generate(ctx context.Context, dir string) (*Dataset, error) {
	c = c.withDefaults()
	path := c.Path(dir)
	var exp *gen.Expected
	if c.Reuse {
		exp, _ = loadExpected(path + ".expected.json")
	}
	if exp == nil {
		var err error
		exp, err = gen.Run(ctx, gen.Config{Out: path, Rollouts: c.Rollouts, Seed: c.Seed, TasksMode: c.TasksMode, UniqueWorlds: c.UniqueWorlds, Tasks: c.Tasks, Nested: c.Nested})
		if err != nil {
			return nil, fmt.Errorf("generate %s: %w", path, err)
		}
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return &Dataset{Path: path, Tasks: exp.TasksTable, Bytes: info.Size(), Expected: exp}, nil
}

// loadExpected reads the expected counts gen.Run wrote.
func loadExpected(path string) (*gen.Expected, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	exp := new(gen.Expected)
	if err := json.Unmarshal(data, exp); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return exp, nil
}

// VerifierPassed returns the number of rollouts of verifier id that the
// generator expects to pass, and whether it has such a verifier.
func (d *Dataset) VerifierPassed(id string) (int64, bool) {
	for _, v := range d.Expected.Verifiers {
		if v.VerifierID != nil && *v.VerifierID == id {
			return v.Passed, true
		}
	}
	return 0, false
}

// GradeConfig is one grading run of a dataset.
type GradeConfig struct {
	Workers   int
	BatchSize int
	Format    string // output format (default parquet)
}

// Result is what a run measured.
type Result struct {
	Rollouts int64
	Elapsed  time.Duration
	Summary  *results.Summary
}

// RolloutsPerSecond returns the run's rate.
func (r Result) RolloutsPerSecond() float64 {
	return float64(r.Rollouts) / r.Elapsed.Seconds()
}

// Grade grades ds into out with the built-in verifiers and checks that the
// verdict counts are the ones the generator expects: a fast wrong answer
// is not a result.
func Grade(ctx context.Context, ds *Dataset, out string, c GradeConfig) (Result, error) {
	cfg := pipeline.Config{
		Inputs:    []string{ds.Path},
		Out:       out,
		Format:    c.Format,
		Verifiers: crm.Verifiers(),
		TasksFile: ds.Tasks,
		Workers:   c.Workers,
		BatchSize: c.BatchSize,
	}
	if cfg.Format == "" {
		cfg.Format = columnar.FormatParquet
	}
	start := time.Now()
	res, err := pipeline.Run(ctx, cfg)
	elapsed := time.Since(start)
	if err != nil {
		return Result{}, err
	}
	s, want := res.Summary, ds.Expected.Totals
	if s.Passed != want.Passed || s.Failed != want.Failed || s.Error != want.Error {
		return Result{}, fmt.Errorf("graded passed/failed/error %d/%d/%d, generator expects %d/%d/%d",
			s.Passed, s.Failed, s.Error, want.Passed, want.Failed, want.Error)
	}
	return Result{Rollouts: s.Rollouts, Elapsed: elapsed, Summary: s}, nil
}
