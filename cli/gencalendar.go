package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/internal/atomicfile"
)

// runGenCalendar is `gavel gen --env calendar`: a dataset of TASK-C01
// rollouts for the built-in calendar spec (verifiers/spec/calendar.yaml), among them agents
// that create the meeting and also delete or move another event (which
// check-nothing-else-changed fails), with the expected verdicts by
// construction. It takes the configuration runGen parsed and
// validated; the flags that only the CRM environment has are refused.
func runGenCalendar(ctx context.Context, fs *flag.FlagSet, c gen.Config, quiet bool, stdout, stderr io.Writer) error {
	const hint = "gavel gen --env calendar --out calendar.parquet --rollouts 1000"
	var bad string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "env", "out", "rollouts", "seed", "format", "row-group-rows", "expected", "quiet":
		default:
			bad = f.Name
		}
	})
	if bad != "" {
		return usagef(hint, "--%s is not supported with --env calendar", bad)
	}
	out, _, expPath, _ := c.Paths()
	format := c.Format
	if format == "" {
		format, _ = columnar.DatasetFormatOf(out) // Validate checked it
	}
	cfg := gen.CalendarConfig{Format: format, Rollouts: c.Rollouts, Seed: c.Seed, RowGroupRows: c.RowGroupRows}
	var exp *gen.CalendarExpected
	err := writeAtomic(out, func(w io.Writer) error {
		var err error
		exp, err = gen.GenerateCalendar(ctx, cfg, w)
		return err
	})
	if err != nil {
		return err
	}
	exp.Dataset = out
	js, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(expPath, func(w io.Writer) error {
		_, err := w.Write(append(js, '\n'))
		return err
	}); err != nil {
		return err
	}
	if err := exp.WriteTable(stdout); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stderr, "wrote %s and %s\ngrade it with: gavel grade %s\n", out, expPath, out)
	}
	return nil
}

// writeAtomic writes a file under a temporary name in its directory,
// creating the directory, and renames it into place when write succeeds.
// The file is mode 0644 (before the umask): results are meant to be
// shared, as gen and grade write them.
func writeAtomic(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, atomicfile.Options{Perm: 0o644}, write)
}
