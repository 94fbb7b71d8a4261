package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignal runs gavel grade on standard input held open, so that
// the run is under way and cannot finish its drain: the reader waits for
// rows that do not come. A first signal starts the drain, which ends once
// the reader is given a row, with 128 + the signal's number and the advice
// to --resume; a second signal ends the process at once, with that status
// and nothing more, although the reader still waits.
func TestSecondSignal(t *testing.T) {
	for _, tt := range []struct {
		name  string
		sig   syscall.Signal
		twice bool
		code  int
	}{
		{"SIGINT drains", syscall.SIGINT, false, 130},
		{"SIGTERM drains", syscall.SIGTERM, false, 143},
		{"SIGINT twice", syscall.SIGINT, true, 130},
		{"SIGTERM twice", syscall.SIGTERM, true, 143},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd, stderr := gavelCmd(t, dir, "grade", "--quiet", "--batch-size", "1", "--out", "out", "-")
			stdin, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmd.Stdin = stdin
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stdin.Close()
			exited := make(chan error, 1)
			done := make(chan struct{})
			go func() { exited <- cmd.Wait(); close(done) }()
			defer func() {
				select {
				case <-done:
				default:
					cmd.Process.Kill()
					<-done
				}
			}()
			if _, err := w.WriteString(`{"rollout_id":"r1","task_id":"TASK-004","output":"12"}` + "\n"); err != nil {
				t.Fatal(err)
			}
			// The manifest is written once the run has started, after the
			// signals are caught.
			deadline := time.Now().Add(2 * time.Minute)
			for !fileExists(filepath.Join(dir, "out", "manifest.json")) {
				select {
				case err := <-exited:
					t.Fatalf("gavel exited before its manifest was written: %v\n%s", err, stderr)
				case <-time.After(5 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					<-done
					t.Fatalf("no manifest after 2 minutes\n%s", stderr)
				}
			}
			// The reader must be waiting on standard input, else it could
			// see the cancellation between two reads and the drain end.
			waitReadingStdin(t, cmd.Process.Pid)
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			// Two signals of one kind sent before the first is handled are
			// one signal (the kernel does not queue them): the second is
			// sent again until the process ends. A drain ends when the
			// reader, given a row (a batch), finds the run cancelled; rows
			// are given until it does, and standard input never ends, so
			// the run cannot complete instead.
			again := time.NewTicker(500 * time.Millisecond)
			defer again.Stop()
			limit := time.After(time.Minute)
		wait:
			for i := 0; ; i++ {
				if tt.twice {
					cmd.Process.Signal(tt.sig)
				} else {
					fmt.Fprintf(w, `{"rollout_id":"r%d","task_id":"TASK-004","output":"12"}`+"\n", i+2)
				}
				select {
				case err := <-exited:
					if code := exitCodeOf(err); code != tt.code {
						t.Errorf("exit %d, want %d\n%s", code, tt.code, stderr)
					}
					break wait
				case <-again.C:
				case <-limit:
					cmd.Process.Kill()
					<-done
					t.Fatalf("gavel still running a minute after the signal (standard input open: %v)\n%s", tt.twice, stderr)
				}
			}
			drained := strings.Contains(stderr.String(), "--resume")
			if drained == tt.twice {
				t.Errorf("stderr %q: want the advice to --resume only after a drain", stderr)
			}
		})
	}
}

// waitReadingStdin waits (a minute at most) until a thread of process pid
// is blocked in read(2) on file descriptor 0, as /proc/PID/task/*/syscall
// says (where the architecture's read number is known).
func waitReadingStdin(t *testing.T, pid int) {
	t.Helper()
	var prefix string
	switch runtime.GOARCH {
	case "amd64":
		prefix = "0 0x0 "
	case "arm64":
		prefix = "63 0x0 "
	default:
		return
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
		for _, f := range tasks {
			if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), prefix) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("gavel (pid %d) not reading standard input after a minute", pid)
}
