// Command gavel grades agent rollouts in bulk. See README.md, docs/ and
// `gavel help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// usageError is a bad command line or configuration: exit status 2,
// nothing written. Hint, when set, is printed after "Try:".
type usageError struct {
	msg  string
	hint string
}

func (e *usageError) Error() string { return e.msg }

func usagef(hint, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), hint: hint}
}

// exitError carries an exit status chosen by a subcommand (3: some rows
// have status error) with an optional message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// command is one subcommand: run parses its own flags from args.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"grade", "grade rollout datasets", runGrade},
		{"gen", "generate a synthetic dataset", runGen},
		{"verifier", "list, add or test verifiers", runVerifier},
		{"spec", "check declarative verifier files", runSpec},
		{"diff", "compare two result directories (regressions)", runDiff},
		{"leaderboard", "pass rates and rewards by model, with intervals", runLeaderboard},
		{"rescore", "recompute rewards with other formulas, from the check rows", runRescore},
		{"report", "a page to read one run (HTML or Markdown), against a baseline", runReport},
		{"commit", "join the shards of a sharded run", runCommit},
		{"serve", "serve the gym verifier API and online grading over HTTP", runServe},
	}
}

func main() {
	ctx, in := notifyInterrupt(context.Background())
	code := in.exitStatus(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
	in.stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status. Only here are
// errors mapped to exit statuses.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		return exitCode(err, stderr)
	}
	fmt.Fprintf(stderr, "gavel: unknown command %q\nTry: gavel help\n", args[0])
	return 2
}

func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "gavel: %s\n", ue.msg)
		if ue.hint != "" {
			fmt.Fprintf(stderr, "Try: %s\n", ue.hint)
		}
		return 2
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "gavel: %s\n", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "gavel: %v\n", err)
	return 1
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "gavel grades agent rollouts in bulk.\n\nUsage: gavel COMMAND [flags] [args]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'gavel COMMAND --help' for a command's flags and examples.")
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints usage (a synopsis, the flags and examples) on --help.
func newFlagSet(name, synopsis, examples string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
		if examples != "" {
			fmt.Fprintf(stderr, "\nExamples:\n%s\n", examples)
		}
	}
	return fs
}

// parseFlags parses args, turning a flag error into a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("gavel "+fs.Name()+" --help", "%v", err)
	}
	return nil
}
