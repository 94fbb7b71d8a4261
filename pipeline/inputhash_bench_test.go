package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/verifiers"
)

// BenchmarkInputHash measures the input hash of generated CRM rollouts as
// a grading worker computes it, on rollouts already decoded: shared=true
// finds each initial state in the run's cache (its hash is kept), as in a
// run; shared=false scans every initial state again. It reports ns and
// bytes of input per rollout, beside two peers: XXH64 of the same bytes as
// they are, and the index of the final state that grading builds anyway.
func BenchmarkInputHash(b *testing.B) {
	var data bytes.Buffer
	if _, err := gen.Generate(context.Background(), gen.Config{Rollouts: 2000, Seed: 3, Format: columnar.DatasetJSONL}, gen.Outputs{Data: &data}); err != nil {
		b.Fatal(err)
	}
	type hashInput struct {
		r       verifiers.Rollout
		initial jsonview.Value
	}
	var rows []hashInput
	var inputBytes int
	shared := map[string]jsonview.Value{} // each initial text indexed once, as the cache does
	parse := func(text []byte) jsonview.Value {
		if len(text) == 0 || string(text) == "null" {
			return jsonview.Value{}
		}
		v, err := new(jsonview.Doc).Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	sc := bufio.NewScanner(&data)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			b.Fatal(err)
		}
		var in hashInput
		if _, ok := shared[string(f["initial_state"])]; !ok {
			shared[string(f["initial_state"])] = parse(f["initial_state"])
		}
		in.initial = shared[string(f["initial_state"])]
		in.r.Initial = in.initial
		in.r.Final = parse(f["final_state"])
		in.r.Log = parse(f["log"])
		json.Unmarshal(f["task_id"], &in.r.TaskID)
		json.Unmarshal(f["output"], &in.r.Output)
		meta := []byte{'{'}
		for _, k := range []string{"model", "run_id", "sample"} {
			if v, ok := f[k]; ok {
				if len(meta) > 1 {
					meta = append(meta, ',')
				}
				meta = append(meta, `"`+k+`":`...)
				meta = append(meta, v...)
			}
		}
		in.r.Meta = parse(append(meta, '}'))
		inputBytes += len(sc.Bytes())
		rows = append(rows, in)
	}
	// Peers in the same run: XXH64 of the same fields' bytes as they are
	// (the floor: no scan for whitespace), and indexing the final state
	// with jsonview, which grading does for every rollout.
	b.Run("peer=xxhash-raw", func(b *testing.B) {
		b.SetBytes(int64(inputBytes / len(rows)))
		b.ReportAllocs()
		var sink uint64
		for i := 0; b.Loop(); i++ {
			in := &rows[i%len(rows)]
			for _, v := range []jsonview.Value{in.initial, in.r.Final, in.r.Log, in.r.Meta} {
				sink ^= xxhash.Sum64(v.Raw())
			}
		}
		_ = sink
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/rollout")
	})
	b.Run("peer=parse-final", func(b *testing.B) {
		b.SetBytes(int64(inputBytes / len(rows)))
		b.ReportAllocs()
		var doc jsonview.Doc
		for i := 0; b.Loop(); i++ {
			if _, err := doc.Parse(rows[i%len(rows)].r.Final.Raw()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/rollout")
	})
	for _, cached := range []bool{true, false} {
		name := "shared=false"
		if cached {
			name = "shared=true"
		}
		b.Run(name, func(b *testing.B) {
			var h inputs.InputHasher
			b.SetBytes(int64(inputBytes / len(rows)))
			b.ReportAllocs()
			var sink uint64
			for i := 0; b.Loop(); i++ {
				in := &rows[i%len(rows)]
				sink ^= h.Sum(&in.r, in.initial, cached, nil)
			}
			_ = sink
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/rollout")
		})
	}
}
