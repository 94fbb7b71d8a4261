package columnar

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestWriteArrowTable(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cols := []DatasetColumn{{Name: "s", Type: DatasetString}, {Name: "n", Type: DatasetInt64}}
	text := func(s string) DatasetValue { return DatasetValue{Kind: DatasetText, Bytes: []byte(s)} }
	var rows [][]DatasetValue
	for i := range arrowTableBatchRows + 2 {
		rows = append(rows, []DatasetValue{text("x"), {Kind: DatasetInt, Int: int64(i)}})
	}
	rows[1] = []DatasetValue{{Kind: DatasetNull}, {}}
	var buf bytes.Buffer
	if err := writeArrowTable(&buf, cols, rows, mem); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(buf.Bytes()), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumRecords() != 2 {
		t.Errorf("record batches = %d, want 2", r.NumRecords())
	}
	rec, err := r.Record(0)
	if err != nil {
		t.Fatal(err)
	}
	s, n := rec.Column(0).(*array.String), rec.Column(1).(*array.Int64)
	if s.Value(0) != "x" || n.Value(0) != 0 || !s.IsNull(1) || !n.IsNull(1) || n.Value(2) != 2 {
		t.Errorf("rows 0-2 = %q %d, null %v %v, %d", s.Value(0), n.Value(0), s.IsNull(1), n.IsNull(1), n.Value(2))
	}
	var again bytes.Buffer
	if err := writeArrowTable(&again, cols, rows, mem); err != nil || !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Errorf("the same rows gave different files (%v)", err)
	}
	if err := writeArrowTable(&again, []DatasetColumn{{Name: "j", Type: DatasetJSON}}, nil, mem); err == nil {
		t.Error("a JSON column was accepted")
	}
}
