package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/judgetest"
)

// judgedCheck is a check row's judge columns as read back.
type judgedCheck struct {
	Status     string
	Score      any // float64 or nil
	Issues     any // []string or nil
	Suggestion any // string or nil
}

// calendarJudgedSpec is the built-in calendar spec with a rubric check
// whose judge model the spec names (no run-wide model), with a query
// expression and a context of the final events.
func calendarJudgedSpec(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join("..", "verifiers", "spec", "calendar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rubric := `    judge: {model: judge-cal, threshold: 0.5}
    checks:
      - id: answer-judged
        type: rubric
        rubric: The answer says which meeting was created and on which day.
        query: {expr: "'Create a ' + 'Team Meeting on 2024-11-20'"}
        context:
          - events: "final.events"
`
	text := strings.Replace(string(data), "    checks:\n", rubric, 1)
	if text == string(data) {
		t.Fatal("calendar.yaml has no checks: line")
	}
	return text
}

// TestJudgeCalendarFormats grades a generated calendar dataset with a
// judged spec in the three output formats and reads the judge columns back
// with parquet-go, arrow-go's IPC reader and encoding/json: the same
// values, null for unjudged checks.
func TestJudgeCalendarFormats(t *testing.T) {
	srv := judgetest.New(t)
	srv.Script(func(req judgetest.Request) judgetest.Reply {
		out, _ := judgetest.FencedOutput(req.User)
		if strings.Contains(out, "created") && strings.Contains(req.User, `"name": "events"`) && strings.Contains(req.User, "Team Meeting on 2024-11-20") {
			return judgetest.Reply{Body: judgetest.Completion(req.Model, judgetest.Verdict(0.75, []string{"no time given"}, "Name the time."))}
		}
		return judgetest.Reply{Body: judgetest.Completion(req.Model, judgetest.Verdict(0.25, []string{"nothing created"}, ""))}
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "cal.parquet")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.GenerateCalendar(context.Background(), gen.CalendarConfig{Rollouts: 80, Seed: 5}, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	vs := gaveltest.ParseSpec(t, calendarJudgedSpec(t))
	var byFormat []map[string]judgedCheck
	for _, format := range []string{columnar.FormatJSONL, columnar.FormatParquet, columnar.FormatArrow} {
		out := filepath.Join(dir, format)
		// No run-wide model: the spec's judge.model turns judging on.
		grade(t, Config{Inputs: []string{in}, Out: out, Format: format, Verifiers: vs,
			Judge: &judge.Config{BaseURL: srv.URL, CacheDir: filepath.Join(dir, "cache"), MaxRetries: -1}, Workers: 2, BatchSize: 16})
		path := filepath.Join(out, "checks", columnar.PartName(0, format))
		var got map[string]judgedCheck
		switch format {
		case columnar.FormatJSONL:
			got = readJudgedJSONL(t, path)
		case columnar.FormatParquet:
			got = readJudgedParquet(t, path)
		case columnar.FormatArrow:
			got = readJudgedArrow(t, path)
		}
		byFormat = append(byFormat, got)
	}
	want := byFormat[0]
	pass, fail := 0, 0
	for k, c := range want {
		switch {
		case !strings.HasSuffix(k, "/answer-judged"):
			if c.Score != nil || c.Issues != nil || c.Suggestion != nil {
				t.Errorf("%s: judge columns %+v, want null", k, c)
			}
		case c.Status == "pass":
			pass++
			if diff := cmp.Diff(judgedCheck{"pass", 0.75, []string{"no time given"}, "Name the time."}, c); diff != "" {
				t.Errorf("%s (-want +got):\n%s", k, diff)
			}
		default:
			fail++
			if diff := cmp.Diff(judgedCheck{"fail", 0.25, []string{"nothing created"}, ""}, c); diff != "" {
				t.Errorf("%s (-want +got):\n%s", k, diff)
			}
		}
	}
	if pass == 0 || fail == 0 {
		t.Errorf("%d judged checks passed and %d failed, want some of each", pass, fail)
	}
	for i, name := range []string{"parquet", "arrow"} {
		if diff := cmp.Diff(want, byFormat[i+1]); diff != "" {
			t.Errorf("%s read back differs from jsonl (-jsonl +%s):\n%s", name, name, diff)
		}
	}
}

func readJudgedJSONL(t *testing.T, path string) map[string]judgedCheck {
	m := map[string]judgedCheck{}
	for _, r := range gaveltest.DecodeJSONL(t, path) {
		c := judgedCheck{Status: r["status"].(string), Score: r["score"], Suggestion: r["suggestion"]}
		if l, ok := r["issues"].([]any); ok {
			s := []string{}
			for _, e := range l {
				s = append(s, e.(string))
			}
			c.Issues = s
		}
		m[r["rollout_id"].(string)+"/"+r["check_id"].(string)] = c
	}
	return m
}

func readJudgedParquet(t *testing.T, path string) map[string]judgedCheck {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	cols := pf.Schema().Columns()
	r := parquet.NewReader(pf)
	defer r.Close()
	m := map[string]judgedCheck{}
	buf := make([]parquet.Row, 16)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			var id, check string
			var c judgedCheck
			for _, v := range row {
				switch cols[v.Column()][0] {
				case "rollout_id":
					id = string(v.ByteArray())
				case "check_id":
					check = string(v.ByteArray())
				case "status":
					c.Status = string(v.ByteArray())
				case "score":
					if !v.IsNull() {
						c.Score = v.Double()
					}
				case "suggestion":
					if !v.IsNull() {
						c.Suggestion = string(v.ByteArray())
					}
				case "issues":
					switch {
					case v.IsNull() && v.DefinitionLevel() == 0:
					case v.IsNull():
						c.Issues = []string{}
					default:
						l, _ := c.Issues.([]string)
						c.Issues = append(l, string(v.ByteArray()))
					}
				}
			}
			m[id+"/"+check] = c
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func readJudgedArrow(t *testing.T, path string) map[string]judgedCheck {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	idx := map[string]int{}
	for i, fl := range r.Schema().Fields() {
		idx[fl.Name] = i
	}
	str := func(a any, i int) string {
		switch s := a.(type) {
		case *array.String:
			return s.Value(i)
		case *array.Dictionary:
			return s.Dictionary().(*array.String).Value(s.GetValueIndex(i))
		}
		t.Fatalf("unexpected string array %T", a)
		return ""
	}
	m := map[string]judgedCheck{}
	for b := 0; b < r.NumRecords(); b++ {
		rec, err := r.RecordBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		cols := rec.Columns()
		for i := 0; i < int(rec.NumRows()); i++ {
			c := judgedCheck{Status: str(cols[idx["status"]], i)}
			if s := cols[idx["score"]].(*array.Float64); !s.IsNull(i) {
				c.Score = s.Value(i)
			}
			if s := cols[idx["suggestion"]]; !s.IsNull(i) {
				c.Suggestion = str(s, i)
			}
			if l := cols[idx["issues"]].(*array.List); !l.IsNull(i) {
				start, end := l.ValueOffsets(i)
				vals := l.ListValues().(*array.String)
				s := []string{}
				for k := start; k < end; k++ {
					s = append(s, vals.Value(int(k)))
				}
				c.Issues = s
			}
			m[fmt.Sprintf("%s/%s", str(cols[idx["rollout_id"]], i), str(cols[idx["check_id"]], i))] = c
		}
	}
	return m
}
