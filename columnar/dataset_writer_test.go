package columnar

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

var datasetTestColumns = []DatasetColumn{
	{Name: "rollout_id", Type: DatasetString},
	{Name: "task_id", Type: DatasetString, Dictionary: true},
	{Name: "final_state", Type: DatasetJSON},
	{Name: "output", Type: DatasetString},
	{Name: "sample", Type: DatasetInt64},
}

func dsText(s string) DatasetValue { return DatasetValue{Kind: DatasetText, Bytes: []byte(s)} }
func dsRaw(s string) DatasetValue  { return DatasetValue{Kind: DatasetRaw, Bytes: []byte(s)} }
func dsNum(n int64) DatasetValue   { return DatasetValue{Kind: DatasetInt, Int: n} }

var (
	dsAbsent = DatasetValue{Kind: DatasetAbsent}
	dsNull   = DatasetValue{Kind: DatasetNull}
)

// datasetTestRows has ten rows: nulls, empty strings, escapes and a
// number of distinct tasks small enough for a dictionary.
func datasetTestRows() [][]DatasetValue {
	var rows [][]DatasetValue
	for i := range 10 {
		rows = append(rows, []DatasetValue{
			dsText("r-" + string(rune('0'+i))),
			dsText([]string{"TASK-001", "TASK-002"}[i%2]),
			dsRaw(`{"users":{"USR-001":{"id":"USR-001","name":"Zoë \"Z\" Ølund"}},"n":` + string(rune('0'+i)) + `}`),
			dsText("line one\nline \"two\"\t\\ é"),
			dsNum(int64(i) * 1000000000000),
		})
	}
	rows[3][1] = dsAbsent
	rows[4][1] = dsNull
	rows[5][1] = dsText("")
	rows[6][3] = dsText("")
	rows[7][4] = dsNull
	rows[8][2] = dsText(`{"users":`) // a state that is not valid JSON
	return rows
}

func writeDataset(t *testing.T, f DatasetFormat, cols []DatasetColumn, rows [][]DatasetValue, opts DatasetOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewDatasetWriter(&buf, f, cols, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if err := w.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := w.Rows(), int64(len(rows)); got != want {
		t.Errorf("Rows() = %d, want %d", got, want)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// dsCell is a value read back, in a form cmp can compare.
type dsCell struct {
	Null bool
	S    string
	N    int64
}

func TestDatasetWriterParquet(t *testing.T) {
	rows := datasetTestRows()
	data := writeDataset(t, DatasetParquet, datasetTestColumns, rows, DatasetOptions{RowGroupRows: 3})

	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, field := range f.Schema().Fields() {
		names = append(names, field.Name())
		if !field.Optional() {
			t.Errorf("column %s is not optional", field.Name())
		}
	}
	if diff := cmp.Diff([]string{"rollout_id", "task_id", "final_state", "output", "sample"}, names); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if got, want := len(f.RowGroups()), 4; got != want {
		t.Errorf("row groups = %d, want %d", got, want)
	}
	if got, want := f.NumRows(), int64(10); got != want {
		t.Errorf("rows = %d, want %d", got, want)
	}
	for _, rg := range f.Metadata().RowGroups {
		cc := rg.Columns[1].MetaData
		if cc.Codec.String() != "ZSTD" {
			t.Errorf("task_id codec = %s, want ZSTD", cc.Codec)
		}
		dict := false
		for _, e := range cc.Encoding {
			dict = dict || e.String() == "RLE_DICTIONARY"
		}
		if !dict {
			t.Errorf("task_id encodings = %v, want a dictionary", cc.Encoding)
		}
	}

	r := parquet.NewReader(bytes.NewReader(data))
	defer r.Close()
	got := make([][]dsCell, 0, len(rows))
	buf := make([]parquet.Row, 4)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			var cells []dsCell
			for _, v := range row {
				switch {
				case v.IsNull():
					cells = append(cells, dsCell{Null: true})
				case v.Kind() == parquet.Int64:
					cells = append(cells, dsCell{N: v.Int64()})
				default:
					cells = append(cells, dsCell{S: string(v.ByteArray())})
				}
			}
			got = append(got, cells)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var want [][]dsCell
	for _, row := range rows {
		var cells []dsCell
		for _, v := range row {
			switch v.Kind {
			case DatasetAbsent, DatasetNull:
				cells = append(cells, dsCell{Null: true})
			case DatasetInt:
				cells = append(cells, dsCell{N: v.Int})
			default:
				cells = append(cells, dsCell{S: string(v.Bytes)})
			}
		}
		want = append(want, cells)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows read back (-want +got):\n%s", diff)
	}
}

func TestDatasetWriterParquetDeterministic(t *testing.T) {
	a := writeDataset(t, DatasetParquet, datasetTestColumns, datasetTestRows(), DatasetOptions{RowGroupRows: 4})
	b := writeDataset(t, DatasetParquet, datasetTestColumns, datasetTestRows(), DatasetOptions{RowGroupRows: 4})
	if !bytes.Equal(a, b) {
		t.Error("the same rows gave different Parquet bytes")
	}
}

// dsReadLines returns the JSON Lines of data, decompressed when zst.
func dsReadLines(t *testing.T, data []byte, zst bool) []string {
	t.Helper()
	var r io.Reader = bytes.NewReader(data)
	if zst {
		d, err := zstd.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		r = d
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestDatasetWriterJSONL(t *testing.T) {
	for _, f := range []DatasetFormat{DatasetJSONL, DatasetJSONLZst} {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewDatasetWriter(&buf, f, datasetTestColumns, DatasetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rows := datasetTestRows()
			for _, row := range rows[:3] {
				if err := w.Write(row); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.WriteLine([]byte(`["not","an","object"]`)); err != nil {
				t.Fatal(err)
			}
			for _, row := range rows[3:] {
				if err := w.Write(row); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			lines := dsReadLines(t, buf.Bytes(), f == DatasetJSONLZst)
			if got, want := len(lines), 11; got != want {
				t.Fatalf("%d lines, want %d", got, want)
			}
			if got, want := lines[3], `["not","an","object"]`; got != want {
				t.Errorf("raw line = %s, want %s", got, want)
			}
			wantFirst := `{"rollout_id":"r-0","task_id":"TASK-001","final_state":{"users":{"USR-001":{"id":"USR-001","name":"Zoë \"Z\" Ølund"}},"n":0},"output":"line one\nline \"two\"\t\\ é","sample":0}`
			if lines[0] != wantFirst {
				t.Errorf("line 0 = %s\nwant      %s", lines[0], wantFirst)
			}
			lines = append(lines[:3], lines[4:]...)
			for i, line := range lines {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("line %d: %v: %s", i, err, line)
				}
				row := rows[i]
				for c, col := range datasetTestColumns {
					v, ok := m[col.Name]
					switch row[c].Kind {
					case DatasetAbsent:
						if ok {
							t.Errorf("row %d: %s = %v, want absent", i, col.Name, v)
						}
					case DatasetNull:
						if !ok || v != nil {
							t.Errorf("row %d: %s = %v, want null", i, col.Name, v)
						}
					case DatasetText:
						if v != string(row[c].Bytes) {
							t.Errorf("row %d: %s = %#v, want %q", i, col.Name, v, row[c].Bytes)
						}
					case DatasetRaw:
						if _, isObj := v.(map[string]any); !isObj {
							t.Errorf("row %d: %s = %#v, want a nested object", i, col.Name, v)
						}
					case DatasetInt:
						if v != float64(row[c].Int) {
							t.Errorf("row %d: %s = %v, want %d", i, col.Name, v, row[c].Int)
						}
					}
				}
			}
		})
	}
}

func TestDatasetWriterJSONLEscapes(t *testing.T) {
	cols := []DatasetColumn{{Name: "s", Type: DatasetString}}
	tests := []struct {
		name, in, want string
	}{
		{"plain", "abc", `{"s":"abc"}`},
		{"quotes and backslash", `a"b\c`, `{"s":"a\"b\\c"}`},
		{"controls", "a\x00b\x1fc\r\n\t", `{"s":"a\u0000b\u001fc\r\n\t"}`},
		{"unicode kept", "Sofía → 北京", `{"s":"Sofía → 北京"}`},
		{"invalid utf-8", "a\xffb", "{\"s\":\"a\ufffdb\"}"}, // U+FFFD written as UTF-8, as in result parts
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := writeDataset(t, DatasetJSONL, cols, [][]DatasetValue{{dsText(tt.in)}}, DatasetOptions{})
			if got := strings.TrimSuffix(string(data), "\n"); got != tt.want {
				t.Errorf("Write(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if !json.Valid([]byte(tt.want)) {
				t.Errorf("want %s is not valid JSON", tt.want)
			}
		})
	}
}

func TestDatasetWriterErrors(t *testing.T) {
	cols := []DatasetColumn{{Name: "s", Type: DatasetString}, {Name: "n", Type: DatasetInt64}}
	tests := []struct {
		name   string
		format DatasetFormat
		row    []DatasetValue
		line   string
	}{
		{"too few values", DatasetParquet, []DatasetValue{dsText("a")}, ""},
		{"integer in a text column", DatasetParquet, []DatasetValue{dsNum(1), dsNum(1)}, ""},
		{"text in an integer column", DatasetParquet, []DatasetValue{dsText("a"), dsText("1")}, ""},
		{"raw line in parquet", DatasetParquet, nil, "[]"},
		{"raw JSON on two lines", DatasetJSONL, []DatasetValue{dsRaw("{\n}"), dsNum(1)}, ""},
		{"empty raw JSON", DatasetJSONL, []DatasetValue{dsRaw(""), dsNum(1)}, ""},
		{"raw line with a newline", DatasetJSONL, nil, "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewDatasetWriter(io.Discard, tt.format, cols, DatasetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.row != nil {
				err = w.Write(tt.row)
			} else {
				err = w.WriteLine([]byte(tt.line))
			}
			if err == nil {
				t.Errorf("no error")
			}
		})
	}
	for _, bad := range []struct {
		name   string
		format DatasetFormat
		cols   []DatasetColumn
	}{
		{"unknown format", "csv", cols},
		{"no columns", DatasetJSONL, nil},
		{"repeated column", DatasetParquet, []DatasetColumn{{Name: "a"}, {Name: "a"}}},
		{"unnamed column", DatasetParquet, []DatasetColumn{{Name: ""}}},
	} {
		if _, err := NewDatasetWriter(io.Discard, bad.format, bad.cols, DatasetOptions{}); err == nil {
			t.Errorf("NewDatasetWriter with %s: no error", bad.name)
		}
	}
}

func TestDatasetFormatOf(t *testing.T) {
	tests := []struct {
		path string
		want DatasetFormat
		ok   bool
	}{
		{"a.parquet", DatasetParquet, true},
		{"dir/A.PARQUET", DatasetParquet, true},
		{"a.jsonl", DatasetJSONL, true},
		{"a.ndjson", DatasetJSONL, true},
		{"a.jsonl.zst", DatasetJSONLZst, true},
		{"a.ndjson.zst", DatasetJSONLZst, true},
		{"a.jsonl.gz", "", false},
		{"a.csv", "", false},
		{"parquet", "", false},
	}
	for _, tt := range tests {
		got, ok := DatasetFormatOf(tt.path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("DatasetFormatOf(%q) = %q, %v, want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
	for _, f := range DatasetFormats {
		if got, ok := DatasetFormatOf("x" + f.Ext()); got != f || !ok || !f.Valid() {
			t.Errorf("DatasetFormatOf(%q) = %q, %v, want %q, true", "x"+f.Ext(), got, ok, f)
		}
	}
}
