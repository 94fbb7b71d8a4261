package cli

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// TestGradeStreamMemory grades 200,000 rollouts piped in as an Arrow IPC
// stream and read back as they come, and checks that the peak resident
// memory does not grow with the stream's length: it stays within a
// margin of that of a stream ten times shorter.
func TestGradeStreamMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("grades 200,000 rollouts")
	}
	dir := t.TempDir()
	// Calendar rollouts: small states, so that the pipe carries 200,000
	// of them quickly.
	jsonl := filepath.Join(dir, "calendar.jsonl")
	if code, _, stderr := runCLI(t, "gen", "--quiet", "--env", "calendar", "--out", jsonl, "--rollouts", "2000"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	batches := loadRolloutBatches(t, jsonl, 250)
	peak := func(repeat int) int64 {
		g := startStreaming(t, "--batch-size", "512", "-")
		go func() {
			w := ipc.NewWriter(g.stdin, ipc.WithSchema(batches.schema))
		send:
			for range repeat {
				for _, r := range batches.recs {
					if w.Write(r) != nil {
						break send
					}
				}
			}
			w.Close()
			g.stdin.Close()
		}()
		rows := 0
		within(t, "the rewards", func() {
			rd, err := ipc.NewReader(g.stdout)
			if err != nil {
				t.Error(err)
				return
			}
			defer rd.Release()
			for rd.Next() {
				rows += int(rd.RecordBatch().NumRows())
			}
			if err := rd.Err(); err != nil {
				t.Error(err)
			}
		})
		if code := g.wait(t); code != 0 || rows != repeat*batches.rows {
			t.Fatalf("exit %d, %d rows; want 0, %d\nstderr: %s", code, rows, repeat*batches.rows, g.stderr.String())
		}
		return g.cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
	}
	short, long := peak(10), peak(100)
	t.Logf("peak resident memory: %d KiB for 20,000 rollouts, %d KiB for 200,000", short, long)
	if long > short+32<<10 {
		t.Errorf("peak resident memory %d KiB for 200,000 rollouts, %d KiB for 20,000: it grows with the stream", long, short)
	}
}
