package s3test_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// TestGradeGlobURL grades a glob URL with a "?" wildcard and bucket
// options: the run reads exactly the matching objects, in key order, and
// records them by their URLs without the options.
func TestGradeGlobURL(t *testing.T) {
	srv := start(t)
	jl := filepath.Join("..", "..", "testdata", "badrows", "input.jsonl")
	for _, k := range []string{"in/shard-1.jsonl", "in/shard-0.jsonl", "in/shard-10.jsonl", "in/sub/shard-2.jsonl", "in/shard-3.txt"} {
		put(t, srv, k, jl)
	}
	out := filepath.Join(t.TempDir(), "out")
	cfg := pipeline.Config{Inputs: []string{"s3://b/in/shard-?.jsonl?region=us-east-1"}, Out: out, Workers: 2, Verifiers: crm.Verifiers()}
	if _, err := pipeline.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Inputs []struct{ Path string }
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range m.Inputs {
		got = append(got, in.Path)
	}
	want := []string{"s3://b/in/shard-0.jsonl", "s3://b/in/shard-1.jsonl"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inputs of the run (-want +got):\n%s", diff)
	}

	// A glob matching nothing is a configuration error naming it as given.
	_, _, err = inputs.Inputs([]string{"s3://b/in/shard-?.parquet"}, "")
	var ce *inputs.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "input s3://b/in/shard-?.parquet: ") {
		t.Errorf("Inputs(s3://b/in/shard-?.parquet) = %v, want a ConfigError naming the glob", err)
	}
}
