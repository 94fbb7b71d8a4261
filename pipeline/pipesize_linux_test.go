package pipeline

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// fGetPipeSize is Linux's F_GETPIPE_SZ.
const fGetPipeSize = 1032

// TestGrowPipe checks that reading standard input from a pipe asks for a
// 1 MiB pipe buffer, and that a file is left alone.
func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	size := func() int {
		n, _, errno := syscall.Syscall(syscall.SYS_FCNTL, r.Fd(), fGetPipeSize, 0)
		if errno != 0 {
			t.Fatal(errno)
		}
		return int(n)
	}
	if size() >= 1<<20 {
		t.Skipf("pipes start at %d bytes here", size())
	}
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil && os.Geteuid() != 0 {
		if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && max < 1<<20 {
			t.Skipf("pipe-max-size is %d bytes here", max)
		}
	}
	newStopReader(r).stop()
	if got := size(); got != 1<<20 {
		t.Errorf("pipe buffer %d bytes after newStopReader, want %d", got, 1<<20)
	}
	f, err := os.CreateTemp(t.TempDir(), "in")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f) // not a pipe: nothing to do, no failure
}
