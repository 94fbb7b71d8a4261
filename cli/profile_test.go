package cli

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestGradeProfiles checks that --cpuprofile and --memprofile write pprof
// profiles (gzipped protocol buffers) whatever the run's outcome, and that
// an unwritable profile path is a usage error before anything is graded.
func TestGradeProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	code, _, stderr := runCLI(t, "grade", "--quiet", "--out", filepath.Join(dir, "out"),
		"--cpuprofile", cpu, "--memprofile", mem, badRows)
	if code != 3 {
		t.Fatalf("grade exit status = %d, want 3 (bad rows); stderr:\n%s", code, stderr)
	}
	for _, p := range []string{cpu, mem} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("profile not written: %v", err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s is not a gzipped pprof profile: %v", filepath.Base(p), err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil || len(raw) == 0 {
			t.Fatalf("%s: %d bytes after gzip, err %v; want a profile", filepath.Base(p), len(raw), err)
		}
	}

	code, _, stderr = runCLI(t, "grade", "--quiet", "--out", filepath.Join(dir, "out2"),
		"--cpuprofile", filepath.Join(dir, "missing", "cpu.pprof"), badRows)
	if code != 2 {
		t.Fatalf("grade with an unwritable --cpuprofile: exit status %d, want 2; stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out2")); !os.IsNotExist(err) {
		t.Errorf("grade with an unwritable --cpuprofile wrote %s (err %v); want nothing written", "out2", err)
	}
}
