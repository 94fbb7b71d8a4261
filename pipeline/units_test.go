package pipeline

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/results"
)

// totalProgress keeps the total it is given, which it asks for as the
// progress bar does.
type totalProgress struct{ total int64 }

func (p *totalProgress) SetTotal(total int64) { p.total = total }
func (p *totalProgress) Add(int)              {}
func (p *totalProgress) Finish()              {}

// TestInputOpens counts the opens of each input file while a run is
// prepared and graded. The bound: planning (the input's format, its units,
// its columns for the default --keep, the row total for the progress
// display) opens a file once, through its description, and reading opens
// it once per unit this process reads: 1 + units read. A resumed run with
// nothing left to read opens each file once.
func TestInputOpens(t *testing.T) {
	dir := t.TempDir()
	pq := filepath.Join(dir, "a.parquet")
	genFile(t, pq, 300, 20) // 15 row groups: 4 units of at most 4
	jl := filepath.Join(dir, "b.jsonl.zst")
	genFile(t, jl, 40, 0)
	var mu sync.Mutex
	opens := map[string]int{}
	open := func(name string) (columnar.File, error) {
		mu.Lock()
		opens[name]++
		mu.Unlock()
		return os.Open(name)
	}
	tests := []struct {
		name   string
		shard  inputs.Shard
		resume bool // grade into the previous case's output
		want   map[string]int
		total  int64 // of the progress display
	}{
		{"shard 0/2", inputs.Shard{Index: 0, Count: 2}, false, map[string]int{pq: 1 + 2, jl: 1 + 1}, -1}, // units 0, 2 and 4
		{"shard 1/2", inputs.Shard{Index: 1, Count: 2}, false, map[string]int{pq: 1 + 2, jl: 1}, 140},    // units 1 and 3
		{"whole run", inputs.Shard{}, false, map[string]int{pq: 1 + 4, jl: 1 + 1}, -1},
		{"resumed when done", inputs.Shard{}, true, map[string]int{pq: 1, jl: 1}, 0},
	}
	out := filepath.Join(dir, "out")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.resume {
				os.RemoveAll(out)
			}
			clear(opens)
			progress := &totalProgress{total: -2} // -2: SetTotal not called
			grade(t, Config{Inputs: []string{pq, jl}, Out: out, RowGroupsPerUnit: 4, Shard: tt.shard, Resume: tt.resume, Progress: progress, open: open})
			if diff := cmp.Diff(tt.want, opens); diff != "" {
				t.Errorf("opens by file (-want +got):\n%s", diff)
			}
			if progress.total != tt.total {
				t.Errorf("progress total %d, want %d", progress.total, tt.total)
			}
		})
	}
	m, err := results.ReadManifest(filepath.Join(out, results.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Inputs) != 5 {
		t.Errorf("%d units, want 5 (4 of the Parquet file, 1 of the JSON Lines)", len(m.Inputs))
	}
}
