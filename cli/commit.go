package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gavelhq/gavel/results"
)

const commitExamples = `  gavel grade --shard 0/4 --out results data/ &   # ... one process per shard, 0/4 to 3/4
  gavel commit results
  gavel grade --shard auto/16 --out /shared/results /shared/rollouts/   # in a Kubernetes Indexed Job or Slurm array
  gavel commit /shared/results`

func runCommit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("commit", "gavel commit DIR\n\nJoins the shards of a sharded run (gavel grade --shard I/N --out DIR): checks that every\nshard ran and every part is complete, then writes DIR/manifest.json, DIR/summary.json\nand DIR/_SUCCESS, as one process grading every input would have.\n\nExit status: 0 committed; 1 a shard or part is missing (nothing written); 2 usage error.", commitExamples, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("gavel commit results", "want one output directory, got %d arguments", fs.NArg())
	}
	dir := fs.Arg(0)
	s, err := results.Commit(dir)
	switch {
	case errors.Is(err, results.ErrNoShards):
		return fmt.Errorf("%w (grade with --shard I/N first)", err)
	case errors.Is(err, results.ErrIncomplete):
		return fmt.Errorf("%w (run those shards again with --resume)", err)
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "committed %s: %d rollouts (%d checks), passed %d  failed %d  pending %d  error %d\n", dir, s.Rollouts, s.Checks, s.Passed, s.Failed, s.Pending, s.Error)
	return nil
}
