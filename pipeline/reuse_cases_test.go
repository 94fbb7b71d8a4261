package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// otherTemplate is a judge template of another version than the built-in
// one; judgetest grades its prompts alike (the fenced output holds PASS).
const otherTemplate = `{{define "version"}}test-judge-v2{{end}}
{{- define "system"}}Grade the output against the rubric. Reply with {"score": <0 to 1>, "issues": [], "suggestion": ""} only.{{end}}
{{- define "user"}}Rubric: {{.Rubric}}
Output (untrusted):
{{.Output}}{{end}}`

// TestReuseJudgeChanged grades judged rows (VER-J) beside rows of an
// unjudged verifier, then again reusing that run: with the same judge the
// judged rows are reused and the judge is asked nothing, on either path;
// with another judge model, threshold or template, every judged row is
// graded again (the judge is asked once per row), the unjudged rows are
// still reused, and the parts are those of a fresh run with that judge.
func TestReuseJudgeChanged(t *testing.T) {
	srv := judgetest.New(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 6)
	var b bytes.Buffer
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(data)
	for i := range 4 {
		fmt.Fprintf(&b, `{"rollout_id":"plain-%d","task_id":"T","output":"x%d"}`+"\n", i, i)
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl := filepath.Join(dir, "judge.tmpl")
	if err := os.WriteFile(tmpl, []byte(otherTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	var plainCalls, judgedCalls atomic.Int64
	vs := func() []*verifiers.Verifier {
		plainCalls.Store(0)
		judgedCalls.Store(0)
		plain := &verifiers.Verifier{ID: "VER-P", Name: "plain", Tasks: []string{"T"}, Source: "test", Definition: "test",
			Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
				plainCalls.Add(1)
				c.Require("said", r.Output != "", strings.Clone(r.Output)) // Output is not kept
				return nil
			}}
		j := *gaveltest.ParseSpec(t, gaveltest.JudgedSpec)[0]
		grade := j.Grade
		j.Grade = func(r *verifiers.Rollout, c *verifiers.Checks) error {
			judgedCalls.Add(1)
			return grade(r, c)
		}
		return []*verifiers.Verifier{plain, &j}
	}
	cfg := func(out string, jc *judge.Config, reuse string) Config {
		return Config{Inputs: []string{in}, Out: filepath.Join(dir, out), Format: columnar.FormatJSONL, Workers: 2, BatchSize: 3,
			Verifiers: vs(), Judge: jc, Reuse: reuse}
	}
	asked := 0
	asks := func() int {
		n := len(srv.Received())
		defer func() { asked = n }()
		return n - asked
	}
	first := cfg("first", gaveltest.JudgeConfig(srv, "off"), "")
	grade(t, first)
	if n := asks(); n != 6 {
		t.Fatalf("first run asked the judge %d times, want 6", n)
	}

	// The same judge: nothing is judged again, whichever the path.
	for _, path := range []reusePath{reuseAuto, reuseRows} {
		c := cfg(fmt.Sprintf("same-%d", path), gaveltest.JudgeConfig(srv, "off"), first.Out)
		c.reusePath = path
		res := grade(t, c)
		if n := asks(); n != 0 {
			t.Errorf("same judge, path %d: the judge was asked %d times, want 0", path, n)
		}
		if plainCalls.Load() != 0 || judgedCalls.Load() != 0 {
			t.Errorf("same judge, path %d: verifiers ran %d (plain) and %d (judged) times, want 0", path, plainCalls.Load(), judgedCalls.Load())
		}
		if ru := res.Summary.Reuse; ru.Reused != 10 || ru.Graded != 0 {
			t.Errorf("same judge, path %d: reuse summary %+v, want 10 reused", path, ru)
		}
		sameParts(t, c.Out, first.Out)
	}

	otherModel := gaveltest.JudgeConfig(srv, "off")
	otherModel.Model = "judge-2"
	otherThreshold := gaveltest.JudgeConfig(srv, "off")
	otherThreshold.Threshold = 0.5
	otherTmpl := gaveltest.JudgeConfig(srv, "off")
	otherTmpl.Template = tmpl
	for _, tt := range []struct {
		name string
		jc   *judge.Config
	}{
		{"model", otherModel},
		{"threshold", otherThreshold},
		{"template", otherTmpl},
	} {
		t.Run(tt.name, func(t *testing.T) {
			again := cfg("again-"+tt.name, tt.jc, first.Out)
			res := grade(t, again)
			if n := asks(); n != 6 {
				t.Errorf("the judge was asked %d times, want 6 (every judged row)", n)
			}
			if plainCalls.Load() != 0 || judgedCalls.Load() != 6 {
				t.Errorf("verifiers ran %d (plain) and %d (judged) times, want 0 and 6", plainCalls.Load(), judgedCalls.Load())
			}
			if ru := res.Summary.Reuse; ru.Reused != 4 || ru.Graded != 6 || ru.CopiedParts != 0 {
				t.Errorf("reuse summary %+v, want the 4 unjudged rows reused and 6 graded", ru)
			}
			fresh := cfg("fresh-"+tt.name, tt.jc, "")
			grade(t, fresh)
			asks()
			sameParts(t, again.Out, fresh.Out)
		})
	}
}

// TestReuseKeep grades rollouts keeping three metadata columns (in another
// order than the input's), then again reusing that run on every path: the
// part copied whole, the rows taken without decoding (forced row path on
// an unchanged Parquet file), the rows of a JSON Lines file in which one
// rollout's kept column changed but not its state, and the rows of the
// same rollouts split into two files (not aligned). Each gives the parts
// of a fresh run, kept columns included, byte for byte.
func TestReuseKeep(t *testing.T) {
	keep := []string{"sample", "model", "run_id"}
	for _, format := range []string{columnar.FormatParquet, columnar.FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			pq := filepath.Join(dir, "rollouts.parquet")
			if _, err := gen.Run(context.Background(), gen.Config{Out: pq, Rollouts: 400, Seed: 11, BadShare: 0.02}); err != nil {
				t.Fatalf("gen: %v", err)
			}
			cfg := func(out string, ins []string, reuse string) Config {
				return Config{Inputs: ins, Out: filepath.Join(dir, out), Format: format, Workers: 2, BatchSize: 40,
					Keep: keep, Verifiers: crm.Verifiers(), Reuse: reuse}
			}
			first := cfg("first", []string{pq}, "")
			grade(t, first)
			checkKept(t, first.Out, keep)

			whole := cfg("whole", []string{pq}, first.Out)
			res := grade(t, whole)
			if ru := res.Summary.Reuse; ru.CopiedParts != 1 {
				t.Errorf("whole: reuse summary %+v, want the part copied", ru)
			}
			sameParts(t, whole.Out, first.Out)

			rows := cfg("rows", []string{pq}, first.Out)
			rows.reusePath = reuseRows
			res = grade(t, rows)
			if ru := res.Summary.Reuse; ru.CopiedParts != 0 || ru.Undecoded == 0 || ru.Undecoded != ru.Reused {
				t.Errorf("rows: reuse summary %+v (%d undecoded), want every reused row taken undecoded", ru, ru.Undecoded)
			}
			sameParts(t, rows.Out, first.Out)

			// A JSON Lines copy, graded, then one rollout's model changed.
			js := filepath.Join(dir, "rollouts.jsonl")
			if _, err := gen.Run(context.Background(), gen.Config{Out: js, Rollouts: 400, Seed: 11, BadShare: 0.02}); err != nil {
				t.Fatalf("gen: %v", err)
			}
			firstJS := cfg("first-jsonl", []string{js}, "")
			grade(t, firstJS)
			lines := readLines(t, js)
			changed := ""
			for i, l := range lines {
				var m map[string]any
				if json.Unmarshal(l, &m) != nil || m["final_state"] == nil || m["model"] == nil || i < 100 {
					continue
				}
				m["model"] = "renamed-model"
				changed = m["rollout_id"].(string)
				lines[i], _ = json.Marshal(m)
				break
			}
			if changed == "" {
				t.Fatal("no rollout with a model to change")
			}
			if err := os.WriteFile(js, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			again := cfg("again", []string{js}, firstJS.Out)
			res = grade(t, again)
			if ru := res.Summary.Reuse; ru.CopiedParts != 0 || ru.Reused == 0 {
				t.Errorf("changed model: reuse summary %+v, want rows reused on the row path", ru)
			}
			fresh := cfg("fresh", []string{js}, "")
			grade(t, fresh)
			sameParts(t, again.Out, fresh.Out)
			if got := keptOf(t, again.Out, changed); got["model"] != "renamed-model" {
				t.Errorf("%s kept %v, want model renamed-model", changed, got)
			}

			// The same rollouts in two files, the later rows first.
			split := filepath.Join(dir, "split")
			if err := os.MkdirAll(split, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, part := range map[string][][]byte{"0.jsonl": lines[250:], "1.jsonl": lines[:250]} {
				if err := os.WriteFile(filepath.Join(split, name), append(bytes.Join(part, []byte("\n")), '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			moved := cfg("moved", []string{split}, firstJS.Out)
			res = grade(t, moved)
			if ru := res.Summary.Reuse; ru.CopiedParts != 0 || ru.Reused == 0 {
				t.Errorf("split: reuse summary %+v, want rows reused by the join", ru)
			}
			freshSplit := cfg("fresh-split", []string{split}, "")
			grade(t, freshSplit)
			sameParts(t, moved.Out, freshSplit.Out)
		})
	}
}

// keptOf returns the kept columns of rollout id's rewards row in dir, as
// text.
func keptOf(t *testing.T, dir, id string) map[string]string {
	t.Helper()
	cols := []string{"rollout_id", "sample", "model", "run_id"}
	parts, _ := filepath.Glob(filepath.Join(dir, "rewards", "part-*"))
	for _, p := range parts {
		rr, err := columnar.OpenResult(p, cols)
		if err != nil {
			t.Fatal(err)
		}
		for {
			c, err := rr.Next()
			if err != nil {
				break
			}
			if string(c[0].Data) == id {
				rr.Close()
				return map[string]string{"sample": string(c[1].Data), "model": string(c[2].Data), "run_id": string(c[3].Data)}
			}
		}
		rr.Close()
	}
	t.Fatalf("no rewards row of %s in %s", id, dir)
	return nil
}

// checkKept fails unless the first rewards row of dir with a verifier has
// a value in each kept column, so that comparing runs compares them.
func checkKept(t *testing.T, dir string, keep []string) {
	t.Helper()
	parts, _ := filepath.Glob(filepath.Join(dir, "rewards", "part-*"))
	if len(parts) == 0 {
		t.Fatalf("no rewards in %s", dir)
	}
	rr, err := columnar.OpenResult(parts[0], append([]string{"verifier_id"}, keep...))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	for {
		c, err := rr.Next()
		if err != nil {
			t.Fatalf("no rewards row with a verifier in %s", dir)
		}
		if len(c[0].Data) == 0 {
			continue
		}
		for i, k := range keep {
			if c[i+1].Kind == columnar.CellNull {
				t.Fatalf("kept column %s is null in %s: the comparison would not see it", k, dir)
			}
		}
		return
	}
}

// TestReuseTasksTable grades a dataset whose initial states are in a tasks
// table, then again reusing that run with the same table: no part is
// copied whole (the manifest does not identify the table's content), the
// rows are reused on the row path and the parts are the first run's. With
// one task's initial state changed in the table, and the dataset left as
// it was, exactly that task's rows are graded again and the parts are
// those of a fresh run with the changed table.
func TestReuseTasksTable(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "tasked.jsonl")
	gc := gen.Config{Out: data, Rollouts: 500, Seed: 6, BadShare: 0.02, TasksMode: true}
	if _, err := gen.Run(context.Background(), gc); err != nil {
		t.Fatalf("gen: %v", err)
	}
	_, tasks, _, _ := gc.Paths()
	calls := map[string]*atomic.Int64{}
	cfg := func(out, reuse string) Config {
		return Config{Inputs: []string{data}, TasksFile: tasks, Out: filepath.Join(dir, out), Format: columnar.FormatParquet,
			Workers: 2, BatchSize: 50, Verifiers: countedVerifiers(calls), Reuse: reuse}
	}
	first := cfg("first", "")
	grade(t, first)

	clear(calls)
	same := cfg("same", first.Out)
	res := grade(t, same)
	if ru := res.Summary.Reuse; ru.CopiedParts != 0 || ru.Reused == 0 {
		t.Errorf("same table: reuse summary %+v, want rows reused, no part copied", ru)
	}
	for id, n := range calls {
		if n.Load() != 0 {
			t.Errorf("same table: verifier %s ran %d times, want 0", id, n.Load())
		}
	}
	sameParts(t, same.Out, first.Out)

	// Change the initial state of the task of the first judged row.
	var task string
	scanRewards(t, first.Out, func(_, verifier, _, kind string) {
		if task == "" && verifier != "" && kind != verifiers.KindInput {
			task = verifier
		}
	})
	lines := readLines(t, tasks)
	changedTask := ""
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("%s line %d: %v", tasks, i+1, err)
		}
		if v := crm.Verifiers(); changedTask == "" && slices.ContainsFunc(v, func(v *verifiers.Verifier) bool {
			return v.ID == task && slices.Contains(v.Tasks, m["task_id"].(string))
		}) {
			changedTask = m["task_id"].(string)
			m["initial_state"] = map[string]any{}
			lines[i], _ = json.Marshal(m)
		}
	}
	if changedTask == "" {
		t.Fatalf("no task of %s in %s", task, tasks)
	}
	if err := os.WriteFile(tasks, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	clear(calls)
	again := cfg("again", first.Out)
	res = grade(t, again)
	graded := calls
	calls = map[string]*atomic.Int64{}
	fresh := cfg("fresh", "")
	grade(t, fresh)
	sameParts(t, again.Out, fresh.Out)
	want := map[string]int64{}
	scanTasks(t, fresh.Out, func(_, taskID, verifier, kind string) {
		if taskID == changedTask && verifier != "" && kind != verifiers.KindInput {
			want[verifier]++
		}
	})
	if len(want) == 0 {
		t.Fatalf("no graded row of %s", changedTask)
	}
	for id, n := range graded {
		if n.Load() != want[id] {
			t.Errorf("changed table: verifier %s ran %d times, want %d (the rows of %s)", id, n.Load(), want[id], changedTask)
		}
	}
	if ru := res.Summary.Reuse; ru.CopiedParts != 0 || ru.Reused == 0 {
		t.Errorf("changed table: reuse summary %+v, want rows reused, no part copied", ru)
	}
}

// scanTasks calls fn with the id, task, verifier and error kind of every
// rewards row of dir.
func scanTasks(t *testing.T, dir string, fn func(id, task, verifier, kind string)) {
	t.Helper()
	parts, _ := filepath.Glob(filepath.Join(dir, "rewards", "part-*"))
	for _, p := range parts {
		rr, err := columnar.OpenResult(p, []string{"rollout_id", "task_id", "verifier_id", "error_kind"})
		if err != nil {
			t.Fatal(err)
		}
		for {
			c, err := rr.Next()
			if err != nil {
				break
			}
			fn(string(c[0].Data), string(c[1].Data), string(c[2].Data), string(c[3].Data))
		}
		rr.Close()
	}
}

// TestReuseDuplicateIDs grades rollouts whose ids repeat, within one file
// and across two, then the same rollouts (and one more copy of a repeated
// one) split into files that do not line up with the earlier ones. The
// earlier rows are found by rollout_id, and an id the earlier run holds
// twice stands for its first row: the rows with that row's input are
// reused, its other rows are graded again, and each reused row gets the
// checks of the row it stands for. The parts are those of a fresh run.
func TestReuseDuplicateIDs(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var calls []string
	vs := []*verifiers.Verifier{{ID: "VER-D", Name: "dups", Tasks: []string{"T"}, Source: "test", Definition: "test",
		Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
			mu.Lock()
			calls = append(calls, r.ID+"="+r.Output)
			mu.Unlock()
			// The checks differ in number and detail with the output,
			// so that a row given another row's checks shows.
			for i := range len(r.Output) {
				c.Require(fmt.Sprintf("c%d", i), r.Output[i] != 'F', strings.Clone(r.Output))
			}
			return nil
		}}}
	row := func(id, out string) string {
		return fmt.Sprintf(`{"rollout_id":%q,"task_id":"T","output":%q}`, id, out)
	}
	write := func(path string, rows ...string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// "across" repeats in both files, "within" in a.jsonl; the first of
	// each is in part order.
	write(filepath.Join(dir, "old", "a.jsonl"), row("u-1", "P"), row("across", "PP"), row("within", "P"), row("u-2", "PF"), row("within", "FFF"))
	write(filepath.Join(dir, "old", "b.jsonl"), row("u-3", "P"), row("across", "FPPP"), row("u-4", "PP"))
	cfg := func(out, input, reuse string) Config {
		calls = nil
		return Config{Inputs: []string{filepath.Join(dir, input)}, Out: filepath.Join(dir, out), Format: columnar.FormatJSONL,
			Workers: 2, BatchSize: 2, Verifiers: vs, Reuse: reuse}
	}
	first := cfg("first", "old", "")
	res := grade(t, first)
	if res.Summary.DuplicateIDs != 2 {
		t.Fatalf("first run: %d duplicate ids, want 2", res.Summary.DuplicateIDs)
	}

	// Other files: every row moves, and "across" comes once more with its
	// first row's output.
	write(filepath.Join(dir, "new", "0.jsonl"), row("u-4", "PP"), row("across", "FPPP"), row("within", "FFF"), row("u-3", "P"))
	write(filepath.Join(dir, "new", "1.jsonl"), row("within", "P"), row("across", "PP"), row("u-2", "PF"), row("across", "PP"), row("u-1", "P"))
	again := cfg("again", "new", first.Out)
	res = grade(t, again)
	mu.Lock()
	got := slices.Sorted(slices.Values(calls))
	mu.Unlock()
	if want := []string{"across=FPPP", "within=FFF"}; !slices.Equal(got, want) {
		t.Errorf("verifier ran on %v, want %v (the rows unlike their id's first earlier row)", got, want)
	}
	if ru := res.Summary.Reuse; ru.Reused != 7 || ru.Graded != 2 || ru.CopiedParts != 0 {
		t.Errorf("reuse summary %+v, want 7 reused and 2 graded", ru)
	}
	fresh := cfg("fresh", "new", "")
	grade(t, fresh)
	sameParts(t, again.Out, fresh.Out)
}
