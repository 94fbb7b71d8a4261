package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gavelhq/gavel/inputs"
)

// fGetPipeSize is Linux's F_GETPIPE_SZ.
const fGetPipeSize = 1032

// TestGrowPipe checks that a run reading standard input from a pipe asks
// for a 1 MiB pipe buffer, that a run not reading it leaves its pipe alone,
// and that a file is left alone.
func TestGrowPipe(t *testing.T) {
	pipe := func() (*os.File, func() int) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.Close() // standard input ends at once
		t.Cleanup(func() { r.Close() })
		return r, func() int {
			n, _, errno := syscall.Syscall(syscall.SYS_FCNTL, r.Fd(), fGetPipeSize, 0)
			if errno != 0 {
				t.Fatal(errno)
			}
			return int(n)
		}
	}
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil && os.Geteuid() != 0 {
		if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && max < 1<<20 {
			t.Skipf("pipe-max-size is %d bytes here", max)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "r.jsonl")
	if err := os.WriteFile(file, []byte(`{"rollout_id": "a", "task_id": "TASK-001"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r, size := pipe()
	start := size()
	if start >= 1<<20 {
		t.Skipf("pipes start at %d bytes here", start)
	}
	Run(context.Background(), Config{Inputs: []string{file}, Out: filepath.Join(dir, "file"), Stdin: r})
	if got := size(); got != start {
		t.Errorf("pipe buffer %d bytes after a run that does not read standard input, want %d", got, start)
	}

	r, size = pipe()
	Run(context.Background(), Config{Inputs: []string{inputs.Stdin}, Out: filepath.Join(dir, "stdin"), Stdin: r})
	if got := size(); got != 1<<20 {
		t.Errorf("pipe buffer %d bytes after a run reading standard input, want %d", got, 1<<20)
	}

	f, err := os.CreateTemp(dir, "in")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inputs.GrowPipe(f) // not a pipe: nothing to do, no failure
}
