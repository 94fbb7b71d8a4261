package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/harness"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
)

// referenceInputs is the inputs reference, generated from the rollout
// fields (columnar.FieldNames), the flags that name and add them, and the
// harness formats.
const referenceInputs = "../docs/reference/inputs.md"

// decodeFunc decodes one row given as a JSON object as a run decodes a
// JSON Lines row.
type decodeFunc func(row string) (*verifiers.Rollout, error)

// inputFieldDoc documents one rollout field. check verifies what the doc
// says on rows decoded as a grading run decodes them: decode without a
// tasks table, withTasks with one holding task T1 (initial_state {"a": 1},
// instruction "do it").
type inputFieldDoc struct {
	accepted, required, missing, meaning string
	check                                func(t *testing.T, decode, withTasks decodeFunc)
}

// inputFieldDocs document the rollout fields by standard name;
// TestReferenceInputs fails on a field of columnar.FieldNames without one.
var inputFieldDocs = map[string]inputFieldDoc{
	columnar.FieldID: {
		"a string, or a number (in its decimal form: `7.0` is `7`)", "no",
		"`FILE#ROW`: the input's path and the row's index, from 0",
		"the rollout's id, the rows' `rollout_id`",
		func(t *testing.T, decode, _ decodeFunc) {
			wantID(t, decode, `{"task_id": "T"}`, "rows.jsonl#0")
			wantID(t, decode, `{"task_id": "T", "rollout_id": null}`, "rows.jsonl#0")
			wantID(t, decode, `{"task_id": "T", "rollout_id": 7.0}`, "7")
			wantError(t, decode, `{"task_id": "T", "rollout_id": true}`, "rollout_id: want a string or a number, got boolean")
		},
	},
	columnar.FieldTask: {
		"a string, or a number (in its decimal form)", "yes",
		"the row has status `error`, kind `input`: `task_id: missing, null or empty`",
		"the rollout's task: it binds the verifier, and finds the task's row in the tasks table",
		func(t *testing.T, decode, _ decodeFunc) {
			wantError(t, decode, `{}`, "task_id: missing, null or empty")
			wantError(t, decode, `{"task_id": ""}`, "task_id: missing, null or empty")
			wantError(t, decode, `{"task_id": [1]}`, "task_id: want a string or a number")
			if r, err := decode(`{"task_id": 7}`); err != nil || r.TaskID != "7" {
				t.Errorf("task_id 7: %v, %v", r, err)
			}
		},
	},
	columnar.FieldFinal: {
		"JSON: any JSON value, a string holding JSON text, or a nested Parquet or Arrow column (see [Nested columns](../grading.md#nested-columns))", "no",
		"no final state: CEL's `final` reads as an empty object",
		"the state the agent left",
		func(t *testing.T, decode, _ decodeFunc) {
			wantState(t, decode, `{"task_id": "T", "final_state": {"a": 1}}`, func(r *verifiers.Rollout) jsonview.Value { return r.Final })
			wantState(t, decode, `{"task_id": "T", "final_state": "{\"a\": 1}"}`, func(r *verifiers.Rollout) jsonview.Value { return r.Final })
			wantError(t, decode, `{"task_id": "T", "final_state": "{"}`, "final_state: ")
			if r, err := decode(`{"task_id": "T", "final_state": null}`); err != nil || r.Final.Exists() {
				t.Errorf("a null final_state: %v", err)
			}
		},
	},
	columnar.FieldInitial: {
		"as `final_state`", "no",
		"the task's `initial_state` from the tasks table, when it has one; else none (`initial` reads as an empty object)",
		"the state the agent started from",
		func(t *testing.T, decode, withTasks decodeFunc) {
			wantState(t, decode, `{"task_id": "T", "initial_state": "{\"a\": 1}"}`, func(r *verifiers.Rollout) jsonview.Value { return r.Initial })
			wantState(t, withTasks, `{"task_id": "T1"}`, func(r *verifiers.Rollout) jsonview.Value { return r.Initial })
			wantError(t, decode, `{"task_id": "T", "initial_state": "["}`, "initial_state: ")
		},
	},
	columnar.FieldOutput: {
		"a string", "no", "`\"\"`",
		"the agent's final answer",
		func(t *testing.T, decode, _ decodeFunc) {
			wantError(t, decode, `{"task_id": "T", "output": 1}`, "output: not a string (number)")
			if r, err := decode(`{"task_id": "T"}`); err != nil || r.Output != "" {
				t.Errorf("a missing output: %v", err)
			}
		},
	},
	columnar.FieldLog: {
		"a JSON array of events, or a string holding one, or a nested list column", "no",
		"no events: CEL's `log` is an empty list",
		"what the agent did, event by event",
		func(t *testing.T, decode, _ decodeFunc) {
			wantError(t, decode, `{"task_id": "T", "log": {}}`, "log: not a JSON array")
			if r, err := decode(`{"task_id": "T", "log": "[{\"eventType\": \"click\"}]"}`); err != nil || r.Log.Kind() != jsonview.Array || !r.Log.First().Exists() {
				t.Errorf("a log in a string: %v", err)
			}
		},
	},
	columnar.FieldMessages: {
		"a JSON array of OpenAI chat messages, or a string holding one, or a nested list column", "no",
		"no turns",
		"read only in a run where a verifier scores turns: its assistant messages are the agent's turns ([Rewards per turn](../turns.md)); it stays in the metadata",
		func(t *testing.T, decode, _ decodeFunc) {
			r, err := decode(`{"task_id": "T", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}`)
			if err != nil || !r.Turns.First().Exists() || r.Turns.First().Next().Exists() || !r.Meta.Get("messages").Exists() {
				t.Errorf("messages: want one turn and the messages in the metadata (%v)", err)
			}
			wantError(t, decode, `{"task_id": "T", "messages": 3}`, "messages: not a JSON array of messages")
		},
	},
}

// fromDocs document the harness formats of --from.
var fromDocs = map[harness.Format]string{
	harness.Inspect:  "Inspect AI logs: `.eval` archives (Inspect logs whatever `--from`) and `.json` EvalLogs; a rollout per sample and epoch",
	harness.TauBench: "tau-bench result files, a JSON array of `{task_id, trial, reward, info, traj}`; a rollout per element",
	harness.Tau2:     "tau2-bench results files, `{info, tasks, simulations}`; a rollout per simulation",
	harness.Messages: "JSON Lines whose lines hold a `task_id` and OpenAI chat `messages`",
	harness.NemoGym:  "NeMo Gym rollouts (`X.jsonl`, `X_failures.jsonl`), with the task fields of `X_materialized_inputs.jsonl` beside them, which is not read as rollouts",
	harness.ATIF:     "Harbor's ATIF trajectory documents (`trajectory.json`), or JSON Lines of them; other `.json` files are not inputs",
}

// fileNames are the file names whose format the page lists, each with
// how the page shows it.
var fileNames = []struct{ name, shown string }{
	{"x.parquet", "`.parquet`"},
	{"x.arrow", "`.arrow`"},
	{"x.feather", "`.feather`"},
	{"x.jsonl", "`.jsonl`"},
	{"x.ndjson", "`.ndjson`"},
	{"x.jsonl.gz", "`.jsonl.gz`"},
	{"x.jsonl.zst", "`.jsonl.zst`"},
	{"x.ndjson.zst", "`.ndjson.zst`"},
	{"x.json", "`.json`"},
	{"x.json.gz", "`.json.gz`"},
	{"x.json.zst", "`.json.zst`"},
	{"trajectory.json", "`trajectory*.json`"},
	{"x.eval", "`.eval`"},
}

// TestReferenceInputs checks that docs/reference/inputs.md describes
// every rollout field (columnar.FieldNames), with what the flags --map,
// --set and --keep do with it as gavel grade answers, the tasks table and
// the harness formats; GAVEL_UPDATE_DOCS=1 (make docs) rewrites it.
func TestReferenceInputs(t *testing.T) {
	dir := t.TempDir()
	tasksFile := filepath.Join(dir, "tasks.jsonl")
	rows := filepath.Join(dir, "rows.jsonl")
	writeFile(t, tasksFile, `{"task_id": "T1", "initial_state": {"a": 1}, "instruction": "do it"}`+"\n")
	writeFile(t, rows, `{"task_id": "T1", "output": "x", "model": "m"}`+"\n")
	decoder := func(tasks string) decodeFunc {
		d, err := pipeline.NewRowDecoder(columnar.FieldNames{}, tasks)
		if err != nil {
			t.Fatal(err)
		}
		return func(row string) (*verifiers.Rollout, error) { return d.Decode("rows.jsonl", []byte(row)) }
	}
	decode, withTasks := decoder(""), decoder(tasksFile)
	// grade runs gavel grade on rows with args and returns its exit
	// status and the first line of its standard error.
	n := 0
	grade := func(args ...string) (int, string) {
		n++
		args = append(append([]string{"grade", "--quiet", "--out", filepath.Join(dir, fmt.Sprint("out", n))}, args...), rows)
		code, _, stderr := runCLI(t, args...)
		first, _, _ := strings.Cut(stderr, "\n")
		return code, first
	}

	var b bytes.Buffer
	b.WriteString("# Inputs reference\n\n" +
		"<!-- Generated from the code by `make docs`; do not edit. -->\n\n" +
		"The fields of a rollout as gavel reads them from a row of Parquet, Arrow or\n" +
		"JSON Lines (or from a request of `gavel serve`), what each accepts and what\n" +
		"its absence means; the metadata; the tasks table; and the flags that name\n" +
		"fields (`--map`), add metadata (`--set`), keep it (`--keep`) and read other\n" +
		"harnesses' logs (`--from`). [Grading and inputs](../grading.md#input) shows\n" +
		"them at work. A row whose field cannot be read gets status `error`, kind\n" +
		"`input`, with a message naming the field; it never stops the run.\n\n" +
		"## Rollout fields\n\n" +
		"| field | accepted | required | null or missing | `--map` | `--set`, `--keep` | meaning |\n" +
		"| --- | --- | --- | --- | --- | --- | --- |\n")
	defaults := columnar.FieldNames{}.WithDefaults()
	dv := reflect.ValueOf(defaults)
	var names, mappable, refused []string
	var setTaskMsg, keepTaskMsg string
	for i := range dv.NumField() {
		goName, name := dv.Type().Field(i).Name, dv.Field(i).String()
		names = append(names, name)
		d, ok := inputFieldDocs[name]
		if !ok {
			t.Errorf("rollout field %s has no meaning in inputFieldDocs", name)
			continue
		}
		d.check(t, decode, withTasks)
		// --map: parseMap names the field's column.
		mapped := "no"
		if got, err := parseMap(name + "=col"); err == nil && reflect.ValueOf(got).FieldByName(goName).String() == "col" {
			mapped = "yes"
			mappable = append(mappable, name)
		}
		// --set and --keep: gavel grade refuses the key, or reads it as
		// metadata.
		setCode, setMsg := grade("--set", name+"=x")
		keepCode, keepMsg := grade("--keep", name)
		if (setCode == 2) != (keepCode == 2) {
			t.Errorf("--set %s=x exits %d (%s), --keep %s %d (%s): say which", name, setCode, setMsg, name, keepCode, keepMsg)
		}
		set := "metadata"
		if setCode == 2 {
			set = "refused"
			refused = append(refused, name)
		}
		if name == columnar.FieldTask {
			setTaskMsg, keepTaskMsg = setMsg, keepMsg
		}
		row := []string{"`" + name + "`", d.accepted, d.required, d.missing, mapped, set, d.meaning}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	for k := range inputFieldDocs {
		if !slices.Contains(names, k) {
			t.Errorf("inputFieldDocs documents %s, which is not a rollout field", k)
		}
	}

	// Metadata, as decoded.
	r, err := decode(`{"task_id": "T", "output": "o", "model": "m", "note": null}`)
	if err != nil || !r.Meta.Get("model").StrIs("m") || !r.Meta.Get("note").Exists() || r.Meta.Get("task_id").Exists() || r.Meta.Get("output").Exists() {
		t.Errorf("metadata: want the row's other members, null ones too, and no rollout field (%v)", err)
	}
	b.WriteString("\n## Metadata\n\n" +
		"Every other column of a Parquet or Arrow row, or member of a JSON Lines line,\n" +
		"is metadata: one object, in order, that verifiers read as `meta` (CEL) and\n" +
		"`Rollout.Meta` (Go). A null Parquet or Arrow cell is no member; a JSON Lines\n" +
		"member set to `null` is a member. `messages` stays in the metadata. A\n" +
		"harness's log maps its own metadata (`model`, `run_id`, `recorded_reward`,\n" +
		"...; see [Other harnesses' logs](../harnesses.md)).\n\n")

	// The tasks table, as inputs.NewTask reads a row of it.
	taskRow := func(text string) (*inputs.Task, string, error) { return inputs.NewTask([]byte(text), &defaults) }
	if _, _, err := taskRow(`{"initial_state": {}}`); err == nil || err.Error() != defaults.Task+" is missing or empty" {
		t.Errorf("a task without an id: %v", err)
	}
	if task, id, err := taskRow(`{"task_id": 7, "initial_state": "{\"a\": 1}", "instruction": "x"}`); err != nil || id != "7" ||
		!task.Initial.Get("a").Exists() || !task.Fields.Get("instruction").Exists() {
		t.Errorf("a task row: %v, %v", id, err)
	}
	if r, err := withTasks(`{"task_id": "T1"}`); err != nil || !r.Task.Get("instruction").StrIs("do it") {
		t.Errorf("the task row of a rollout: %v", err)
	}
	fmt.Fprintf(&b, "## Tasks table\n\n"+
		"`--tasks FILE` is a table in any input format (Parquet, Arrow, JSON Lines),\n"+
		"one row per task, read with the same field names (`--map` applies to it):\n\n"+
		"| field | accepted | meaning |\n| --- | --- | --- |\n"+
		"| `%s` | a string, or a number | required: a row without one, or a task listed twice, is an error of the table (exit status 2) |\n"+
		"| `%s` | JSON, or a string holding JSON text | the initial state of the task's rollouts that have none of their own |\n"+
		"| any other | any | the task's row, with the two above: CEL's `task`, `Rollout.Task`, and what a judge's instruction comes from |\n\n"+
		"A harness's log carries its tasks' rows itself; a tasks table, when given,\n"+
		"is used instead.\n\n", defaults.Task, defaults.Initial)

	// --map.
	code, unknown := grade("--map", "zz=col")
	if code != 2 {
		t.Errorf("--map zz=col: exit %d, want 2", code)
	}
	fmt.Fprintf(&b, "## --map\n\n"+
		"`--map K=COL[.PATH],...` reads field K from column COL. K is one of\n%s;\n"+
		"another is refused, and so is a field mapped twice:\n\n```text\n%s\n```\n\n"+
		"`.PATH` reads a field inside COL: the fields of a Parquet or Arrow struct\n"+
		"column, or a member path inside a JSON Lines member or a log\n"+
		"(`output=response.choices.0.text`: members by name, array elements by\n"+
		"0-based index); a member whose whole name is `COL.PATH` wins. The tasks\n"+
		"table is read with the same names.\n\n",
		joinCodes(mappable, "or"), unknown)

	// --set.
	if code, _ := grade("--set", "model=a", "--set", "model=b"); code != 2 {
		t.Errorf("--set model twice: exit %d, want 2", code)
	}
	if code, msg := grade("--set", "model"); code != 2 || !strings.Contains(msg, "want KEY=VALUE") {
		t.Errorf("--set model: exit %d (%s), want 2 and KEY=VALUE", code, msg)
	}
	fmt.Fprintf(&b, "## --set\n\n"+
		"`--set K=V` (repeatable) adds metadata K with the string V to every row,\n"+
		"replacing a value of the row's own. A key set twice is refused, and so is\n"+
		"the name of a rollout field,\n%s\n"+
		"(or of the column `--map` names instead): a constant is metadata, never a\n"+
		"rollout's id, task or state. `--set task_id=T1` is refused:\n\n```text\n%s\n```\n\n"+
		"A task column of another name is read with `--map task_id=COL`; rows\n"+
		"without a task are errors of kind `input`, whatever the flags.\n\n",
		joinCodes(refused, "and"), setTaskMsg)

	// --keep.
	code, hashMsg := grade("--keep", columnar.ColumnInputHash)
	if code != 2 {
		t.Errorf("--keep %s: exit %d, want 2", columnar.ColumnInputHash, code)
	}
	candidates := []inputs.Constant{{Key: "model"}, {Key: "run_id"}, {Key: "sample"}, {Key: "recorded_reward"}, {Key: "recorded_scores"}, {Key: "epoch"}, {Key: "trial"}}
	keep := inputs.DefaultKeep(nil, defaults, candidates)
	fmt.Fprintf(&b, "## --keep\n\n"+
		"`--keep COL,...` copies metadata columns into the rewards table, after its\n"+
		"own columns, as nullable strings (a string as it is, anything else as its\n"+
		"JSON text). By default gavel keeps those of\n%s\nthat any input has (the\n"+
		"schema of Parquet and Arrow files, the first object line of JSON Lines\n"+
		"files, the first rollout of a harness's log; `recorded_reward` and\n"+
		"`recorded_scores` from harnesses' logs only) or `--set` gives. A rollout\n"+
		"field is refused, as by `--set`:\n\n```text\n%s\n```\n\n"+
		"and so is `%s`:\n\n```text\n%s\n```\n\n",
		joinCodes(keep, "and"), keepTaskMsg, columnar.ColumnInputHash, hashMsg)

	// --from and the file types.
	if _, err := harness.ParseFormat("zz"); err == nil || !strings.Contains(err.Error(), strings.Join(formatNames(harness.Formats[:len(harness.Formats)-1]), ", ")) {
		t.Errorf("ParseFormat's error does not name every format of harness.Formats: %v", err)
	}
	b.WriteString("## Input files\n\n" +
		"Without `--from`, an input file is read by its name:\n\n| file | read as |\n| --- | --- |\n")
	for _, f := range fileNames {
		if format, ok := columnar.Resolve(columnar.Source{Name: f.name}); ok {
			b.WriteString("| " + f.shown + " | " + format + " |\n")
		}
	}
	b.WriteString("\nStandard input (`-`) is JSON Lines or an Arrow IPC stream, told apart by its\n" +
		"first bytes (or named by `--input-format`, `jsonl` or `arrow-stream`); a\n" +
		"directory is every file below it that is read, in lexicographic path order.\n\n" +
		"## --from\n\n" +
		"`--from FORMAT` reads other harnesses' logs as rollouts, each mapped to the\n" +
		"fields above ([Other harnesses' logs](../harnesses.md)):\n\n" +
		"| format | files read | what they are |\n| --- | --- | --- |\n")
	for _, f := range harness.Formats {
		m, ok := fromDocs[f]
		if !ok {
			t.Errorf("harness format %s has no meaning in fromDocs", f)
		}
		var read []string
		for _, fn := range fileNames {
			if format, ok := columnar.Resolve(columnar.Source{Name: fn.name, From: string(f)}); ok && format == string(f) &&
				!(fn.name == "trajectory.json" && slices.Contains(read, "`.json`")) {
				read = append(read, fn.shown)
			}
		}
		b.WriteString("| `" + string(f) + "` | " + strings.Join(read, ", ") + " | " + m + " |\n")
	}
	for f := range fromDocs {
		if !slices.Contains(harness.Formats, f) {
			t.Errorf("fromDocs documents %s, which is not a harness format", f)
		}
	}

	page := bytes.TrimRight(b.Bytes(), "\n")
	page = append(page, '\n')
	if os.Getenv("GAVEL_UPDATE_DOCS") != "" {
		if err := os.WriteFile(referenceInputs, page, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(referenceInputs)
	if err != nil || !bytes.Equal(have, page) {
		t.Errorf("%s is not generated from the code (%v): run make docs", filepath.Base(referenceInputs), err)
	}
}

// wantID checks the rollout id a row decodes to.
func wantID(t *testing.T, decode decodeFunc, row, id string) {
	t.Helper()
	if r, err := decode(row); err != nil || r.ID != id {
		t.Errorf("%s: want rollout id %s (%v)", row, id, err)
	}
}

// wantError checks that a row is an input error whose message starts with
// msg.
func wantError(t *testing.T, decode decodeFunc, row, msg string) {
	t.Helper()
	if _, err := decode(row); err == nil || !strings.HasPrefix(err.Error(), msg) {
		t.Errorf("%s: want an input error %q, got %v", row, msg, err)
	}
}

// wantState checks that a row decodes to a state (of) {"a": 1}.
func wantState(t *testing.T, decode decodeFunc, row string, of func(*verifiers.Rollout) jsonview.Value) {
	t.Helper()
	r, err := decode(row)
	if err != nil || !of(r).Get("a").Exists() {
		t.Errorf("%s: want the state {\"a\": 1} (%v)", row, err)
	}
}

// joinCodes joins names in code spans, the last after conj.
func joinCodes(names []string, conj string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
}

func formatNames(fs []harness.Format) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = string(f)
	}
	return names
}
