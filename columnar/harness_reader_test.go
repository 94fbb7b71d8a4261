package columnar

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/gzip"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

func TestJSONLReaderBOM(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("\xef\xbb\xbf{\"a\":1}\n{\"b\":2}\n"))
	zw.Close()
	for _, tt := range []struct {
		name string
		text string
	}{{"x.jsonl", "\xef\xbb\xbf{\"a\":1}\n{\"b\":2}\n"}, {"x.jsonl.gz", gz.String()}} {
		r, err := NewJSONLReader(tt.name, strings.NewReader(tt.text), Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := readAllLines(t, r, 10)
		want := []lineRow{{Index: 0, Offset: 3, Line: `{"a":1}`}, {Index: 1, Offset: 11, Line: `{"b":2}`}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: lines (-want +got):\n%s", tt.name, diff)
		}
	}
	// Only a leading mark is skipped.
	r, _ := NewJSONLReader("x.jsonl", strings.NewReader("{\"a\":1}\n\xef\xbb\xbf{\"b\":2}\n"), Options{})
	got := readAllLines(t, r, 10)
	row := Row{Index: 1, Line: []byte(got[1].Line)}
	fields := FieldNames{}.WithDefaults()
	var doc jsonview.Doc
	if _, err := DecodeLine(&row, &fields, &doc); err == nil {
		t.Errorf("a mark inside the stream decoded")
	}
}

func TestResolveName(t *testing.T) {
	tests := []struct {
		name, from, want string
		ok               bool
	}{
		{"run.eval", "", InputInspect, true},
		{"run.EVAL", "tau2", InputInspect, true},
		{"log.json", "", "", false},
		{"log.json", "inspect", InputInspect, true},
		{"results.json.gz", "tau2", InputTau2, true},
		{"results.json", "tau-bench", InputTauBench, true},
		{"results.json", "messages", "", false},
		{"chats.jsonl", "", InputJSONL, true},
		{"chats.jsonl", "tau2", InputJSONL, true},
		{"chats.jsonl.zst", "messages", InputMessages, true},
		{"data.parquet", "messages", InputParquet, true},
		{"out/rollouts.jsonl", "nemo-gym", InputNemoGym, true},
		{"out/rollouts_failures.jsonl.zst", "nemo-gym", InputNemoGym, true},
		{"out/rollouts_materialized_inputs.jsonl", "nemo-gym", "", false},
		{"out/rollouts_materialized_inputs.jsonl.gz", "nemo-gym", "", false},
		{"out/rollouts_aggregate_metrics.json", "nemo-gym", "", false},
		{"out/rollouts.parquet", "nemo-gym", InputParquet, true},
		{"trial/agent/trajectory.json", "atif", InputATIF, true},
		{"trial/agent/trajectory.cont-1.json.gz", "atif", InputATIF, true},
		{"trial/result.json", "atif", "", false},
		{"trajectories.jsonl", "atif", InputATIF, true},
		{"out/rollouts.jsonl", "", InputJSONL, true},
	}
	for _, tt := range tests {
		got, ok := Resolve(Source{Name: tt.name, From: tt.from})
		if got != tt.want || ok != tt.ok {
			t.Errorf("Resolve(name %q, from %q) = %q, %v; want %q, %v", tt.name, tt.from, got, ok, tt.want, tt.ok)
		}
	}
}

// TestDescribeHarness checks that a log is described by its first
// rollout's members, and read through its unit as JSON Lines rows with
// the task rows and the errors of the elements.
func TestDescribeHarness(t *testing.T) {
	path := filepath.Join("harness", "testdata", "tau-bench", "tool-calling-gpt-4o-0.0_range_0--1.json")
	in, err := Describe(path, DescribeOptions{From: InputTauBench})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rollout_id", "task_id", "output", "log", "trial", "recorded_reward", "recorded_scores"}; in.Format != InputTauBench || !cmp.Equal(in.Columns, want) {
		t.Errorf("Describe: format %s, columns %v; want %s, %v", in.Format, in.Columns, InputTauBench, want)
	}
	r, err := in.Open(in.Units[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var tasks, errs []string
	for {
		b, err := r.Next(2)
		if err != nil {
			break
		}
		for _, row := range b.Rows {
			tasks = append(tasks, string(row.TaskRow[:min(len(row.TaskRow), 16)]))
			if row.Err != nil {
				errs = append(errs, row.Err.Error())
			}
		}
		b.Release()
	}
	if want := []string{`{"task_id":"0","`, `{"task_id":"3","`, `{"task_id":"0","`, ``}; !cmp.Equal(tasks, want) {
		t.Errorf("task rows %q, want %q", tasks, want)
	}
	if want := []string{path + ": element 3: task_id is null, not a string or number"}; !cmp.Equal(errs, want) {
		t.Errorf("errors %q, want %q", errs, want)
	}
}

// TestHarnessRowErrors checks that the bad lines of NeMo Gym rollouts and
// of ATIF trajectories are rows whose errors name the file, the line and
// its byte offset, among rows graded as usual.
func TestHarnessRowErrors(t *testing.T) {
	tests := []struct {
		file, from string
		rows       int
		errs       []string
	}{
		{"nemo-gym/run/rollouts.jsonl", InputNemoGym, 5, []string{
			"line 3 (byte 1584): invalid JSON at byte 69 of the line: invalid character '}' looking for beginning of value",
			"line 5 (byte 2799): _ng_task_index is null, not a number or string"}},
		{"atif/batch.jsonl", InputATIF, 3, []string{
			"line 2 (byte 654): invalid JSON at byte 160 of the line: invalid character ']' looking for beginning of value"}},
	}
	for _, tt := range tests {
		path := filepath.Join("harness", "testdata", tt.file)
		in, err := Describe(path, DescribeOptions{From: tt.from})
		if err != nil {
			t.Fatal(err)
		}
		r, err := in.Open(in.Units[0], Options{})
		if err != nil {
			t.Fatal(err)
		}
		var errs []string
		rows := 0
		for {
			b, err := r.Next(2)
			if err != nil {
				break
			}
			for _, row := range b.Rows {
				rows++
				if row.Err != nil {
					errs = append(errs, row.Err.Error())
				}
			}
			b.Release()
		}
		r.Close()
		for i := range tt.errs {
			tt.errs[i] = path + ": " + tt.errs[i]
		}
		if rows != tt.rows || !cmp.Equal(errs, tt.errs) {
			t.Errorf("%s: %d rows, errors %q; want %d, %q", tt.file, rows, errs, tt.rows, tt.errs)
		}
	}
}
