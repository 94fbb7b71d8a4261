package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReportCLI writes the report of a graded run, alone and against a
// baseline where three rollouts passed, as HTML and Markdown.
func TestReportCLI(t *testing.T) {
	input, base, cur := gradedPair(t)
	flipped := t.TempDir()
	if code, _, stderr := runCLI(t, "grade", "--quiet", "--format", "jsonl", "--out", flipped, input); code != 0 && code != 3 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	flipToPassed(t, flipped, 3)
	page := filepath.Join(t.TempDir(), "sub", "report.html")
	tests := []struct {
		name   string
		args   []string
		want   int
		stdout []string
		stderr string
	}{
		{"html", []string{"report", cur}, 0, []string{"<!DOCTYPE html>", `<section id="summary">`, `<section id="most-failed">`, `<section id="errors">`, "VER-003"}, ""},
		{"markdown against a baseline", []string{"report", "--format", "markdown", "--baseline", flipped, cur}, 0,
			[]string{"## Summary", "## Most failed checks", "## Error kinds", "**3 regressions**", "(regression)"}, ""},
		{"to a file", []string{"report", "--baseline", base, "--out", page, cur}, 0, nil, "wrote " + page},
		{"no directory", []string{"report"}, 2, nil, "one result directory"},
		{"bad format", []string{"report", "--format", "pdf", cur}, 2, nil, "unknown format"},
		{"not results", []string{"report", t.TempDir()}, 2, nil, "not a result directory"},
		{"baseline not results", []string{"report", "--baseline", t.TempDir(), cur}, 2, nil, "not a result directory"},
		{"bad top", []string{"report", "--top", "0", cur}, 2, nil, "--top"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			ok := code == tt.want && strings.Contains(stderr, tt.stderr)
			for _, s := range tt.stdout {
				ok = ok && strings.Contains(stdout, s)
			}
			if !ok {
				t.Errorf("gavel %v: exit %d, want %d\nstdout: %.2000s\nstderr: %s", tt.args, code, tt.want, stdout, stderr)
			}
		})
	}
	if html := mustRead(t, page); !strings.Contains(html, `<section id="baseline">`) || !strings.Contains(html, "0 regressions") {
		t.Errorf("report file lacks the baseline section:\n%.3000s", html)
	}
}
