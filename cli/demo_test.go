package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeDemoStatus runs the Makefile's demo target with a stand-in for
// gavel that exits with a chosen status: the closing line names it.
func TestMakeDemoStatus(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	fake := writeFile(t, filepath.Join(dir, "gavel"), "#!/bin/sh\n[ \"$1\" = grade ] && exit $FAKE_STATUS\nexit 0\n")
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs(filepath.Join(".."))
	tests := []struct {
		status string
		want   string
		fails  bool
	}{
		{"0", "gavel grade exited with status 0: every row graded, none with status error", false},
		{"3", "gavel grade exited with status 3: some rows have status error, as the demo data asks", false},
		{"1", "gavel grade exited with status 1: the demo failed", true},
	}
	for _, tt := range tests {
		t.Run("status "+tt.status, func(t *testing.T) {
			cmd := exec.Command("make", "-s", "-C", root, "demo", "GO=true", "BIN="+fake, "DEMO="+filepath.Join(dir, "demo"))
			cmd.Env = append(os.Environ(), "FAKE_STATUS="+tt.status, "MAKEFLAGS=")
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			err := cmd.Run()
			if (err != nil) != tt.fails {
				t.Errorf("make demo: %v, want failure %v", err, tt.fails)
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, tt.want) {
				t.Errorf("make demo's last line %q, want %q", last, tt.want)
			}
		})
	}
}
