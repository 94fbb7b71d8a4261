package jsonview_test

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/gen"
)

// uniqueWorldStates returns the initial and final states, as JSON text,
// of the rollouts `gavel gen --unique-worlds --tasks TASK-002,TASK-004
// --seed 1 --rollouts N` writes.
func uniqueWorldStates(tb testing.TB, rollouts int) [][]byte {
	tb.Helper()
	var out bytes.Buffer
	cfg := gen.Config{
		Format: columnar.DatasetJSONL, Rollouts: rollouts, Seed: 1,
		UniqueWorlds: true, Tasks: []string{"TASK-002", "TASK-004"},
	}
	if _, err := gen.Generate(context.Background(), cfg, gen.Outputs{Data: &out}); err != nil {
		tb.Fatal(err)
	}
	var states [][]byte
	var d jsonview.Doc
	for line := range bytes.Lines(out.Bytes()) {
		row, err := d.Parse(line)
		if err != nil {
			tb.Fatal(err)
		}
		for _, col := range []string{"initial_state", "final_state"} {
			switch v := row.Get(col); v.Kind() {
			case jsonview.Object:
				states = append(states, slices.Clone(v.Raw()))
			case jsonview.String:
				s, _ := v.Str()
				states = append(states, slices.Clone(s))
			}
		}
	}
	if len(states) == 0 {
		tb.Fatal("no states generated")
	}
	return states
}

// reportRate reports the bytes read per second of one goroutine, in GB/s.
func reportRate(b *testing.B, bytes int) {
	b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

func totalBytes(states [][]byte) int {
	n := 0
	for _, s := range states {
		n += len(s)
	}
	return n
}

// BenchmarkStage1 times stage 1 alone on unique-world states, on each
// stage 1 of this build.
func BenchmarkStage1(b *testing.B) {
	states := uniqueWorldStates(b, 200)
	total := totalBytes(states)
	paths := jsonview.Stage1Paths()
	names := make([]string, 0, len(paths))
	for name := range paths {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		stage1 := paths[name]
		b.Run(name, func(b *testing.B) {
			var marks []uint64
			b.SetBytes(int64(total))
			for b.Loop() {
				for _, s := range states {
					marks = slices.Grow(marks[:0], jsonview.MarksLen(len(s)))[:jsonview.MarksLen(len(s))]
					if !stage1(s, marks) {
						b.Fatal("stage 1 refused a state")
					}
				}
			}
			reportRate(b, total)
		})
	}
}

// BenchmarkDocParse times Doc.Parse on unique-world states: in two
// stages with the vector stage 1 Parse uses (AVX-512 where the CPU has
// it, else AVX2) and with the portable one, and on the scalar parser
// alone, which Parse was before the two stages.
func BenchmarkDocParse(b *testing.B) {
	states := uniqueWorldStates(b, 200)
	total := totalBytes(states)
	b.Logf("%d states, %d bytes on average", len(states), total/len(states))
	for _, path := range []string{"vector", "portable", "scalar"} {
		b.Run(path, func(b *testing.B) {
			if path == "vector" && len(jsonview.Stage1Paths()) == 1 {
				b.Skip("no vector stage 1 in this build")
			}
			defer jsonview.UseVector(jsonview.UseVector(path == "vector"))
			parse := (*jsonview.Doc).Parse
			if path == "scalar" {
				parse = (*jsonview.Doc).ParseScalar
			}
			var d jsonview.Doc
			b.SetBytes(int64(total))
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range states {
					if _, err := parse(&d, s); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportRate(b, total)
		})
	}
}
