package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
)

const genSynopsis = `gavel gen [flags]

Generates a synthetic dataset of CRM rollouts (the CRM environment's tasks
TASK-001, -002, -003, -004 and -006 in equal shares, agents that are correct,
partly correct, wrong or do nothing) and the verdicts grading it must report,
known by construction. With --env calendar: TASK-C01 rollouts for the built-in
calendar spec (verifiers/spec/calendar.yaml), among them agents that create the
meeting but also delete or move another event. Prints the expected counts per verifier and writes them as JSON to
--expected.
The same flags always produce byte-identical files.`

const genExamples = `  gavel gen --out rollouts.parquet --rollouts 100000
  gavel gen --out data/rollouts.jsonl.zst --rollouts 1000000 --seed 7
  gavel gen --out bad.jsonl --rollouts 1000 --bad-share 0.05
  gavel gen --env calendar --out calendar.jsonl --rollouts 1000
  gavel gen --out rollouts.parquet --tasks-mode     # also writes rollouts.tasks.parquet
  gavel gen --out unique.parquet --unique-worlds --tasks TASK-002,TASK-004
  gavel gen --out nested.parquet --nested           # states and logs as structs, maps and lists
  gavel grade --tasks rollouts.tasks.parquet rollouts.parquet`

func runGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gen", genSynopsis, genExamples, stdout)
	out := fs.String("out", "rollouts.parquet", "dataset `PATH`; its extension (.parquet, .jsonl, .jsonl.zst) sets the format")
	rollouts := fs.Int("rollouts", 1000, "number of rollouts (rows) `N`")
	seed := fs.Uint64("seed", 1, "random `SEED`")
	format := fs.String("format", "", "dataset format: parquet, jsonl or jsonl.zst (default: from the --out extension)")
	badShare := fs.Float64("bad-share", 0, "share `F` of rows (0 to 1) replaced by bad rows, expected to end in error")
	tasksMode := fs.Bool("tasks-mode", false, "write initial states once per task into a tasks table and leave them out of the rows")
	nested := fs.Bool("nested", false, "store states and logs as nested Parquet columns (structs, maps, lists) rather than JSON text")
	tasksOut := fs.String("tasks-out", "", "tasks table `PATH` in tasks mode (default: --out with .tasks before its extension)")
	rowGroup := fs.Int("row-group-rows", 10000, "rows `N` per Parquet row group")
	expected := fs.String("expected", "", "expected counts `PATH` (default: --out + .expected.json)")
	expectedRows := fs.String("expected-rows", "", "also write each row's expected verdict as JSON Lines to `PATH`")
	worlds := fs.Int("worlds", 64, "initial worlds `N` generated per task when not in tasks mode")
	unique := fs.Bool("unique-worlds", false, "a new initial world for every rollout (Parquet: plain 1 MiB pages, no dictionary); not with --tasks-mode")
	taskIDs := fs.String("tasks", "", "comma-separated CRM task `IDS` that rollouts draw, in equal shares (default all five)")
	models := fs.String("models", "", "comma-separated model `NAMES`, strongest first (default: four built-in names)")
	quiet := fs.Bool("quiet", false, "print nothing on standard error")
	env := fs.String("env", "crm", "reference environment: crm (the CRM tasks of verifiers/crm) or calendar (graded by the built-in calendar spec)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *env != "crm" && *env != "calendar" {
		return usagef("gavel gen --env calendar", "--env %q: want crm or calendar", *env)
	}
	const hint = "gavel gen --help"
	if fs.NArg() > 0 {
		return usagef(hint, "unexpected argument %q", fs.Arg(0))
	}
	if *rollouts < 1 {
		return usagef(hint, "--rollouts must be at least 1, got %d", *rollouts)
	}
	if *rowGroup < 1 {
		return usagef(hint, "--row-group-rows must be at least 1, got %d", *rowGroup)
	}
	if *worlds < 1 {
		return usagef(hint, "--worlds must be at least 1, got %d", *worlds)
	}
	if *out == "" {
		return usagef(hint, "--out must not be empty")
	}
	if !(*badShare >= 0 && *badShare <= 1) {
		return usagef(hint, "--bad-share must be between 0 and 1, got %v", *badShare)
	}
	if *unique && *tasksMode {
		return usagef(hint, "--unique-worlds and --tasks-mode exclude each other")
	}
	if *tasksOut != "" && !*tasksMode {
		return usagef("gavel gen --tasks-mode --tasks-out "+*tasksOut, "--tasks-out needs --tasks-mode")
	}
	cfg := gen.Config{
		Out:             *out,
		Format:          columnar.DatasetFormat(*format),
		Rollouts:        *rollouts,
		Seed:            *seed,
		BadShare:        *badShare,
		TasksMode:       *tasksMode,
		Nested:          *nested,
		TasksOut:        *tasksOut,
		ExpectedOut:     *expected,
		ExpectedRowsOut: *expectedRows,
		RowGroupRows:    *rowGroup,
		WorldsPerTask:   *worlds,
		UniqueWorlds:    *unique,
	}
	if *taskIDs != "" {
		cfg.Tasks = strings.Split(*taskIDs, ",")
	}
	if *models != "" {
		cfg.Models = strings.Split(*models, ",")
	}
	if err := cfg.Validate(); err != nil {
		return usagef(hint, "%v", err)
	}
	if *env == "calendar" {
		return runGenCalendar(ctx, fs, cfg, *quiet, stdout, stderr)
	}
	start := time.Now()
	exp, err := gen.Run(ctx, cfg)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if err := exp.WriteTable(stdout); err != nil {
		return err
	}
	if *quiet {
		return nil
	}
	data, tasks, expPath, rowsPath := cfg.Paths()
	for _, p := range []string{data, tasks, expPath, rowsPath} {
		if p == "" {
			continue
		}
		size := int64(-1)
		if fi, err := os.Stat(p); err == nil {
			size = fi.Size()
		}
		fmt.Fprintf(stderr, "wrote %s (%s)\n", p, byteSize(size))
	}
	fmt.Fprintf(stderr, "%d rollouts in %.1fs (%.0f rows/s)\n", *rollouts, elapsed.Seconds(), float64(*rollouts)/elapsed.Seconds())
	return nil
}

// byteSize formats a file size for people.
func byteSize(n int64) string {
	switch {
	case n < 0:
		return "size unknown"
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
