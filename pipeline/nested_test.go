package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// chatSchema is the shape chat datasets are published in: messages as a
// list of structs, tool calls a list of structs inside them.
var chatSchema = func() *arrow.Schema {
	str := func(name string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	function := arrow.StructOf(str("name"), str("arguments"))
	call := arrow.StructOf(str("id"), str("type"), arrow.Field{Name: "function", Type: function, Nullable: true})
	message := arrow.StructOf(str("role"), str("content"), str("name"), str("tool_call_id"),
		arrow.Field{Name: "tool_calls", Type: arrow.ListOf(call), Nullable: true})
	return arrow.NewSchema([]arrow.Field{
		str("rollout_id"), str("task_id"), str("model"),
		{Name: "recorded_reward", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "messages", Type: arrow.ListOf(message), Nullable: true},
	}, nil)
}()

// TestChatDatasetsNested grades the chat examples from Parquet and Arrow
// files whose messages are a list of structs, with --from messages, and
// checks every rollout's status, reward and check statuses against the
// same chats read from JSON Lines.
func TestChatDatasetsNested(t *testing.T) {
	vs, err := spec.Load([]string{filepath.Join("..", "examples", "harness", "messages.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	jsonl := filepath.Join("..", "examples", "harness", "chats.jsonl")
	data, err := os.ReadFile(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	rec, _, err := array.RecordFromJSON(mem, chatSchema, bytes.NewReader(append(append([]byte("["), bytes.ReplaceAll(bytes.TrimSpace(data), []byte("\n"), []byte(","))...), ']')))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	dir := t.TempDir()
	pq := filepath.Join(dir, "chats.parquet")
	f, err := os.Create(pq)
	if err != nil {
		t.Fatal(err)
	}
	if err := pqarrow.WriteTable(array.NewTableFromRecords(chatSchema, []arrow.RecordBatch{rec}), f, 2, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	arrowPath := filepath.Join(dir, "chats.arrow")
	f, err = os.Create(arrowPath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(chatSchema))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f.Close()

	results := func(input string) map[string]any {
		out := filepath.Join(dir, "out-"+filepath.Base(input))
		grade(t, Config{Inputs: []string{input}, Out: out, Format: "jsonl", From: "messages", Verifiers: vs})
		got := map[string]any{}
		for id, r := range rewardRows(t, out) {
			got[id] = fmt.Sprint(r["status"], r["reward"], r["error"])
		}
		for id, c := range checkRows(t, out) {
			got[id] = c["status"]
		}
		return got
	}
	want := results(jsonl)
	if len(want) == 0 {
		t.Fatal("no results from the JSON Lines chats")
	}
	for _, in := range []string{pq, arrowPath} {
		if diff := cmp.Diff(want, results(in)); diff != "" {
			t.Errorf("%s graded differently from JSON Lines (-jsonl +nested):\n%s", filepath.Base(in), diff)
		}
	}
}

// TestNestedReadersSameOutputs grades generated nested datasets (unique
// and repeated worlds, bad rows among them) with nested columns read by
// parquet-go's pages and by pqarrow (GAVEL_NESTED_PQARROW), with one
// worker and two, with null struct fields as members (and, for repeated
// worlds, as absent): for each, every rewards and checks file is
// byte-identical.
func TestNestedReadersSameOutputs(t *testing.T) {
	for _, unique := range []bool{false, true} {
		dir := t.TempDir()
		data := filepath.Join(dir, "rollouts.parquet")
		cfg := gen.Config{Out: data, Rollouts: 1200, Seed: 5, BadShare: 0.05, Nested: true, UniqueWorlds: unique, RowGroupRows: 300}
		if _, err := gen.Run(context.Background(), cfg); err != nil {
			t.Fatalf("gen: %v", err)
		}
		modes := []columnar.StructNulls{columnar.StructNullsMember}
		if !unique {
			modes = append(modes, columnar.StructNullsAbsent) // initial states memoized too
		}
		for _, nulls := range modes {
			var want map[string][]byte
			for _, arrowPath := range []bool{false, true} {
				for _, workers := range []int{1, 2} {
					if arrowPath {
						t.Setenv("GAVEL_NESTED_PQARROW", "1")
					} else {
						t.Setenv("GAVEL_NESTED_PQARROW", "")
					}
					out := filepath.Join(dir, fmt.Sprintf("out-%s-%v-%d", nulls, arrowPath, workers))
					grade(t, Config{Inputs: []string{data}, Out: out, Format: columnar.FormatJSONL, Workers: workers, BatchSize: 64, StructNulls: nulls})
					got := map[string][]byte{}
					for _, sub := range []string{"rewards", "checks"} {
						files, err := filepath.Glob(filepath.Join(out, sub, "*"))
						if err != nil || len(files) == 0 {
							t.Fatalf("no %s files in %s: %v", sub, out, err)
						}
						for _, f := range files {
							b, err := os.ReadFile(f)
							if err != nil {
								t.Fatal(err)
							}
							got[sub+"/"+filepath.Base(f)] = b
						}
					}
					if want == nil {
						want = got
						continue
					}
					// bytes.Equal, not cmp.Diff: its reflection over every
					// byte took minutes under the race detector.
					if !maps.EqualFunc(want, got, bytes.Equal) {
						t.Fatalf("unique worlds %v, struct nulls %s, pqarrow %v, %d workers: outputs differ from the page reader's with one worker", unique, nulls, arrowPath, workers)
					}
				}
			}
		}
	}
}
