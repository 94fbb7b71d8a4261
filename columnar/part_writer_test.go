package columnar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	aparquet "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// outCol describes one expected output column.
type outCol struct {
	Name     string
	Kind     string // string, bool, double, int32, int64
	Nullable bool
}

var testKeep = []string{"model", "run_id"}

func wantRewardCols(keep []string) []outCol {
	cols := []outCol{
		{"rollout_id", "string", false},
		{"task_id", "string", false},
		{"verifier_id", "string", true},
		{"status", "string", false},
		{"passed", "bool", true},
		{"reward", "double", true},
		{"checks_total", "int32", false},
		{"checks_passed", "int32", false},
		{"required_total", "int32", false},
		{"required_passed", "int32", false},
		{"error_kind", "string", true},
		{"error", "string", true},
		{"source_file", "string", false},
		{"source_row", "int64", false},
		{"input_hash", "string", true},
	}
	for _, k := range keep {
		cols = append(cols, outCol{k, "string", true})
	}
	return cols
}

var wantCheckCols = []outCol{
	{"rollout_id", "string", false},
	{"task_id", "string", false},
	{"verifier_id", "string", true},
	{"check_index", "int32", false},
	{"check_id", "string", false},
	{"label", "string", false},
	{"required", "bool", false},
	{"status", "string", false},
	{"detail", "string", false},
	{"actual", "string", true},
	{"expected", "string", true},
	{"score", "double", true},
	{"issues", "strings", true},
	{"suggestion", "string", true},
}

// testRewards covers every null and non-null case of every nullable column,
// including a row with fewer keep values than keep columns.
func testRewards() []RewardRow {
	return []RewardRow{
		{
			RolloutID: "r0", TaskID: "crm-1", VerifierID: Str("crm"), Status: "passed",
			Passed: true, PassedValid: true, Reward: 1, RewardValid: true,
			ChecksTotal: 3, ChecksPassed: 3, RequiredTotal: 2, RequiredPassed: 2,
			SourceFile: "in/a.parquet", SourceRow: 0, InputHash: 0x0123456789abcdef, InputHashValid: true,
			Keep: []NullString{Str("gpt"), Str("run-1")},
		},
		{
			RolloutID: "r1", TaskID: "crm-1", VerifierID: Str("crm"), Status: "failed",
			Passed: false, PassedValid: true, Reward: 0.5, RewardValid: true,
			ChecksTotal: 4, ChecksPassed: 2, RequiredTotal: 2, RequiredPassed: 1,
			SourceFile: "in/a.parquet", SourceRow: 1, InputHash: 0, InputHashValid: true,
			Keep: []NullString{{}, Str("run-1")},
		},
		{
			RolloutID: "r2", TaskID: "cal-7", VerifierID: Str("cal"), Status: "pending",
			ChecksTotal: 2, ChecksPassed: 1, RequiredTotal: 1, RequiredPassed: 1,
			SourceFile: "in/a.parquet", SourceRow: 2,
			Keep: []NullString{Str("claude"), {}},
		},
		{
			RolloutID: "in/a.parquet#3", TaskID: "nope", Status: "error",
			ErrorKind: Str("no_verifier"), Error: Str(`no verifier binds task "nope"`),
			SourceFile: "in/a.parquet", SourceRow: 3, InputHash: 7, // not valid: written as null
		},
		{
			RolloutID: "r4", TaskID: "crm-2", VerifierID: Str("crm"), Status: "error",
			ErrorKind: Str("verifier"), Error: Str("panic: index out of range\n\tat line 3"),
			SourceFile: "in/b.jsonl", SourceRow: 1 << 40, InputHash: math.MaxUint64, InputHashValid: true,
			Keep: []NullString{Str("ünïcode ✓ \"q\" \\ <&>"), Str("")},
		},
		{
			RolloutID: "", TaskID: "t", VerifierID: Str(""), Status: "passed",
			Passed: true, PassedValid: true, Reward: 1.0 / 3, RewardValid: true,
			ChecksTotal: math.MaxInt32, ChecksPassed: 0, RequiredTotal: 1, RequiredPassed: 1,
			SourceFile: "-", SourceRow: 9,
			Keep: []NullString{Str("m"), Str("x")},
		},
		{
			RolloutID: "r6", TaskID: "t", VerifierID: Str("v"), Status: "failed",
			Passed: false, PassedValid: true, Reward: 0, RewardValid: true,
			ChecksTotal: 1, RequiredTotal: 1,
			SourceFile: "in/c.jsonl", SourceRow: 6,
			Keep: []NullString{Str("m")},
		},
	}
}

func testChecks() []CheckRow {
	return []CheckRow{
		{RolloutID: "r0", TaskID: "crm-1", VerifierID: Str("crm"), CheckIndex: 0, CheckID: "moved",
			Label: "deals moved", Required: true, Status: "pass", Detail: "2 of 2 moved",
			Actual: Str("2"), Expected: Str("2")},
		{RolloutID: "r0", TaskID: "crm-1", VerifierID: Str("crm"), CheckIndex: 1, CheckID: "note",
			Label: "note added", Required: false, Status: "pass", Detail: "",
			Actual: Str(`{"a":[1,2]}`)},
		{RolloutID: "r1", TaskID: "crm-1", VerifierID: Str("crm"), CheckIndex: 0, CheckID: "moved",
			Label: "deals moved", Required: true, Status: "fail", Detail: "0 of 2 moved",
			Expected: Str(`"x\ny"`)},
		{RolloutID: "r2", TaskID: "cal-7", CheckIndex: 0, CheckID: "rubric",
			Label: "tone ✓", Required: false, Status: "pending", Detail: "tab\there"},
		{RolloutID: "r2", TaskID: "cal-7", VerifierID: Str(""), CheckIndex: 1, CheckID: "e",
			Label: "l", Required: true, Status: "error", Detail: "boom", Actual: Str(""), Expected: Str("null")},
		{RolloutID: "r3", TaskID: "cal-7", VerifierID: Str("cal"), CheckIndex: 0, CheckID: "tone",
			Label: "tone", Required: true, Status: "pass", Detail: "score 0.9",
			Score: 0.9, ScoreValid: true, Issues: []string{"terse", `"quoted"`}, IssuesValid: true, Suggestion: Str("say more")},
		{RolloutID: "r3", TaskID: "cal-7", VerifierID: Str("cal"), CheckIndex: 1, CheckID: "facts",
			Label: "facts", Required: true, Status: "fail", Detail: "score 0",
			Score: 0, ScoreValid: true, Issues: []string{}, IssuesValid: true, Suggestion: Str("")},
	}
}

// rewardValues returns rows as the values a reader should return, nil for null.
func rewardValues(rows []RewardRow, keep int) [][]any {
	ns := func(s NullString) any {
		if !s.Valid {
			return nil
		}
		return s.S
	}
	var out [][]any
	for _, r := range rows {
		var passed, reward, hash any
		if r.InputHashValid {
			hash = FormatHash(r.InputHash)
		}
		if r.PassedValid {
			passed = r.Passed
		}
		if r.RewardValid {
			reward = r.Reward
		}
		v := []any{r.RolloutID, r.TaskID, ns(r.VerifierID), r.Status, passed, reward,
			r.ChecksTotal, r.ChecksPassed, r.RequiredTotal, r.RequiredPassed,
			ns(r.ErrorKind), ns(r.Error), r.SourceFile, r.SourceRow, hash}
		for i := range keep {
			var k NullString
			if i < len(r.Keep) {
				k = r.Keep[i]
			}
			v = append(v, ns(k))
		}
		out = append(out, v)
	}
	return out
}

func checkValues(rows []CheckRow) [][]any {
	ns := func(s NullString) any {
		if !s.Valid {
			return nil
		}
		return s.S
	}
	nf := func(f float64, ok bool) any {
		if !ok {
			return nil
		}
		return f
	}
	nl := func(l []string, ok bool) any {
		if !ok {
			return nil
		}
		return append([]string{}, l...)
	}
	var out [][]any
	for _, r := range rows {
		out = append(out, []any{r.RolloutID, r.TaskID, ns(r.VerifierID), r.CheckIndex,
			r.CheckID, r.Label, r.Required, r.Status, r.Detail, ns(r.Actual), ns(r.Expected),
			nf(r.Score, r.ScoreValid), nl(r.Issues, r.IssuesValid), ns(r.Suggestion)})
	}
	return out
}

// writeTestPart writes a part and returns the paths of its rewards and
// checks files. Rows are written in calls of step rows (all at once when
// step is 0), rewards and checks interleaved as the pipeline does.
func writeTestPart(t testing.TB, dir string, index int, opts PartOptions, rewards []RewardRow, checks []CheckRow, step int) (string, string) {
	t.Helper()
	p, err := CreatePart(dir, index, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abort()
	rs, cs := step, step
	if step == 0 {
		rs, cs = max(len(rewards), 1), max(len(checks), 1)
	}
	for len(rewards) > 0 || len(checks) > 0 {
		n := min(rs, len(rewards))
		if err := p.WriteRewards(rewards[:n]); err != nil {
			t.Fatal(err)
		}
		rewards = rewards[n:]
		n = min(cs, len(checks))
		if err := p.WriteChecks(checks[:n]); err != nil {
			t.Fatal(err)
		}
		checks = checks[n:]
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	name := PartName(index, opts.Format)
	return filepath.Join(dir, "rewards", name), filepath.Join(dir, "checks", name)
}

func TestPartName(t *testing.T) {
	tests := []struct {
		index  int
		format string
		want   string
	}{
		{0, FormatParquet, "part-00000.parquet"},
		{42, FormatParquet, "part-00042.parquet"},
		{99999, FormatArrow, "part-99999.arrow"},
		{100000, FormatJSONL, "part-100000.jsonl"},
		{1234567, FormatJSONL, "part-1234567.jsonl"},
	}
	for _, tt := range tests {
		if got := PartName(tt.index, tt.format); got != tt.want {
			t.Errorf("PartName(%d, %q) = %q, want %q", tt.index, tt.format, got, tt.want)
		}
	}
}

func TestCreatePartErrors(t *testing.T) {
	tests := []struct {
		name  string
		index int
		opts  PartOptions
		want  string
	}{
		{"no format", 0, PartOptions{}, `unknown format ""`},
		{"bad format", 0, PartOptions{Format: "csv"}, `unknown format "csv"`},
		{"negative index", -1, PartOptions{Format: FormatJSONL}, "negative index"},
		{"negative rows", 0, PartOptions{Format: FormatParquet, RowGroupRows: -1}, "negative row group length"},
		{"keep fixed column", 0, PartOptions{Format: FormatParquet, Keep: []string{"model", "status"}}, `keep column "status"`},
		{"keep twice", 0, PartOptions{Format: FormatArrow, Keep: []string{"model", "model"}}, `keep column "model"`},
		{"keep empty", 0, PartOptions{Format: FormatJSONL, Keep: []string{""}}, "empty keep column name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := CreatePart(dir, tt.index, tt.opts)
			if err == nil {
				p.Abort()
				t.Fatalf("CreatePart(%+v) = nil error, want %q", tt.opts, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CreatePart(%+v) = %q, want it to contain %q", tt.opts, err, tt.want)
			}
			if got := partFiles(t, dir); len(got) != 0 {
				t.Errorf("files left after failed CreatePart: %q", got)
			}
		})
	}
}

// partFiles returns the files below dir, relative to it.
func partFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestPartLifecycle(t *testing.T) {
	for _, format := range []string{FormatParquet, FormatArrow, FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			opts := PartOptions{Format: format, Keep: testKeep, alloc: mem}

			// Closed part: temporary names until Close, final names after.
			p, err := CreatePart(dir, 7, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.WriteRewards(testRewards()); err != nil {
				t.Fatal(err)
			}
			if err := p.WriteChecks(testChecks()); err != nil {
				t.Fatal(err)
			}
			name := PartName(7, format)
			tmp := []string{"checks/." + name + ".tmp", "rewards/." + name + ".tmp"}
			if diff := cmp.Diff(tmp, partFiles(t, dir)); diff != "" {
				t.Errorf("files before Close (-want +got):\n%s", diff)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			final := []string{"checks/" + name, "rewards/" + name}
			if diff := cmp.Diff(final, partFiles(t, dir)); diff != "" {
				t.Errorf("files after Close (-want +got):\n%s", diff)
			}
			if err := p.Close(); err == nil {
				t.Error("second Close = nil error, want an error")
			}
			if err := p.WriteRewards(testRewards()); err == nil {
				t.Error("WriteRewards after Close = nil error, want an error")
			}
			p.Abort() // no effect after Close
			if diff := cmp.Diff(final, partFiles(t, dir)); diff != "" {
				t.Errorf("files after Close and Abort (-want +got):\n%s", diff)
			}

			// Aborted part, with a row group written and one buffered:
			// nothing left.
			dir = t.TempDir()
			opts.RowGroupRows = 4
			p, err = CreatePart(dir, 8, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.WriteRewards(testRewards()); err != nil {
				t.Fatal(err)
			}
			if err := p.WriteChecks(testChecks()[:2]); err != nil {
				t.Fatal(err)
			}
			p.Abort()
			if got := partFiles(t, dir); len(got) != 0 {
				t.Errorf("files after Abort: %q, want none", got)
			}
			if err := p.Close(); err == nil {
				t.Error("Close after Abort = nil error, want an error")
			}
		})
	}
}

func TestWriteRewardsTooManyKeep(t *testing.T) {
	dir := t.TempDir()
	p, err := CreatePart(dir, 0, PartOptions{Format: FormatJSONL, Keep: []string{"model"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abort()
	row := RewardRow{RolloutID: "r", Keep: []NullString{Str("a"), Str("b")}}
	if err := p.WriteRewards([]RewardRow{row}); err == nil || !strings.Contains(err.Error(), "2 keep values for 1 keep columns") {
		t.Fatalf("WriteRewards = %v, want a keep count error", err)
	}
	if err := p.Close(); err == nil {
		t.Fatal("Close after failed write = nil error, want the write error")
	}
	if got := partFiles(t, dir); len(got) != 0 {
		t.Errorf("files after failed part: %q, want none", got)
	}
}

// TestWritePartsReadBack writes parts in each format and reads them back
// with parquet-go, arrow-go (pqarrow and IPC) and encoding/json.
func TestWritePartsReadBack(t *testing.T) {
	tests := []struct {
		name    string
		rewards []RewardRow
		checks  []CheckRow
		keep    []string
		groups  int
	}{
		{"rows", testRewards(), testChecks(), testKeep, 3},
		{"default groups", testRewards(), testChecks(), testKeep, 0},
		{"no keep", testRewards()[3:4], testChecks(), nil, 3},
		{"empty", nil, nil, testKeep, 3},
	}
	for _, format := range []string{FormatParquet, FormatArrow, FormatJSONL} {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				opts := PartOptions{Format: format, Keep: tt.keep, RowGroupRows: tt.groups, alloc: mem}
				rewardsPath, checksPath := writeTestPart(t, t.TempDir(), 3, opts, tt.rewards, tt.checks, 2)
				tables := []struct {
					path   string
					cols   []outCol
					values [][]any
				}{
					{rewardsPath, wantRewardCols(tt.keep), rewardValues(tt.rewards, len(tt.keep))},
					{checksPath, wantCheckCols, checkValues(tt.checks)},
				}
				for _, tab := range tables {
					per := tt.groups
					if per == 0 {
						per = defaultRowGroupRows
					}
					groups := groupSizes(len(tab.values), per)
					switch format {
					case FormatParquet:
						checkParquetGo(t, tab.path, tab.cols, tab.values, groups)
						checkPqarrow(t, tab.path, tab.cols, tab.values)
					case FormatArrow:
						checkIPC(t, tab.path, tab.cols, tab.values, groups)
					case FormatJSONL:
						checkJSONL(t, tab.path, tab.cols, tab.values)
					}
				}
			})
		}
	}
}

// groupSizes returns the row group lengths expected for n rows.
func groupSizes(n, per int) []int64 {
	var g []int64
	for n > 0 {
		g = append(g, int64(min(n, per)))
		n -= min(n, per)
	}
	return g
}

type parquetColumn struct {
	Name     string
	Physical string
	Logical  string
	Optional bool
	Codec    string
	Dict     bool // dictionary-encoded in every row group
}

// noDict names the columns written without a dictionary.
var noDict = map[string]bool{"rollout_id": true, "input_hash": true, "error": true, "detail": true, "actual": true, "expected": true, "suggestion": true}

func checkParquetGo(t *testing.T, path string, cols []outCol, want [][]any, groups []int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("parquet-go: open %s: %v", path, err)
	}

	var wantSchema, gotSchema []parquetColumn
	physical := map[string]string{"string": "BYTE_ARRAY", "bool": "BOOLEAN", "double": "DOUBLE", "int32": "INT32", "int64": "INT64"}
	logical := map[string]string{"string": "STRING", "int32": "INT(32,true)", "int64": "INT(64,true)"}
	for _, c := range cols {
		dict := len(groups) > 0 && c.Kind != "bool" && !noDict[c.Name]
		pc := parquetColumn{c.Name, physical[c.Kind], logical[c.Kind], c.Nullable, "ZSTD", dict}
		if c.Kind == "strings" {
			pc.Physical, pc.Logical = "group", "LIST"
		}
		wantSchema = append(wantSchema, pc)
	}
	for i, field := range pf.Schema().Fields() {
		var pc parquetColumn
		switch {
		case !field.Leaf() && field.Type().LogicalType() != nil && field.Type().LogicalType().String() == "LIST":
			pc = parquetColumn{Name: field.Name(), Physical: "group", Optional: field.Optional(), Codec: "ZSTD"}
		case !field.Leaf() || field.Repeated():
			t.Errorf("parquet-go: column %q is not a flat leaf", field.Name())
			continue
		default:
			pc = parquetColumn{Name: field.Name(), Physical: field.Type().Kind().String(), Optional: field.Optional(), Codec: "ZSTD"}
		}
		if field.Optional() == field.Required() {
			t.Errorf("parquet-go: column %q: optional %v, required %v", field.Name(), field.Optional(), field.Required())
		}
		if lt := field.Type().LogicalType(); lt != nil {
			pc.Logical = lt.String() // STRING, INT(32,true), ...
		}
		pc.Dict = len(pf.Metadata().RowGroups) > 0
		for _, rg := range pf.Metadata().RowGroups {
			md := rg.Columns[i].MetaData
			if md.Codec != format.Zstd {
				pc.Codec = md.Codec.String()
			}
			pc.Dict = pc.Dict && md.DictionaryPageOffset != 0
		}
		gotSchema = append(gotSchema, pc)
	}
	if diff := cmp.Diff(wantSchema, gotSchema); diff != "" {
		t.Errorf("parquet-go: %s schema (-want +got):\n%s", filepath.Base(filepath.Dir(path)), diff)
	}

	var gotGroups []int64
	for _, rg := range pf.RowGroups() {
		gotGroups = append(gotGroups, rg.NumRows())
	}
	if diff := cmp.Diff(groups, gotGroups); diff != "" {
		t.Errorf("parquet-go: %s row groups (-want +got):\n%s", path, diff)
	}

	r := parquet.NewReader(pf)
	defer r.Close()
	var got [][]any
	buf := make([]parquet.Row, 2)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			got = append(got, parquetRowValues(row, cols))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("parquet-go: read %s: %v", path, err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parquet-go: %s values (-want +got):\n%s", path, diff)
	}
}

// parquetRowValues returns a row's values, a list column's values (a
// repeated leaf, definition level 0 for null, 1 for empty) as one
// []string.
func parquetRowValues(row parquet.Row, cols []outCol) []any {
	vals := make([]any, len(cols))
	for _, v := range row {
		c := v.Column()
		if cols[c].Kind != "strings" {
			vals[c] = parquetValue(v)
			continue
		}
		switch {
		case v.IsNull() && v.DefinitionLevel() == 0:
			vals[c] = nil
		case v.IsNull():
			vals[c] = []string{}
		default:
			l, _ := vals[c].([]string)
			vals[c] = append(l, string(v.ByteArray()))
		}
	}
	return vals
}

func parquetValue(v parquet.Value) any {
	if v.IsNull() {
		return nil
	}
	switch v.Kind() {
	case parquet.ByteArray:
		return string(v.ByteArray())
	case parquet.Boolean:
		return v.Boolean()
	case parquet.Double:
		return v.Double()
	case parquet.Int32:
		return v.Int32()
	case parquet.Int64:
		return v.Int64()
	}
	return fmt.Sprintf("unexpected kind %v", v.Kind())
}

type outField struct {
	Name     string
	Type     string
	Nullable bool
}

func wantArrowFields(cols []outCol) []outField {
	types := map[string]string{"string": "utf8", "bool": "bool", "double": "float64", "int32": "int32", "int64": "int64",
		"strings": "list<item: utf8>"}
	var fs []outField
	for _, c := range cols {
		fs = append(fs, outField{c.Name, types[c.Kind], c.Nullable})
	}
	return fs
}

func arrowFields(s *arrow.Schema) []outField {
	var fs []outField
	for _, f := range s.Fields() {
		// Parquet names a list's element "element", Arrow "item".
		typ := strings.Replace(f.Type.String(), "list<element: ", "list<item: ", 1)
		fs = append(fs, outField{f.Name, typ, f.Nullable})
	}
	return fs
}

// appendArrowRows appends the rows of rec as values.
func appendArrowRows(t *testing.T, got [][]any, rec arrow.RecordBatch) [][]any {
	t.Helper()
	for i := 0; i < int(rec.NumRows()); i++ {
		var vals []any
		for _, c := range rec.Columns() {
			if c.IsNull(i) {
				vals = append(vals, nil)
				continue
			}
			switch a := c.(type) {
			case *array.String:
				vals = append(vals, a.Value(i))
			case *array.Boolean:
				vals = append(vals, a.Value(i))
			case *array.Float64:
				vals = append(vals, a.Value(i))
			case *array.Int32:
				vals = append(vals, a.Value(i))
			case *array.Int64:
				vals = append(vals, a.Value(i))
			case *array.List:
				start, end := a.ValueOffsets(i)
				strs := a.ListValues().(*array.String)
				l := []string{}
				for k := start; k < end; k++ {
					l = append(l, strs.Value(int(k)))
				}
				vals = append(vals, l)
			default:
				t.Fatalf("unexpected array type %s", c.DataType())
			}
		}
		got = append(got, vals)
	}
	return got
}

func checkPqarrow(t *testing.T, path string, cols []outCol, want [][]any) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), f, aparquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatalf("pqarrow: read %s: %v", path, err)
	}
	defer tbl.Release()
	if diff := cmp.Diff(wantArrowFields(cols), arrowFields(tbl.Schema())); diff != "" {
		t.Errorf("pqarrow: %s schema (-want +got):\n%s", path, diff)
	}
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	var got [][]any
	for tr.Next() {
		got = appendArrowRows(t, got, tr.RecordBatch())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pqarrow: %s values (-want +got):\n%s", path, diff)
	}
}

func checkIPC(t *testing.T, path string, cols []outCol, want [][]any, groups []int64) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatalf("ipc: open %s: %v", path, err)
	}
	defer r.Close()
	if diff := cmp.Diff(wantArrowFields(cols), arrowFields(r.Schema())); diff != "" {
		t.Errorf("ipc: %s schema (-want +got):\n%s", path, diff)
	}
	var got [][]any
	var gotGroups []int64
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatalf("ipc: read %s batch %d: %v", path, i, err)
		}
		gotGroups = append(gotGroups, rec.NumRows())
		got = appendArrowRows(t, got, rec)
	}
	if diff := cmp.Diff(groups, gotGroups); diff != "" {
		t.Errorf("ipc: %s record batches (-want +got):\n%s", path, diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ipc: %s values (-want +got):\n%s", path, diff)
	}
}

func checkJSONL(t *testing.T, path string, cols []outCol, want [][]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	var got [][]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		keys, err := jsonlKeys(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		if diff := cmp.Diff(names, keys); diff != "" {
			t.Errorf("%s:%d: keys (-want +got):\n%s", path, line, diff)
		}
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		var vals []any
		for _, c := range cols {
			vals = append(vals, jsonlValue(t, obj[c.Name], c.Kind))
		}
		got = append(got, vals)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("%s does not end in a newline", path)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s values (-want +got):\n%s", path, diff)
	}
}

// jsonlKeys returns the keys of the JSON object in line, in order.
func jsonlKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func jsonlValue(t *testing.T, v any, kind string) any {
	t.Helper()
	if l, ok := v.([]any); ok && kind == "strings" {
		out := []string{}
		for _, e := range l {
			out = append(out, e.(string))
		}
		return out
	}
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	var err error
	var out any
	switch kind {
	case "double":
		out, err = n.Float64()
	case "int32":
		var i int64
		i, err = n.Int64()
		out = int32(i)
	case "int64":
		out, err = n.Int64()
	default:
		err = fmt.Errorf("number %s in a %s column", n, kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// partRows returns n reward rows and three check rows for each.
func partRows(n int, keep int) ([]RewardRow, []CheckRow) {
	statuses := []string{"passed", "failed", "pending", "error"}
	rewards := make([]RewardRow, n)
	checks := make([]CheckRow, 0, 3*n)
	for i := range rewards {
		id := fmt.Sprintf("rollout-%07d", i)
		task := fmt.Sprintf("crm-%03d", i%97)
		status := statuses[i%len(statuses)]
		r := RewardRow{
			RolloutID: id, TaskID: task, VerifierID: Str("crm"), Status: status,
			ChecksTotal: 3, RequiredTotal: 2,
			SourceFile: "data/rollouts-0001.parquet", SourceRow: int64(i),
		}
		switch status {
		case "passed":
			r.Passed, r.PassedValid, r.Reward, r.RewardValid = true, true, 1, true
			r.ChecksPassed, r.RequiredPassed = 3, 2
		case "failed":
			r.PassedValid, r.Reward, r.RewardValid = true, 1.0/3, true
			r.ChecksPassed, r.RequiredPassed = 1, 1
		case "error":
			r.ErrorKind, r.Error = Str("verifier"), Str("check 2: state has no table deals")
		}
		for k := range keep {
			if (i+k)%5 != 0 {
				r.Keep = append(r.Keep, Str(fmt.Sprintf("model-%d", (i+k)%4)))
			} else {
				r.Keep = append(r.Keep, NullString{})
			}
		}
		rewards[i] = r
		for c := range 3 {
			cr := CheckRow{
				RolloutID: id, TaskID: task, VerifierID: Str("crm"), CheckIndex: int32(c),
				CheckID: fmt.Sprintf("check-%d", c), Label: "deals moved to won",
				Required: c < 2, Status: "pass", Detail: fmt.Sprintf("%d of 2 moved", i%3),
			}
			if c != 1 {
				cr.Actual, cr.Expected = Str(fmt.Sprintf("%d", i%3)), Str("2")
			}
			checks = append(checks, cr)
		}
	}
	return rewards, checks
}

// TestWritePartsDeterministic checks that a part's bytes do not depend on
// how the rows were split across Write calls, as results must be
// byte-identical whatever --workers or --batch-size.
func TestWritePartsDeterministic(t *testing.T) {
	// Few Parquet column chunks: each costs tens of milliseconds under the
	// race detector, which defeats arrow-go's zstd encoder pool.
	rewards, checks := partRows(13, len(testKeep))
	rewards = append(rewards, testRewards()...)
	checks = append(checks, testChecks()...)
	for _, format := range []string{FormatParquet, FormatArrow, FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			opts := PartOptions{Format: format, Keep: testKeep, RowGroupRows: 8}
			var first [2][]byte
			for i, step := range []int{0, 1, 7} {
				rp, cp := writeTestPart(t, t.TempDir(), 1, opts, rewards, checks, step)
				var got [2][]byte
				for j, path := range []string{rp, cp} {
					b, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					got[j] = b
				}
				if i == 0 {
					first = got
					continue
				}
				for j, table := range []string{"rewards", "checks"} {
					if !bytes.Equal(first[j], got[j]) {
						t.Errorf("%s written in calls of %d rows differs from one call (%d vs %d bytes)",
							table, step, len(got[j]), len(first[j]))
					}
				}
			}
		})
	}
}

func TestJSONLReward(t *testing.T) {
	tests := []struct {
		reward float64
		valid  bool
		want   string
	}{
		{1, true, `1`},
		{0, true, `0`},
		{0.5, true, `0.5`},
		{1.0 / 3, true, `0.3333333333333333`},
		{2.0 / 3, true, `0.6666666666666666`},
		{1e-7, true, `1e-07`},
		{0.5, false, `null`},
		{math.NaN(), true, `null`},
		{math.Inf(1), true, `null`},
	}
	j := newJSONLTable(nil, rewardsTable(nil, false, false))
	for _, tt := range tests {
		line := j.appendRow(nil, &RewardRow{Reward: tt.reward, RewardValid: tt.valid})
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Fatalf("reward %v: invalid JSON %s: %v", tt.reward, line, err)
		}
		if got := string(obj["reward"]); got != tt.want {
			t.Errorf("reward %v (valid %v) written as %s, want %s", tt.reward, tt.valid, got, tt.want)
		}
	}
}

// BenchmarkWriteParts writes a part of 100k rewards rows and 300k checks
// rows in batches of 1000 rollouts.
func BenchmarkWriteParts(b *testing.B) {
	const rollouts = 100_000
	rewards, checks := partRows(rollouts, len(testKeep))
	const batch = 1000
	for _, format := range []string{FormatParquet, FormatArrow, FormatJSONL} {
		b.Run("format="+format+"/rollouts=100k", func(b *testing.B) {
			dir := b.TempDir()
			opts := PartOptions{Format: format, Keep: testKeep}
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			var written int64
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				p, err := CreatePart(dir, i, opts)
				if err != nil {
					b.Fatal(err)
				}
				for r := 0; r < rollouts; r += batch {
					if err := p.WriteRewards(rewards[r : r+batch]); err != nil {
						b.Fatal(err)
					}
					if err := p.WriteChecks(checks[3*r : 3*(r+batch)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := p.Close(); err != nil {
					b.Fatal(err)
				}
				for _, sub := range []string{"rewards", "checks"} {
					path := filepath.Join(dir, sub, PartName(i, format))
					st, err := os.Stat(path)
					if err != nil {
						b.Fatal(err)
					}
					written += st.Size()
					if err := os.Remove(path); err != nil {
						b.Fatal(err)
					}
				}
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&ms1)
			rows := float64(b.N) * (rollouts + 3*rollouts)
			b.ReportMetric(rows/elapsed.Seconds(), "rows/s")
			b.ReportMetric(float64(written)/elapsed.Seconds()/1e6, "MB/s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/rows, "allocs/row")
		})
	}
}

// TestWritePartsLargeDictionaries writes checks whose labels outgrow a
// row group's dictionary: the batch is cut before the row that would take
// it past maxDictBytes, a label larger than Parquet's dictionary page
// limit gets a row group of its own (where the column falls back to plain
// encoding), and every value reads back, the same file for any Write
// sizes.
func TestWritePartsLargeDictionaries(t *testing.T) {
	var checks []CheckRow
	for i := range 60 {
		label := fmt.Sprintf("%03d %s", i, strings.Repeat("x", 20<<10))
		if i == 30 {
			label = strings.Repeat("y", 1536<<10)
		}
		checks = append(checks, CheckRow{RolloutID: fmt.Sprintf("r%d", i), TaskID: "t", CheckID: "c", Label: label, Status: "pass"})
		checks = append(checks, CheckRow{RolloutID: fmt.Sprintf("r%d", i), TaskID: "t", CheckIndex: 1, CheckID: "d", Label: "short", Status: "fail"})
	}
	var files [][]byte
	for _, step := range []int{1, 7, 0} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		opts := PartOptions{Format: FormatParquet, alloc: mem}
		_, checksPath := writeTestPart(t, t.TempDir(), 0, opts, nil, checks, step)
		mem.AssertSize(t, 0)
		checkPqarrow(t, checksPath, wantCheckCols, checkValues(checks))
		data, err := os.ReadFile(checksPath)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		groups := pf.RowGroups()
		if len(groups) < 5 {
			t.Errorf("step %d: %d row groups, want the batch cut as the labels' dictionary grows", step, len(groups))
		}
		for _, g := range groups {
			if n := g.NumRows(); n == 1 {
				continue // the row with the huge label
			}
			label := g.ColumnChunks()[5]
			pages := label.Pages()
			p, err := pages.ReadPage()
			if err != nil {
				t.Fatal(err)
			}
			if p.Dictionary() == nil {
				t.Errorf("step %d: a row group of %d rows has no label dictionary", step, g.NumRows())
			}
			pages.Close()
		}
	}
	for i := 1; i < len(files); i++ {
		if !bytes.Equal(files[i], files[0]) {
			t.Errorf("the file differs with another Write size")
		}
	}
}
