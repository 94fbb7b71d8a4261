package cli

import (
	"bytes"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("gavel %v: exit %d, stderr %q; want 0 and nothing", args, code, stderr)
		}
		for _, want := range []string{"gavel " + version + "\n", "go version: " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("gavel %v printed:\n%s\nwant it to contain %q", args, stdout, want)
			}
		}
	}
	if code, _, stderr := runCLI(t, "version", "extra"); code != 2 || !strings.Contains(stderr, "version takes no arguments") {
		t.Errorf("gavel version extra: exit %d, stderr %q; want 2", code, stderr)
	}
}

func TestPrintVersion(t *testing.T) {
	info := func(version string, settings ...string) func() (*debug.BuildInfo, bool) {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/gavelhq/gavel", Version: version}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return func() (*debug.BuildInfo, bool) { return bi, true }
	}
	goLine := "go version: " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	tests := []struct {
		name string
		info func() (*debug.BuildInfo, bool)
		want string
	}{
		{"release with its revision", info("v0.1.0", "vcs.revision", "0123abcd", "vcs.time", "2026-11-30T12:00:00Z", "vcs.modified", "false"),
			"gavel " + version + "\n" + goLine + "module version: v0.1.0\nrevision: 0123abcd\nrevision time: 2026-11-30T12:00:00Z\n"},
		{"modified tree", info("(devel)", "vcs.revision", "0123abcd", "vcs.time", "2026-11-30T12:00:00Z", "vcs.modified", "true"),
			"gavel " + version + "\n" + goLine + "module version: (devel)\nrevision: 0123abcd (modified: built with uncommitted changes)\nrevision time: 2026-11-30T12:00:00Z\n"},
		{"no version control", info("(devel)"),
			"gavel " + version + "\n" + goLine + "module version: (devel)\nrevision: unknown (built without version control information)\n"},
		{"no build information", func() (*debug.BuildInfo, bool) { return nil, false },
			"gavel " + version + "\n" + goLine + "build information: none (not built with module support)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printVersion(&b, tt.info)
			if got := b.String(); got != tt.want {
				t.Errorf("printVersion =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestVersionOfBuiltBinary checks that a binary built from a git checkout
// names the checkout's revision and its time.
func TestVersionOfBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gavel")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	if dirs, err := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir").Output(); err == nil {
		if f := strings.Fields(string(dirs)); len(f) == 2 && f[0] != f[1] {
			// The go command stamps no revision in a linked git worktree
			// (its .git is a file): TestPrintVersion covers the rest.
			t.Skip("a linked git worktree: go build stamps no revision there")
		}
	}
	// Built by make build (-buildvcs=auto stamps the revision even where
	// GOFLAGS turns stamping off): TestStaticBinary's binary.
	bin := makeBuild(t)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "revision: " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("gavel --version printed:\n%s\nwant it to contain %q", out, want)
	}
	if !regexp.MustCompile(`(?m)^revision time: \d{4}-\d\d-\d\dT`).Match(out) {
		t.Errorf("gavel --version printed:\n%s\nwant the revision's time", out)
	}
	// A development version names the commit: 0.2.0-dev+g1a2b3c4.
	want := regexp.MustCompile(`^gavel ` + regexp.QuoteMeta(baseVersion) + `\+g` + string(head[:7]) + `(\.dirty)?\n`)
	if strings.HasSuffix(baseVersion, "-dev") && !want.Match(out) {
		t.Errorf("gavel --version printed:\n%s\nwant it to begin %s", out, want)
	}
}

func TestFullVersion(t *testing.T) {
	info := func(settings ...string) func() (*debug.BuildInfo, bool) {
		bi := &debug.BuildInfo{}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return func() (*debug.BuildInfo, bool) { return bi, true }
	}
	for _, tc := range []struct {
		base string
		info func() (*debug.BuildInfo, bool)
		want string
	}{
		{"0.2.0-dev", info("vcs.revision", "1a2b3c4d5e6f", "vcs.modified", "false"), "0.2.0-dev+g1a2b3c4"},
		{"0.2.0-dev", info("vcs.revision", "1a2b3c4d5e6f", "vcs.modified", "true"), "0.2.0-dev+g1a2b3c4.dirty"},
		{"0.2.0-dev", info(), "0.2.0-dev"},
		{"0.2.0-dev", func() (*debug.BuildInfo, bool) { return nil, false }, "0.2.0-dev"},
		{"0.2.0", info("vcs.revision", "1a2b3c4d5e6f"), "0.2.0"},
	} {
		if got := fullVersion(tc.base, tc.info); got != tc.want {
			t.Errorf("fullVersion(%q) = %q, want %q", tc.base, got, tc.want)
		}
	}
}

// singleDashFlag finds a flag written -name at the start of a help line.
var singleDashFlag = regexp.MustCompile(`(?m)^\s+-[a-z]`)

func TestHelpCommand(t *testing.T) {
	var cases [][]string
	for _, c := range commands() {
		cases = append(cases, []string{c.name})
	}
	cases = append(cases, []string{"verifier", "list"}, []string{"verifier", "add"}, []string{"verifier", "test"}, []string{"spec", "check"},
		[]string{"judge", "pairwise"})
	for _, cmd := range cases {
		name := strings.Join(cmd, " ")
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{append([]string{"help"}, cmd...), append(cmd[:len(cmd):len(cmd)], "--help")} {
				code, stdout, stderr := runCLI(t, args...)
				if code != 0 || stderr != "" {
					t.Errorf("gavel %s: exit %d, stderr %q; want 0 and nothing", strings.Join(args, " "), code, stderr)
				}
				if !strings.HasPrefix(stdout, "Usage: gavel "+cmd[0]) || !strings.Contains(stdout, "Examples:") {
					t.Errorf("gavel %s printed:\n%s\nwant the usage of gavel %s", strings.Join(args, " "), stdout, name)
				}
				if singleDashFlag.MatchString(stdout) {
					t.Errorf("gavel %s spells a flag with one dash:\n%s", strings.Join(args, " "), stdout)
				}
			}
		})
	}
	// The flags with their placeholders and defaults.
	_, stdout, _ := runCLI(t, "help", "grade")
	for _, want := range []string{"  --out DIR\n", `(default "gavel-out")`, "  --quiet\n", "  --timeout D\n", "(default 10s)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("gavel help grade lacks %q:\n%s", want, stdout)
		}
	}
	for _, args := range [][]string{{"help"}, {"help", "help"}, {"--help"}} {
		if code, stdout, _ := runCLI(t, args...); code != 0 || !strings.Contains(stdout, "gavel help COMMAND") || !strings.Contains(stdout, "version") {
			t.Errorf("gavel %v: exit %d:\n%s", args, code, stdout)
		}
	}
	if code, stdout, _ := runCLI(t, "help", "version"); code != 0 || !strings.HasPrefix(stdout, "Usage: gavel version") {
		t.Errorf("gavel help version: exit %d:\n%s", code, stdout)
	}
}

func TestSuggestions(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // the whole of standard error
	}{
		{"command", []string{"grde", "x.jsonl"}, "gavel: unknown command \"grde\"; did you mean grade?\nTry: gavel help\n"},
		{"command swapped letters", []string{"dfif"}, "gavel: unknown command \"dfif\"; did you mean diff?\nTry: gavel help\n"},
		{"command after help", []string{"help", "leaderbord"}, "gavel: unknown command \"leaderbord\"; did you mean leaderboard?\nTry: gavel help\n"},
		{"command far from any", []string{"frobnicate"}, "gavel: unknown command \"frobnicate\"\nTry: gavel help\n"},
		{"flag before the command", []string{"--versoin"}, "gavel: unknown flag --versoin before the command (a command's flags follow it: gavel COMMAND [flags]); did you mean --version?\nTry: gavel help\n"},
		{"flag", []string{"grade", "--outt", "o", "x.jsonl"}, "gavel: grade: unknown flag --outt; did you mean --out?\nTry: gavel grade --help\n"},
		{"flag with one dash", []string{"grade", "-qiuet", "x.jsonl"}, "gavel: grade: unknown flag --qiuet; did you mean --quiet?\nTry: gavel grade --help\n"},
		{"flag after the inputs", []string{"leaderboard", "out/", "--bye", "model"}, "gavel: leaderboard: unknown flag --bye; did you mean --by?\nTry: gavel leaderboard --help\n"},
		{"flag swapped letters", []string{"diff", "--exmaples", "3", "a", "b"}, "gavel: diff: unknown flag --exmaples; did you mean --examples?\nTry: gavel diff --help\n"},
		{"flag far from any", []string{"grade", "--frobnicate", "x.jsonl"}, "gavel: grade: unknown flag --frobnicate\nTry: gavel grade --help\n"},
		{"subcommand's flag", []string{"verifier", "add", "VER-9", "--tsak", "T"}, "gavel: verifier add: unknown flag --tsak; did you mean --task?\nTry: gavel verifier add --help\n"},
		{"missing value", []string{"grade", "--out"}, "gavel: grade: flag needs an argument: --out\nTry: gavel grade --help\n"},
		{"bad value", []string{"grade", "--workers", "many", "x.jsonl"}, "gavel: grade: invalid value \"many\" for flag --workers: parse error\nTry: gavel grade --help\n"},
		{"subcommand", []string{"verifier", "lsit"}, "gavel: verifier: unknown subcommand \"lsit\"; did you mean list?\nTry: gavel verifier --help\n"},
		{"spec subcommand", []string{"spec", "chek", "x.yaml"}, "gavel: spec: unknown subcommand \"chek\"; did you mean check?\nTry: gavel spec check FILE...\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != 2 {
				t.Errorf("gavel %v: exit %d, want 2", tt.args, code)
			}
			if stdout != "" {
				t.Errorf("gavel %v printed the help or more on standard output:\n%s", tt.args, stdout)
			}
			if stderr != tt.want {
				t.Errorf("gavel %v: stderr\n%q\nwant\n%q", tt.args, stderr, tt.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"out", "out", 0},
		{"outt", "out", 1},
		{"ot", "out", 1},
		{"fromat", "format", 1},
		{"grde", "grade", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment: no edit of a swapped pair
		{"résumé", "resume", 2},
		{"", "abc", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestCommandsOnce: each command is listed once in the help.
func TestCommandsOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands() {
		if seen[c.name] {
			t.Errorf("command %s listed twice", c.name)
		}
		seen[c.name] = true
	}
}
