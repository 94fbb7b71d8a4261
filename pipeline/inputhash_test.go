package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// inputHashes grades inputs into a JSON Lines run and returns each
// rollout's input_hash by rollout id (nil for a null).
func inputHashes(t *testing.T, cfg Config) map[string]any {
	t.Helper()
	cfg.Out = filepath.Join(t.TempDir(), "out")
	cfg.Format = columnar.FormatJSONL
	grade(t, cfg)
	got := map[string]any{}
	for u := 0; ; u++ {
		path := filepath.Join(cfg.Out, "rewards", columnar.PartName(u, columnar.FormatJSONL))
		if _, err := os.Stat(path); err != nil {
			break
		}
		for _, row := range gaveltest.DecodeJSONL(t, path) {
			got[row["rollout_id"].(string)] = row["input_hash"]
		}
	}
	return got
}

// hashRollout is one rollout of TestInputHashFormats; its states are JSON
// texts, nil for a null.
type hashRollout struct {
	ID      string  `parquet:"rollout_id"`
	Task    string  `parquet:"task_id"`
	Initial *string `parquet:"initial_state,optional"`
	Final   *string `parquet:"final_state,optional"`
	Output  *string `parquet:"output,optional"`
	Log     *string `parquet:"log,optional"`
	Model   *string `parquet:"model,optional"`
}

func ptr(s string) *string { return &s }

var hashRollouts = []hashRollout{
	{ID: "r1", Task: "TASK-001", Initial: ptr(`{"opportunities": {"OPP-1": {"name": "a b", "amount": 5e4}}}`),
		Final:  ptr(`{ "opportunities" : { "OPP-1" : {"name":"a b","amount":5e4}, "OPP-2": {"name": "say \"hi\"\n"} } }`),
		Output: ptr("done"), Log: ptr(`[ {"tool": "create", "args": [1, 2.50, true, null]} ]`), Model: ptr("m1")},
	{ID: "r2", Task: "TASK-002", Initial: ptr(`{"users": {}}`), Final: ptr(`{"users": {}}`), Model: ptr("m2")},
	{ID: "r3", Task: "TASK-003", Final: ptr(`[]`), Output: ptr("")},
	{ID: "r4", Task: "TASK-999", Initial: ptr(`{"x":1}`), Final: ptr(`{"x" :1}`), Output: ptr("no verifier binds me")},
}

// jsonLine writes r as a JSON Lines line: states nested as values, or held
// in strings, with indent as the whitespace between tokens.
func jsonLine(r hashRollout, inStrings bool, indent string) string {
	var b strings.Builder
	n := 0
	member := func(k, v string) {
		if n > 0 {
			b.WriteString("," + indent)
		}
		n++
		b.WriteString(`"` + k + `":` + indent + v)
	}
	b.WriteString("{" + indent)
	member("rollout_id", `"`+r.ID+`"`)
	member("task_id", `"`+r.Task+`"`)
	state := func(k string, v *string) {
		switch {
		case v == nil:
		case inStrings:
			member(k, quote(*v))
		default:
			member(k, *v)
		}
	}
	state("initial_state", r.Initial)
	state("final_state", r.Final)
	if r.Output != nil {
		member("output", quote(*r.Output))
	}
	state("log", r.Log)
	if r.Model != nil {
		member("model", quote(*r.Model))
	}
	b.WriteString(indent + "}")
	return b.String()
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// writeArrowRollouts writes rows as an Arrow IPC file of string columns.
func writeArrowRollouts(t *testing.T, path string, rows []hashRollout) {
	t.Helper()
	names := []string{"rollout_id", "task_id", "initial_state", "final_state", "output", "log", "model"}
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range rows {
		for i, v := range []*string{&r.ID, &r.Task, r.Initial, r.Final, r.Output, r.Log, r.Model} {
			sb := b.Field(i).(*array.StringBuilder)
			if v == nil {
				sb.AppendNull()
			} else {
				sb.Append(*v)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeParquetRows[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{16}$`)

// TestInputHashFormats: the same rollouts hash the same in Parquet, Arrow
// and JSON Lines, whatever the whitespace between tokens and whether a
// state is nested or held as JSON text in a string; so do the same tasks
// given in a JSON Lines and a Parquet tasks table.
func TestInputHashFormats(t *testing.T) {
	dir := t.TempDir()
	ins := map[string]string{}
	for name, line := range map[string]func(hashRollout) string{
		"compact.jsonl":  func(r hashRollout) string { return jsonLine(r, false, "") },
		"spaced.jsonl":   func(r hashRollout) string { return jsonLine(r, false, " \t") },
		"strings.jsonl":  func(r hashRollout) string { return jsonLine(r, true, "  ") },
		"strings2.jsonl": func(r hashRollout) string { return jsonLine(r, true, "") },
	} {
		var b strings.Builder
		for _, r := range hashRollouts {
			b.WriteString(line(r) + "\n")
		}
		ins[name] = b.String()
	}
	for name, text := range ins {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeParquetRows(t, filepath.Join(dir, "rows.parquet"), hashRollouts)
	writeArrowRollouts(t, filepath.Join(dir, "rows.arrow"), hashRollouts)

	var want map[string]any
	for _, name := range []string{"compact.jsonl", "spaced.jsonl", "strings.jsonl", "strings2.jsonl", "rows.parquet", "rows.arrow"} {
		got := inputHashes(t, Config{Inputs: []string{filepath.Join(dir, name)}})
		if want == nil {
			want = got
			seen := map[any]string{}
			for id, h := range got {
				if s, ok := h.(string); !ok || !hexHash.MatchString(s) {
					t.Errorf("%s: input_hash of %s = %v, want 16 hex digits", name, id, h)
				}
				if other, dup := seen[h]; dup {
					t.Errorf("%s and %s have the same input_hash %v", id, other, h)
				}
				seen[h] = id
			}
			if len(got) != len(hashRollouts) {
				t.Fatalf("%s: %d rollouts, want %d", name, len(got), len(hashRollouts))
			}
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("input_hash of %s differs from compact.jsonl's (-want +got):\n%s", name, diff)
		}
	}

	// The same tasks table in JSON Lines (initial states nested, spaced)
	// and in Parquet (initial states as JSON text).
	type taskRow struct {
		Task    string `parquet:"task_id"`
		Initial string `parquet:"initial_state"`
		Prompt  string `parquet:"prompt"`
	}
	tasks := []taskRow{{"TASK-001", `{"opportunities": {}}`, "Create a deal"}, {"TASK-003", `{"stages": {"S": {"isClosed": true}}}`, "Win it"}}
	var b strings.Builder
	for _, tr := range tasks {
		b.WriteString(`{ "task_id": "` + tr.Task + `", "initial_state": ` + tr.Initial + `, "prompt": "` + tr.Prompt + `" }` + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	writeParquetRows(t, filepath.Join(dir, "tasks.parquet"), tasks)
	in := []string{filepath.Join(dir, "compact.jsonl")}
	fromJSONL := inputHashes(t, Config{Inputs: in, TasksFile: filepath.Join(dir, "tasks.jsonl")})
	fromParquet := inputHashes(t, Config{Inputs: in, TasksFile: filepath.Join(dir, "tasks.parquet")})
	if diff := cmp.Diff(fromJSONL, fromParquet); diff != "" {
		t.Errorf("input_hash with tasks.parquet differs from tasks.jsonl's (-jsonl +parquet):\n%s", diff)
	}
	for _, id := range []string{"r1", "r3"} {
		if fromJSONL[id] == want[id] {
			t.Errorf("%s: input_hash %v is the same with and without its task row", id, want[id])
		}
	}
	if fromJSONL["r2"] != want["r2"] {
		t.Errorf("r2 has no task row, but its input_hash changed with the tasks table")
	}
}

// TestInputHashGenerated: a generated CRM dataset written as Parquet and
// as JSON Lines gives every rollout the same input_hash.
func TestInputHashGenerated(t *testing.T) {
	dir := t.TempDir()
	var ins []string
	for _, f := range []columnar.DatasetFormat{columnar.DatasetParquet, columnar.DatasetJSONL} {
		path := filepath.Join(dir, "crm"+f.Ext())
		if _, err := gen.Run(context.Background(), gen.Config{Out: path, Rollouts: 300, Seed: 9, RowGroupRows: 64}); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, path)
	}
	a := inputHashes(t, Config{Inputs: ins[:1], BatchSize: 7})
	b := inputHashes(t, Config{Inputs: ins[1:], BatchSize: 16})
	if len(a) != 300 {
		t.Fatalf("%d rollouts, want 300", len(a))
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("input_hash of the JSON Lines dataset differs from the Parquet one's (-parquet +jsonl):\n%s", diff)
	}
}

// TestInputHashChanges: a change to any field changes the hash, bytes moved
// from one field to the next too; whitespace outside strings does not, nor
// does null for absent (absent and null are one input). A row whose input
// is invalid has a null hash.
func TestInputHashChanges(t *testing.T) {
	const base = `"task_id":"TASK-001","initial_state":{"a":1},"final_state":{"a":2},"output":"ok","log":[{"t":1}],"model":"m"`
	tests := []struct {
		name, line string
		same       bool // hashes as base
	}{
		{"whitespace", `"task_id" : "TASK-001", "initial_state": { "a" : 1 },"final_state":{"a":2} , "output":"ok","log":[ {"t":1} ],"model": "m"`, true},
		{"task_id", strings.Replace(base, "TASK-001", "TASK-002", 1), false},
		{"initial_state", strings.Replace(base, `{"a":1}`, `{"a":3}`, 1), false},
		{"final_state", strings.Replace(base, `{"a":2}`, `{"a":3}`, 1), false},
		{"final_state spelling", strings.Replace(base, `{"a":2}`, `{"a":2.0}`, 1), false},
		{"member order", strings.Replace(base, `{"a":2}`, `{"b":0,"a":2}`, 1), false},
		{"output", strings.Replace(base, `"ok"`, `"ok "`, 1), false},
		{"log", strings.Replace(base, `[{"t":1}]`, `[{"t":1},{"t":2}]`, 1), false},
		{"metadata value", strings.Replace(base, `"model":"m"`, `"model":"n"`, 1), false},
		{"metadata member", base + `,"sample":1`, false},
		{"metadata null member", base + `,"sample":null`, false},
		{"string in a string", strings.Replace(base, `"ok"`, `"o\"k"`, 1), false},
		{"task_id into output", strings.Replace(strings.Replace(base, `"TASK-001"`, `"TASK-00"`, 1), `"ok"`, `"1ok"`, 1), false},
		{"log into metadata", strings.Replace(base, `"log":[{"t":1}],`, "", 1) + `,"log2":[{"t":1}]`, false},
		{"no log", strings.Replace(base, `"log":[{"t":1}],`, "", 1), false},
		{"state as a string", strings.Replace(base, `"initial_state":{"a":1}`, `"initial_state":"{\"a\": 1}"`, 1), true},
	}
	var b strings.Builder
	b.WriteString(`{"rollout_id":"base",` + base + "}\n")
	for _, tt := range tests {
		b.WriteString(`{"rollout_id":"` + tt.name + `",` + tt.line + "}\n")
	}
	// Absent, null and (for the output) empty are one input.
	const short = `"task_id":"TASK-001","model":"m"`
	for _, line := range []string{
		`{"rollout_id":"short",` + short + `}`,
		`{"rollout_id":"short nulls",` + short + `,"final_state":null,"initial_state":null,"log":null,"output":null}`,
		`{"rollout_id":"short empty output",` + short + `,"output":""}`,
		`{"rollout_id":"short null state text",` + short + `,"final_state":"null"}`,
		`{"rollout_id":"bad","task_id":"TASK-001","final_state":"{"}`,
		// Space inside a string is content, after an escaped quote too.
		`{"rollout_id":"escaped quote","task_id":"TASK-001","final_state":{"a":"x\\\" y"}}`,
		`{"rollout_id":"escaped quote no space","task_id":"TASK-001","final_state":{"a":"x\\\"y"}}`,
		// A string that ends in an escaped backslash ends there.
		`{"rollout_id":"escaped backslash","task_id":"TASK-001","final_state":{"a":"x\\", "b": 1}}`,
		`{"rollout_id":"escaped backslash compact","task_id":"TASK-001","final_state":{"a":"x\\","b":1}}`,
	} {
		b.WriteString(line + "\n")
	}
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := inputHashes(t, Config{Inputs: []string{in}})
	for _, tt := range tests {
		if same := got[tt.name] == got["base"]; same != tt.same {
			t.Errorf("%s: input_hash %v, base's %v: same = %v, want %v", tt.name, got[tt.name], got["base"], same, tt.same)
		}
	}
	for _, id := range []string{"short nulls", "short empty output", "short null state text"} {
		if got[id] != got["short"] {
			t.Errorf("%s: input_hash %v, want %v as with the fields absent", id, got[id], got["short"])
		}
	}
	if got["escaped quote"] == got["escaped quote no space"] {
		t.Errorf("a space after an escaped quote in a string was dropped: both hash %v", got["escaped quote"])
	}
	if got["escaped backslash"] != got["escaped backslash compact"] {
		t.Errorf("whitespace after a string ending in an escaped backslash was kept: %v, compact %v", got["escaped backslash"], got["escaped backslash compact"])
	}
	if got["bad"] != nil {
		t.Errorf("input_hash of a row with invalid input = %v, want null", got["bad"])
	}
}

// TestKeepInputHashRefused: input_hash is a rewards column; --keep cannot
// name it.
func TestKeepInputHashRefused(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"task_id":"TASK-001","input_hash":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Config{Inputs: []string{in}, Out: t.TempDir(), Keep: []string{"model", "input_hash"}, Verifiers: crm.Verifiers()})
	var ce *inputs.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Keep" || !strings.Contains(ce.Msg, "input_hash is a rewards column") {
		t.Errorf("Run with Keep input_hash = %v, want a ConfigError on Keep naming input_hash", err)
	}
}
