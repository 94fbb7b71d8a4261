package cli

import (
	"strings"
	"testing"
)

func TestDiffMarkdownArrows(t *testing.T) {
	dir := t.TempDir()
	base := gradeYes(t, dir, "base", [][]any{{"yes", "yes", "no"}})
	// r0 stays, r1 fails its optional check (passed both times, reward
	// changed), r2... and r1 again: say no; r2's output is not a string,
	// an input error.
	cur := gradeYes(t, dir, "cur", [][]any{{"yes", "", 5}})
	wants := []string{"| pass → fail |", "| fail → pass |", "passed → error 1", "answered: pass → fail", "says-yes: pass → fail"}
	for _, args := range [][]string{
		{"diff", "--format", "markdown", base, cur},
		{"diff", "--markdown", base, cur},
		{"report", "--format", "markdown", "--baseline", base, cur},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 && code != 1 {
			t.Fatalf("gavel %v: exit %d: %s", args, code, stderr)
		}
		if strings.Contains(stdout, "&gt;") || strings.Contains(stdout, "->") {
			t.Errorf("gavel %v escapes or spells its arrows as ASCII:\n%s", args, stdout)
		}
		for _, want := range wants {
			if !strings.Contains(stdout, want) {
				t.Errorf("gavel %v lacks %q:\n%s", args, want, stdout)
			}
		}
	}
	// Text keeps ASCII arrows.
	if _, stdout, _ := runCLI(t, "diff", base, cur); !strings.Contains(stdout, "pass->fail") || strings.Contains(stdout, "→") {
		t.Errorf("gavel diff (text):\n%s", stdout)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "html"}, `unknown format "html"`},
		{[]string{"--json", "--markdown"}, "--json and --markdown contradict each other"},
		{[]string{"--format", "text", "--json"}, "--json and --format text contradict each other"},
	} {
		code, _, stderr := runCLI(t, append(append([]string{"diff"}, tt.args...), base, cur)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("gavel diff %v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}
