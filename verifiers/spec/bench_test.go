package spec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// ver002Rollouts generates a CRM dataset of n rollouts drawing on worlds
// initial states per task and returns its TASK-002 rollouts, parsed.
func ver002Rollouts(tb testing.TB, n, worlds int) []*verifiers.Rollout {
	tb.Helper()
	var data bytes.Buffer
	cfg := gen.Config{Rollouts: n, Seed: 7, Format: columnar.DatasetJSONL, WorldsPerTask: worlds}
	if _, err := gen.Generate(context.Background(), cfg, gen.Outputs{Data: &data}); err != nil {
		tb.Fatal(err)
	}
	var out []*verifiers.Rollout
	initials := jsonview.NewCache(0) // as the pipeline shares repeated initial states
	sc := bufio.NewScanner(&data)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var row struct {
			Task    string          `json:"task_id"`
			Final   json.RawMessage `json:"final_state"`
			Initial json.RawMessage `json:"initial_state"`
			Output  string          `json:"output"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			tb.Fatal(err)
		}
		if row.Task != "TASK-002" {
			continue
		}
		r := &verifiers.Rollout{TaskID: row.Task, Output: row.Output}
		r.Final = parseOwned(tb, row.Final)
		var err error
		if r.Initial, _, err = initials.Parse(new(jsonview.Doc), row.Initial); err != nil {
			tb.Fatal(err)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		tb.Fatal("no TASK-002 rollouts generated")
	}
	return out
}

func parseOwned(tb testing.TB, text []byte) jsonview.Value {
	if len(text) == 0 || string(text) == "null" {
		return jsonview.Value{}
	}
	d := new(jsonview.Doc)
	v, err := d.Parse(text)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// ver002Specs are VER-002 written as specs: with CEL only, and with CEL
// and let bindings.
var ver002Specs = []struct{ name, file string }{
	{"impl=spec-cel", "testdata/ver002.yaml"},
	{"impl=spec-let", "testdata/ver002_let.yaml"},
}

// ver002Go returns the Go VER-002.
func ver002Go(tb testing.TB) *verifiers.Verifier {
	for _, v := range crm.Verifiers() {
		if v.ID == "VER-002" {
			return v
		}
	}
	tb.Fatal("no VER-002 built in")
	return nil
}

// loadSpec loads the one verifier of a spec file.
func loadSpec(tb testing.TB, file string) *verifiers.Verifier {
	text, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	vs, err := Parse(file, text)
	if err != nil {
		tb.Fatal(err)
	}
	return vs[0]
}

// The spec version of VER-002 grades every generated rollout exactly as the
// Go version does: same checks, statuses and details.
func TestVER002SpecAgreesWithGo(t *testing.T) {
	rs := ver002Rollouts(t, 600, 12)
	for _, sp := range ver002Specs {
		t.Run(sp.name, func(t *testing.T) {
			agree(t, ver002Go(t), loadSpec(t, sp.file), rs)
		})
	}
}

func agree(t *testing.T, goV, specV *verifiers.Verifier, rs []*verifiers.Rollout) {
	statuses := map[string]int{}
	for i, r := range rs {
		var a, b verifiers.Checks
		if err := goV.Grade(r, &a); err != nil {
			t.Fatal(err)
		}
		if err := specV.Grade(r, &b); err != nil {
			t.Fatal(err)
		}
		ga, gb := a.List(), b.List()
		if len(ga) != len(gb) {
			t.Fatalf("rollout %d: %d checks, spec %d", i, len(ga), len(gb))
		}
		for j := range ga {
			if ga[j].ID != gb[j].ID || ga[j].Status != gb[j].Status || ga[j].Detail != gb[j].Detail || ga[j].Required != gb[j].Required {
				t.Fatalf("rollout %d check %d: go %+v, spec %+v", i, j, ga[j], gb[j])
			}
			statuses[ga[j].Status.String()]++
		}
	}
	if statuses["pass"] == 0 || statuses["fail"] == 0 {
		t.Errorf("statuses %v: want both passes and failures", statuses)
	}
}

// BenchmarkVER002 grades the same generated TASK-002 rollouts with the Go
// VER-002 and with VER-002 written as a spec (CEL), in one run.
func BenchmarkVER002(b *testing.B) {
	rs := ver002Rollouts(b, 4000, 64)
	type impl struct {
		name string
		v    *verifiers.Verifier
	}
	impls := []impl{{"impl=go", ver002Go(b)}}
	for _, sp := range ver002Specs {
		impls = append(impls, impl{sp.name, loadSpec(b, sp.file)})
	}
	for _, bc := range impls {
		b.Run(bc.name, func(b *testing.B) {
			var c verifiers.Checks
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.Reset()
				if err := bc.v.Grade(rs[i%len(rs)], &c); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rollouts/s")
		})
	}
}
