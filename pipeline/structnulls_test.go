package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// unionSpec counts the members of objects keyed by id, as the CRM
// verifiers do: a state that gained the other rows' records as null
// members fails them.
const unionSpec = `verifiers:
  - id: ITEMS
    tasks: [T1, T2]
    name: One item, untagged; one argument per call; one item to start from
    checks:
      - {id: one-item, type: expr, expr: 'size(final.items) == 1'}
      - {id: untagged, type: expr, expr: 'final.items.all(k, !has(final.items[k].tag))'}
      - {id: one-arg, type: expr, expr: 'log.all(e, size(e.args) == 1)'}
      - {id: one-initial, type: expr, expr: 'size(initial.items) == 1'}
`

// unionRows are rollouts whose objects have other members from row to
// row, each written in the order of the union of their members (the
// order a struct inferred from them has), so that the nested rows have
// the same input hashes too.
var unionRows = []string{
	`{"rollout_id":"a","task_id":"T1","final_state":{"items":{"A":{"id":"A","n":1}}},"log":[{"tool":"add","args":{"id":"A"}}],"model":"m1"}`,
	`{"rollout_id":"b","task_id":"T2","final_state":{"items":{"B":{"id":"B","n":2,"tag":"x"}}},"log":[{"tool":"tag","args":{"id":"B","tag":"x"}}],"model":"m2"}`,
	`{"rollout_id":"c","task_id":"T1","final_state":{"items":{"A":{"id":"A","n":1},"B":{"id":"B","n":2}}},"log":[],"model":"m1"}`,
	`{"rollout_id":"d","task_id":"T2","final_state":{"items":{}},"log":[{"tool":"list","args":{}}]}`,
	`{"rollout_id":"e","task_id":"T1","final_state":null,"log":[{"tool":"add","args":{"id":"A","tag":"y"}},{"tool":"list","args":{}}],"model":"m2"}`,
}

var unionTasks = []string{
	`{"task_id":"T1","initial_state":{"items":{"A":{"id":"A","n":0}}}}`,
	`{"task_id":"T2","initial_state":{"items":{"B":{"id":"B","n":0,"tag":"z"}}}}`,
}

// unionSchemas are the types pyarrow.json.read_json infers from
// unionRows and unionTasks: structs of the union of the members.
func unionSchemas() (rows, tasks *arrow.Schema) {
	f := func(name string, dt arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: true}
	}
	str := arrow.BinaryTypes.String
	item := arrow.StructOf(f("id", str), f("n", arrow.PrimitiveTypes.Int64), f("tag", str))
	state := arrow.StructOf(f("items", arrow.StructOf(f("A", item), f("B", item))))
	event := arrow.StructOf(f("tool", str), f("args", arrow.StructOf(f("id", str), f("tag", str))))
	rows = arrow.NewSchema([]arrow.Field{f("rollout_id", str), f("task_id", str), f("final_state", state), f("log", arrow.ListOf(event)), f("model", str)}, nil)
	tasks = arrow.NewSchema([]arrow.Field{f("task_id", str), f("initial_state", state)}, nil)
	return rows, tasks
}

// writeUnion writes lines as JSON Lines, and as Parquet and Arrow IPC
// files of schema, under dir with names base.*; it returns the three
// paths.
func writeUnion(t *testing.T, dir, base string, schema *arrow.Schema, lines []string) (jsonl, pq, arrowPath string) {
	t.Helper()
	jsonl = filepath.Join(dir, base+".jsonl")
	if err := os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader("["+strings.Join(lines, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	pq = filepath.Join(dir, base+".parquet")
	f, err := os.Create(pq)
	if err != nil {
		t.Fatal(err)
	}
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	// WriteTable closes f.
	if err := pqarrow.WriteTable(tbl, f, 2, parquet.NewWriterProperties(parquet.WithAllocator(mem)), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	arrowPath = filepath.Join(dir, base+".arrow")
	if err := os.WriteFile(arrowPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return jsonl, pq, arrowPath
}

// sourceFile matches the source_file member of a result line.
var sourceFile = regexp.MustCompile(`"source_file":"[^"]*",`)

// resultLines returns the rewards and checks lines a jsonl run wrote into
// out, their source_file left out.
func resultLines(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, sub := range []string{"rewards", "checks"} {
		files, err := filepath.Glob(filepath.Join(out, sub, "part-*.jsonl"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s parts in %s", sub, out)
		}
		var all []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, sourceFile.ReplaceAllString(string(b), ""))
		}
		got[sub] = strings.Join(all, "")
	}
	return got
}

// TestStructNullsAbsent grades rollouts and a tasks table written as
// JSON Lines and as Parquet and Arrow files of the structs inferred from
// them: with StructNulls absent, the rewards and checks are the JSON
// Lines run's byte for byte (source_file aside; input_hash included),
// whatever the workers and the reader of nested Parquet columns; with the
// default, the states hold the other rows' records as null members and
// the verdicts differ. A run cannot be resumed with the other setting.
func TestStructNullsAbsent(t *testing.T) {
	vs, err := spec.Parse("union.yaml", []byte(unionSpec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rowSchema, taskSchema := unionSchemas()
	jsonl, pq, arrowPath := writeUnion(t, dir, "rows", rowSchema, unionRows)
	tasksJSONL, tasksPQ, _ := writeUnion(t, dir, "tasks", taskSchema, unionTasks)
	run := func(name string, cfg Config) map[string]string {
		t.Helper()
		cfg.Out, cfg.Format, cfg.Verifiers, cfg.BatchSize = filepath.Join(dir, name), columnar.FormatJSONL, vs, 2
		grade(t, cfg)
		return resultLines(t, cfg.Out)
	}
	want := run("jsonl", Config{Inputs: []string{jsonl}, TasksFile: tasksJSONL, Workers: 1})
	if !strings.Contains(want["rewards"], `"status":"passed"`) || !strings.Contains(want["rewards"], `"status":"failed"`) {
		t.Fatalf("the JSON Lines rows should pass and fail:\n%s", want["rewards"])
	}
	for _, in := range []string{pq, arrowPath} {
		for _, pqarrowPath := range []string{"", "1"} {
			for _, workers := range []int{1, 3} {
				t.Setenv("GAVEL_NESTED_PQARROW", pqarrowPath)
				name := fmt.Sprintf("%s-%s-%d", filepath.Ext(in)[1:], pqarrowPath, workers)
				got := run(name, Config{Inputs: []string{in}, TasksFile: tasksPQ, Workers: workers, StructNulls: columnar.StructNullsAbsent})
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s, GAVEL_NESTED_PQARROW=%q, %d workers, struct nulls absent: results differ from JSON Lines (-jsonl +nested):\n%s", filepath.Base(in), pqarrowPath, workers, diff)
				}
			}
		}
	}
	t.Setenv("GAVEL_NESTED_PQARROW", "")
	member := run("member", Config{Inputs: []string{pq}, TasksFile: tasksPQ})
	if member["rewards"] == want["rewards"] {
		t.Error("with null struct fields as members, the rewards are the JSON Lines ones: the rows lack the union's members")
	}
	if strings.Contains(member["rewards"], `"status":"passed"`) {
		t.Errorf("with null struct fields as members no row should pass (every state has both records):\n%s", member["rewards"])
	}

	// A run is resumed only with the struct nulls it was started with.
	_, err = Run(context.Background(), Config{Inputs: []string{pq}, TasksFile: tasksPQ, Out: filepath.Join(dir, "member"), Format: columnar.FormatJSONL,
		Verifiers: vs, BatchSize: 2, Resume: true, StructNulls: columnar.StructNullsAbsent})
	var ce *inputs.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "struct nulls: member there, absent given") {
		t.Errorf("resume with other struct nulls: %v, want a configuration error naming them", err)
	}
}
