package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// harnessData is the fixtures of package columnar/harness.
var harnessData = filepath.Join("..", "columnar", "harness", "testdata")

// examples is the directory of the worked examples of docs/harnesses.md.
var examples = filepath.Join("..", "examples", "harness")

// rewardRows reads the rewards of a JSON Lines result directory, by
// rollout id.
func rewardRows(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(out, "rewards", "*.jsonl"))
	rows := map[string]map[string]any{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var row map[string]any
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				t.Fatal(err)
			}
			rows[row["rollout_id"].(string)] = row
		}
		f.Close()
	}
	return rows
}

// gradeFrom grades inputs with args into a new JSON Lines result directory
// and returns it with the exit status and standard error.
func gradeFrom(t *testing.T, args ...string) (out string, code int, stderr string) {
	t.Helper()
	out = filepath.Join(t.TempDir(), "out")
	code, _, stderr = runCLI(t, append([]string{"grade", "--quiet", "--format", "jsonl", "--out", out}, args...)...)
	return out, code, stderr
}

func TestGradeFrom(t *testing.T) {
	tau := filepath.Join(harnessData, "tau-bench", "tool-calling-gpt-4o-0.0_range_0--1.json")
	gymRollouts := filepath.Join(harnessData, "nemo-gym", "run", "rollouts.jsonl")
	atifBatch := filepath.Join(harnessData, "atif", "batch.jsonl")
	eval := filepath.Join(harnessData, "inspect", "run.eval")
	tests := []struct {
		name string
		args []string
		code int
		// want maps rollout ids to their status, and, for an error row, a
		// text its message holds.
		want map[string][2]string
		// kept are columns every judged row keeps.
		kept []string
	}{
		{
			name: "tau-bench",
			args: []string{"--from", "tau-bench", "--spec", filepath.Join(examples, "tau-bench.yaml"), tau},
			code: 3,
			want: map[string][2]string{
				"tool-calling-gpt-4o-0.0_range_0--1/0/0": {"passed"},
				"tool-calling-gpt-4o-0.0_range_0--1/3/0": {"passed"},
				"tool-calling-gpt-4o-0.0_range_0--1/0/1": {"failed"},
				// The element's ids as far as they could be mapped.
				"tool-calling-gpt-4o-0.0_range_0--1//2": {"error", tau + ": element 3: task_id is null"},
			},
			kept: []string{"recorded_reward"},
		},
		{
			name: "tau2",
			args: []string{"--from", "tau2", "--spec", filepath.Join(examples, "tau2.yaml"), filepath.Join(harnessData, "tau2", "results.json")},
			code: 0,
			want: map[string][2]string{
				"2b1d9c1e-0001": {"passed"},
				"2b1d9c1e-0002": {"failed"},
				"2b1d9c1e-0003": {"failed"},
			},
			kept: []string{"model"},
		},
		{
			name: "inspect archive, by its extension",
			args: []string{"--spec", filepath.Join(examples, "inspect.yaml"), eval},
			code: 3,
			want: map[string][2]string{
				"Ev7kQ2/1/1":   {"passed"},
				"Ev7kQ2/1/2":   {"failed"},
				"Ev7kQ2/q-2/1": {"failed"},
				eval + "#3":    {"error", eval + ": sample bad epoch 1: samples/bad_epoch_1.json: invalid JSON"},
			},
			kept: []string{"model", "run_id"},
		},
		{
			name: "inspect json",
			args: []string{"--from", "inspect", "--spec", filepath.Join(examples, "inspect.yaml"), filepath.Join(harnessData, "inspect", "log.json")},
			code: 0,
			want: map[string][2]string{
				"Ev7kQ2/1/1":   {"passed"},
				"Ev7kQ2/1/2":   {"failed"},
				"Ev7kQ2/q-2/1": {"failed"},
			},
		},
		{
			name: "messages",
			args: []string{"--from", "messages", "--spec", filepath.Join(examples, "messages.yaml"), filepath.Join(examples, "chats.jsonl")},
			code: 0,
			want: map[string][2]string{
				"refund-a":  {"passed"},
				"refund-b":  {"failed"},
				"weather-a": {"passed"},
				"weather-b": {"failed"},
			},
			kept: []string{"model", "recorded_reward"},
		},
		{
			// A directory: the rollouts and the failures file, the
			// materialized inputs joined (GYM-WEATHER reads their
			// expected_city), not graded.
			name: "nemo-gym",
			args: []string{"--from", "nemo-gym", "--spec", filepath.Join(examples, "nemo-gym.yaml"), filepath.Join(harnessData, "nemo-gym", "run")},
			code: 3,
			want: map[string][2]string{
				"rollouts/0/0":            {"passed"},
				"rollouts/0/1":            {"failed"},
				"rollouts/1/0":            {"passed"},
				gymRollouts + "#2":        {"error", gymRollouts + ": line 3 (byte 1584): invalid JSON at byte 69 of the line"},
				gymRollouts + "#4":        {"error", gymRollouts + ": line 5 (byte 2799): _ng_task_index is null"},
				"rollouts_failures/2/0":   {"passed"},
				"rollouts_failures/2/1/1": {"error", "response is missing, not an object (the rollout failed in NeMo Gym: timeout_exceeded)"},
			},
			kept: []string{"model", "recorded_reward"},
		},
		{
			name: "atif",
			args: []string{"--from", "atif", "--spec", filepath.Join(examples, "atif.yaml"), filepath.Join(harnessData, "atif")},
			code: 3,
			want: map[string][2]string{
				"8c1f0e52-3b7d-4d0a-9a51-2f6c1b9e7d40": {"passed"},
				"stock-run-17":                         {"passed"},
				"traj-chart-0042":                      {"passed"},
				atifBatch + "#1":                       {"error", atifBatch + ": line 2 (byte 654): invalid JSON"},
			},
			kept: []string{"model"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code, stderr := gradeFrom(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, stderr)
			}
			rows := rewardRows(t, out)
			if len(rows) != len(tt.want) {
				t.Errorf("%d rows, want %d: %v", len(rows), len(tt.want), rows)
			}
			for id, w := range tt.want {
				row := rows[id]
				if row == nil {
					t.Errorf("no row %s", id)
					continue
				}
				if got := row["status"]; got != w[0] {
					t.Errorf("%s: status %v, want %s (error %v)", id, got, w[0], row["error"])
				}
				if w[0] == "error" {
					msg, _ := row["error"].(string)
					if row["error_kind"] != "input" || !strings.Contains(msg, w[1]) {
						t.Errorf("%s: error %v %q, want kind input and %q", id, row["error_kind"], msg, w[1])
					}
					continue
				}
				for _, k := range tt.kept {
					if row[k] == nil {
						t.Errorf("%s: %s not kept: %v", id, k, row)
					}
				}
			}
		})
	}
}

// TestGradeFromTasks checks that the task rows a log carries are the
// tasks verifiers read, and that a --tasks file replaces them.
func TestGradeFromTasks(t *testing.T) {
	dir := t.TempDir()
	tasks := writeFile(t, filepath.Join(dir, "tasks.jsonl"), `{"task_id":"refund-1","order":"43"}
{"task_id":"weather-2","order":"43"}
`)
	spec := writeFile(t, filepath.Join(dir, "spec.yaml"), `verifiers:
  - id: ORDER
    name: Order of the task row
    tasks: [refund-1, weather-2]
    checks:
      - id: order-from-task
        type: expr
        expr: output.contains(task.order)
`)
	chats := filepath.Join(examples, "chats.jsonl")
	out, code, stderr := gradeFrom(t, "--from", "messages", "--spec", spec, "--tasks", tasks, chats)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := rewardRows(t, out)
	for _, id := range []string{"refund-a", "refund-b", "weather-a", "weather-b"} {
		if row := rows[id]; row == nil || row["status"] != "failed" {
			t.Errorf("%s: %v, want failed (no answer names order 43)", id, row)
		}
	}
	if len(rows) != 4 {
		t.Errorf("%d rows, want 4", len(rows))
	}

	// Without --tasks, the tau-bench rows' own tasks: a spec reading
	// task.instruction sees it.
	spec = writeFile(t, filepath.Join(dir, "instr.yaml"), `verifiers:
  - id: INSTR
    name: Instruction of the task row
    tasks: ["0", "3"]
    checks:
      - id: has-instruction
        type: expr
        expr: task.instruction != ""
`)
	tau := filepath.Join(harnessData, "tau-bench", "tool-calling-gpt-4o-0.0_range_0--1.json")
	out, code, stderr = gradeFrom(t, "--from", "tau-bench", "--spec", spec, tau)
	if code != 3 {
		t.Fatalf("tau-bench: exit %d, want 3 (one element has no task id): %s", code, stderr)
	}
	rows = rewardRows(t, out)
	for _, id := range []string{"tool-calling-gpt-4o-0.0_range_0--1/0/0", "tool-calling-gpt-4o-0.0_range_0--1/3/0", "tool-calling-gpt-4o-0.0_range_0--1/0/1"} {
		if row := rows[id]; row == nil || row["status"] != "passed" {
			t.Errorf("%s: %v, want passed: the task row is the log's", id, row)
		}
	}
	if row := rows["tool-calling-gpt-4o-0.0_range_0--1//2"]; row == nil || row["status"] != "error" {
		t.Errorf("element without a task id: %v, want an error row", row)
	}
	if len(rows) != 4 {
		t.Errorf("tau-bench: %d rows, want 4", len(rows))
	}
}

// TestGradeFromTruncated checks that a truncated archive or array is an
// error of its file: no part, listed in failed_inputs, the other inputs
// graded.
func TestGradeFromTruncated(t *testing.T) {
	dir := t.TempDir()
	cut := func(src, name string, keep float64) string {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		return writeFile(t, filepath.Join(dir, name), string(data[:int(float64(len(data))*keep)]))
	}
	tau := cut(filepath.Join(harnessData, "tau-bench", "tool-calling-gpt-4o-0.0_range_0--1.json"), "cut.json", 0.6)
	eval := cut(filepath.Join(harnessData, "inspect", "run.eval"), "cut.eval", 0.7)
	good := filepath.Join(harnessData, "tau2", "results.json")
	for _, bad := range []string{tau, eval} {
		from := "tau-bench"
		if strings.HasSuffix(bad, ".eval") {
			from = "tau2" // .eval is Inspect's whatever --from says
		}
		args := []string{"--from", from, bad}
		if from == "tau2" {
			args = append(args, good)
		} else {
			// good is a tau2 file: grade it in a run of its own format.
			args = []string{"--from", "tau-bench", bad, filepath.Join(harnessData, "tau-bench", "tool-calling-gpt-4o-0.0_range_0--1.json")}
		}
		out, code, stderr := gradeFrom(t, args...)
		if code != 1 || !strings.Contains(stderr, "could not be read") {
			t.Errorf("%s: exit %d, want 1 with the unreadable input named: %s", bad, code, stderr)
		}
		var sum struct {
			Rollouts     int64 `json:"rollouts"`
			FailedInputs []struct {
				Path  string `json:"path"`
				Part  string `json:"part"`
				Error string `json:"error"`
			} `json:"failed_inputs"`
		}
		data, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &sum); err != nil {
			t.Fatal(err)
		}
		if len(sum.FailedInputs) != 1 || sum.FailedInputs[0].Path != bad || sum.Rollouts == 0 {
			t.Errorf("%s: summary %+v, want the file failed and the other graded", bad, sum)
		}
		if _, err := os.Stat(filepath.Join(out, "rewards", "part-00000.jsonl")); err == nil {
			t.Errorf("%s: its part was written", bad)
		}
	}
}

func TestGradeSetAndMapPath(t *testing.T) {
	dir := t.TempDir()
	// tau2 rows have a model of their own: --set replaces it.
	out, code, stderr := gradeFrom(t, "--from", "tau2", "--set", "model=gpt-4o", "--set", "harness=tau2", "--keep", "model,harness",
		filepath.Join(harnessData, "tau2", "results.json"))
	if code != 3 {
		t.Fatalf("exit %d, want 3 (no verifier binds the tasks): %s", code, stderr)
	}
	rows := rewardRows(t, out)
	for _, id := range []string{"2b1d9c1e-0001", "2b1d9c1e-0002", "2b1d9c1e-0003"} {
		if row := rows[id]; row == nil || row["model"] != "gpt-4o" || row["harness"] != "tau2" {
			t.Errorf("%s: %v, want model gpt-4o and harness tau2", id, row)
		}
	}
	if len(rows) != 3 {
		t.Errorf("tau2: %d rows, want 3", len(rows))
	}
	// Kept by default once set.
	out, code, stderr = gradeFrom(t, "--from", "tau-bench", "--set", "model=gpt-4o", filepath.Join(harnessData, "tau-bench"))
	if code != 3 {
		t.Fatalf("tau-bench: exit %d, want 3 (no verifier binds the tasks): %s", code, stderr)
	}
	rows = rewardRows(t, out)
	for _, id := range []string{"tool-calling-gpt-4o-0.0_range_0--1/0/0", "tool-calling-gpt-4o-0.0_range_0--1/3/0", "tool-calling-gpt-4o-0.0_range_0--1/0/1", "tool-calling-gpt-4o-0.0_range_0--1//2"} {
		if row := rows[id]; row == nil || row["model"] != "gpt-4o" {
			t.Errorf("%s: %v, want model gpt-4o kept by default", id, row)
		}
	}
	if len(rows) != 4 {
		t.Errorf("tau-bench: %d rows, want 4", len(rows))
	}
	for _, c := range []struct{ flag, value, stderr string }{
		{"--set", "task_id=x", "rollout field"},
		{"--set", "model", "want KEY=VALUE"},
		{"--from", "csv", `--from: unknown harness format "csv"`},
	} {
		code, _, stderr := runCLI(t, "grade", "--out", filepath.Join(dir, "never"), c.flag, c.value, filepath.Join(examples, "chats.jsonl"))
		if code != 2 || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%s %s: exit %d, %s; want 2 and %q", c.flag, c.value, code, stderr, c.stderr)
		}
	}

	// --map K=COL.PATH reads a member path inside a JSON object.
	input := writeFile(t, filepath.Join(dir, "nested.jsonl"), `{"id":"n1","meta":{"task":{"name":"refund-1"}},"response":{"choices":[{"text":"order 42 refunded"}]}}
`)
	spec := writeFile(t, filepath.Join(dir, "spec.yaml"), `verifiers:
  - id: NESTED
    name: Nested fields
    task: refund-1
    checks:
      - id: says-42
        type: expr
        expr: output.contains("42")
`)
	out, code, stderr = gradeFrom(t, "--spec", spec, "--map", "rollout_id=id,task_id=meta.task.name,output=response.choices.0.text", input)
	if code != 0 {
		t.Fatalf("--map path: exit %d: %s", code, stderr)
	}
	if row := rewardRows(t, out)["n1"]; row == nil || row["status"] != "passed" || row["task_id"] != "refund-1" {
		t.Errorf("--map path: %v, want n1 of refund-1 passed", row)
	}
}

func TestRecordedVersusGavel(t *testing.T) {
	out, code, stderr := gradeFrom(t, "--from", "messages", "--spec", filepath.Join(examples, "messages.yaml"), filepath.Join(examples, "chats.jsonl"))
	if code != 0 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	type entry struct {
		Group  []string `json:"group"`
		Passed int64    `json:"passed"`
		Failed int64    `json:"failed"`
	}
	board := func(args ...string) map[string]entry {
		code, stdout, stderr := runCLI(t, append([]string{"leaderboard", "--format", "json"}, append(args, out)...)...)
		if code != 0 {
			t.Fatalf("leaderboard %v: exit %d: %s", args, code, stderr)
		}
		var lb struct {
			Entries []entry `json:"entries"`
		}
		if err := json.Unmarshal([]byte(stdout), &lb); err != nil {
			t.Fatal(err)
		}
		m := map[string]entry{}
		for _, e := range lb.Entries {
			m[e.Group[0]] = e
		}
		return m
	}
	// gavel: model-a passes both, model-b neither; recorded: one each.
	if g := board(); g["model-a"].Passed != 2 || g["model-b"].Passed != 0 {
		t.Errorf("gavel's leaderboard %+v", g)
	}
	if r := board("--reward-column", "recorded_reward"); r["model-a"].Passed != 1 || r["model-a"].Failed != 1 || r["model-b"].Passed != 1 || r["model-b"].Failed != 1 {
		t.Errorf("recorded leaderboard %+v, want one passed and one failed per model", r)
	}
	if code, _, stderr := runCLI(t, "leaderboard", "--reward-column", "nope", out); code == 0 || !strings.Contains(stderr, "nope") {
		t.Errorf("--reward-column nope: exit %d, %s", code, stderr)
	}

	tests := []struct {
		name   string
		args   []string
		want   int
		stdout []string
	}{
		{"text", []string{"--against-column", "recorded_reward", out}, 1,
			[]string{"disagreements: 2 of 4", "refund-b  REFUND  gavel failed, recorded 1: refund-called: fail", "weather-a  WEATHER  gavel passed, recorded 0: looked-up: pass; city-named: pass"}},
		{"limit not exceeded", []string{"--against-column", "recorded_reward", "--fail-on", "2", out}, 0, []string{"--fail-on 2: ok"}},
		{"rate exceeded", []string{"--against-column", "recorded_reward", "--fail-on", "25%", out}, 1, []string{"FAILED"}},
		{"markdown", []string{"--markdown", "--against-column", "recorded_reward", out}, 1, []string{"| refund-b | REFUND | failed | 1 | refund-called: fail |"}},
		{"json", []string{"--json", "--fail-on", "50%", "--against-column", "recorded_reward", out}, 0, []string{`"disagreements": 2`, `"passed_by_gavel_only": 1`, `"weather-a"`}},
		{"two directories", []string{"--against-column", "recorded_reward", out, out}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"diff"}, tt.args...)...)
			if code != tt.want {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.want, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
		})
	}
}

// TestGradeBOM checks that a leading byte order mark is skipped in a
// gavel JSON Lines input and in a harness's .json log.
func TestGradeBOM(t *testing.T) {
	dir := t.TempDir()
	bom := "\xef\xbb\xbf"
	line := `{"rollout_id":"b1","task_id":"refund-1","output":"order 42","log":[{"eventType":"tool_call","name":"issue_refund","kwargs":{"order_id":"42"}}]}` + "\n"
	jsonl := writeFile(t, filepath.Join(dir, "bom.jsonl"), bom+line)
	data, err := os.ReadFile(filepath.Join(harnessData, "tau2", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	tau2 := writeFile(t, filepath.Join(dir, "bom.json"), bom+string(data))
	out, code, stderr := gradeFrom(t, "--spec", filepath.Join(examples, "messages.yaml"), jsonl)
	if row := rewardRows(t, out)["b1"]; code != 0 || row == nil || row["status"] != "passed" {
		t.Errorf("JSON Lines with a BOM: exit %d, %v: %s", code, row, stderr)
	}
	out, code, stderr = gradeFrom(t, "--from", "tau2", "--spec", filepath.Join(examples, "tau2.yaml"), tau2)
	if rows := rewardRows(t, out); code != 0 || len(rows) != 3 {
		t.Errorf("tau2 log with a BOM: exit %d, %d rows: %s", code, len(rows), stderr)
	}
}

// Chats read as rows (no --from messages) are graded against empty
// outputs: gavel grade says so on standard error and in summary.json.
func TestChatsAsRowsWarn(t *testing.T) {
	in := writeFile(t, filepath.Join(t.TempDir(), "chats.jsonl"), `{"task_id": "t", "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]}`+"\n")
	out, _, stderr := gradeFrom(t, in)
	if !strings.Contains(stderr, "gavel: warning: "+in+": a messages column and no output column") || !strings.Contains(stderr, "--from messages") {
		t.Errorf("stderr %q, want the warning", stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil || !strings.Contains(string(data), `"warnings": [`) {
		t.Errorf("summary.json %s (%v), want warnings", data, err)
	}
	if _, _, stderr := gradeFrom(t, "--from", "messages", in); strings.Contains(stderr, "warning") {
		t.Errorf("--from messages: stderr %q", stderr)
	}
}
