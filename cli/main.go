// Package cli is gavel's command line as a library: Main runs every
// command and flag of the gavel binary with the Go verifiers it is given.
// A team that keeps its verifiers in a module of its own builds its own
// gavel with a main of one line:
//
//	func main() { cli.Main(myverifiers.All()...) }
//
// The stock binary is exactly that, called with the reference
// environments' verifiers. cli, verifiers, verifiers/verifiertest and
// columnar/jsonview are gavel's public Go API (docs/verifiers.md says what
// is promised about them).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/verifiers"
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
		{"judge", "measure judges: agreement, calibration against human labels, pairwise comparison", runJudge},
		{"commit", "join the shards of a sharded run", runCommit},
		{"serve", "serve the gym verifier API and online grading over HTTP", runServe},
	}
}

// Main runs the gavel command line on os.Args with exactly the Go
// verifiers vs compiled in (beside the spec files, judges and remote
// verifiers a command line names), and exits the process with gavel's exit
// status: 0 done, 1 a failure, 2 a usage error, 3 some rows have status
// error. Main does not return.
//
// Each verifier must have an ID, at least one task and a Grade function
// (else Main exits 2 naming it); two with one ID, or two binding one task
// pattern, are refused when a command binds them. A verifier whose Source is empty gets the file and
// line of its Grade function.
func Main(vs ...*verifiers.Verifier) {
	if err := setGoVerifiers(vs); err != nil {
		fmt.Fprintf(os.Stderr, "gavel: %v\n", err)
		os.Exit(2)
	}
	ctx, in := notifyInterrupt(context.Background())
	code := in.exitStatus(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
	in.stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status. Only here are
// errors mapped to exit statuses.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stdout)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		printUsage(stdout)
		return 0
	case "help":
		if len(args) == 1 {
			printUsage(stdout)
			return 0
		}
		// gavel help COMMAND [SUBCOMMAND]: that command's --help.
		switch args[1] {
		case "help":
			printUsage(stdout)
			return 0
		case "version":
			fmt.Fprint(stdout, versionUsage)
			return 0
		}
		c, err := lookupCommand(args[1])
		if err != nil {
			return exitCode(err, stderr)
		}
		return exitCode(c.run(ctx, append(slices.Clone(args[2:]), "--help"), stdout, stderr), stderr)
	case "-version", "--version", "version":
		if len(args) > 1 {
			return exitCode(usagef("gavel version", "version takes no arguments"), stderr)
		}
		printVersion(stdout, debug.ReadBuildInfo)
		return 0
	}
	c, err := lookupCommand(args[0])
	if err != nil {
		return exitCode(err, stderr)
	}
	return exitCode(c.run(ctx, args[1:], stdout, stderr), stderr)
}

// lookupCommand returns the command called name, or a usage error
// suggesting the nearest command name.
func lookupCommand(name string) (command, error) {
	const hint = "gavel help"
	names := []string{"help", "version"}
	for _, c := range commands() {
		if c.name == name {
			return c, nil
		}
		names = append(names, c.name)
	}
	if strings.HasPrefix(name, "-") {
		return command{}, usagef(hint, "unknown flag %s before the command (a command's flags follow it: gavel COMMAND [flags])%s",
			name, didYouMean(strings.TrimLeft(name, "-"), []string{"help", "version"}, "--"))
	}
	return command{}, usagef(hint, "unknown command %q%s", name, didYouMean(name, names, ""))
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
	fmt.Fprintf(w, "  %-12s %s\n", "version", "gavel's version, Go version and source revision (also --version)")
	fmt.Fprintln(w, "\nExit statuses:")
	for _, s := range exitStatuses {
		fmt.Fprintf(w, "  %d  %s\n", s.code, s.meaning)
	}
	fmt.Fprintln(w, "\nRun 'gavel help COMMAND' or 'gavel COMMAND --help' for a command's flags and examples.")
}

// exitStatuses are the exit statuses of every command.
var exitStatuses = []struct {
	code    int
	meaning string
}{
	{0, "done: every row graded (grade), or the command did what it was asked"},
	{1, "a failure: an input that could not be read, a write that failed, a server that could not be reached; or a check that failed (diff --fail-on, leaderboard --expect, judge calibrate --require-tpr/--require-tnr, verifier test)"},
	{2, "a usage error: a bad flag, argument or configuration, named with an example; spec check: a file with problems"},
	{3, "grade: every row was written, and some have status error (see error_kind and error in the rewards)"},
}

const versionUsage = `Usage: gavel version (or gavel --version)

Prints gavel's version, the Go version it was built with and, from the build
information, the module version, the source revision and its time, and whether
the source had uncommitted changes.
`

// printVersion prints gavel's version, the Go version it was built with
// and, from the build information, the main module's version and the
// source revision, its time and whether the tree had local changes.
func printVersion(w io.Writer, readBuildInfo func() (*debug.BuildInfo, bool)) {
	fmt.Fprintf(w, "gavel %s\n", version)
	fmt.Fprintf(w, "go version: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	bi, ok := readBuildInfo()
	if !ok {
		fmt.Fprintln(w, "build information: none (not built with module support)")
		return
	}
	if bi.Main.Version != "" {
		fmt.Fprintf(w, "module version: %s\n", bi.Main.Version)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		fmt.Fprintln(w, "revision: unknown (built without version control information)")
		return
	}
	if settings["vcs.modified"] == "true" {
		rev += " (modified: built with uncommitted changes)"
	}
	fmt.Fprintf(w, "revision: %s\n", rev)
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(w, "revision time: %s\n", t)
	}
}

// newFlagSet returns a flag set that reports errors instead of exiting and,
// on --help, prints to w its usage: a synopsis, the flags (spelled --name)
// and examples.
func newFlagSet(name, synopsis, examples string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: %s\n", synopsis)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(w, "\nFlags:\n")
			printFlags(w, fs)
		}
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s\n", examples)
		}
	}
	return fs
}

// printFlags prints the flags of fs as flag.PrintDefaults does, but
// spelled as users type them and as the documentation writes them:
// --name, never -name.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		if def := f.DefValue; !isZeroDefault(f) {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isString := g.Get().(string); isString {
					def = strconv.Quote(def)
				}
			}
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, usage)
	})
}

// isZeroDefault reports whether f's default is its type's zero value,
// which the help leaves out.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// parseFlags parses args, turning a flag error into a usage error that
// says it once, with the flag spelled --name, suggests the nearest flag
// for an unknown one and sends to the command's --help (the flag
// package would print the whole usage after its message). On --help it
// prints the usage and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	}
	return usagef("gavel "+fs.Name()+" --help", "%s", flagErrorText(fs, err))
}

// flagErrorText rewords an error of the flag package: flags spelled
// --name, and an unknown flag followed by the nearest known one.
func flagErrorText(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		return fmt.Sprintf("%s: unknown flag --%s%s", fs.Name(), name, didYouMean(name, names, "--"))
	}
	if m := singleDash.FindStringSubmatchIndex(msg); m != nil {
		msg = msg[:m[3]] + "--" + msg[m[4]:]
	}
	return fs.Name() + ": " + msg
}

// singleDash finds a flag named -name in the flag package's messages
// ("flag needs an argument: -out", "invalid value "x" for flag -workers").
var singleDash = regexp.MustCompile(`(: |for flag |for )-([A-Za-z0-9][A-Za-z0-9._-]*)`)

// didYouMean returns "; did you mean PREFIXname?" naming the candidate
// nearest to word, or "" when none is near enough to be a likely typo:
// within 1 edit for words of up to 4 letters, 2 for longer ones (edits:
// insertions, deletions, substitutions and swaps of adjacent letters, case
// ignored). Ties go to the first candidate in sorted order.
func didYouMean(word string, candidates []string, prefix string) string {
	w := strings.ToLower(word)
	limit := 1
	if len([]rune(w)) > 4 {
		limit = 2
	}
	sorted := slices.Clone(candidates)
	slices.Sort(sorted)
	best, bestD := "", limit+1
	for _, c := range sorted {
		if d := editDistance(w, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + prefix + best + "?"
}

// editDistance is the optimal string alignment distance between a and b,
// by runes: the insertions, deletions, substitutions and transpositions
// of adjacent runes that turn a into b, no substring edited twice.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows of the (len(ra)+1) x (len(rb)+1) table.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
