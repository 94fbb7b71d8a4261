package columnar

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// arrowTableBatchRows is the number of rows per record batch of
// WriteArrowTable.
const arrowTableBatchRows = 10000

// WriteArrowTable writes rows as an uncompressed Arrow IPC file, for the
// small tables whose rows a command holds in memory (a pairwise
// comparison's pairs): DatasetString columns as nullable utf8, DatasetInt64
// as nullable int64, in record batches of 10000 rows. A value is absent
// or null (null), text (a string column) or an integer (an integer column).
// The file depends only on the rows.
func WriteArrowTable(w io.Writer, columns []DatasetColumn, rows [][]DatasetValue) error {
	return writeArrowTable(w, columns, rows, memory.DefaultAllocator)
}

func writeArrowTable(w io.Writer, columns []DatasetColumn, rows [][]DatasetValue, mem memory.Allocator) error {
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		switch c.Type {
		case DatasetString:
			fields[i] = arrow.Field{Name: c.Name, Type: arrow.BinaryTypes.String, Nullable: true}
		case DatasetInt64:
			fields[i] = arrow.Field{Name: c.Name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
		default:
			return fmt.Errorf("arrow table: column %s: only string and int64 columns are written", c.Name)
		}
	}
	schema := arrow.NewSchema(fields, nil)
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	flush := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return fw.Write(rec)
	}
	for r, row := range rows {
		if len(row) != len(columns) {
			return fmt.Errorf("arrow table: row %d has %d values, want %d", r, len(row), len(columns))
		}
		for i, v := range row {
			switch fb := b.Field(i).(type) {
			case *array.StringBuilder:
				switch v.Kind {
				case DatasetAbsent, DatasetNull:
					fb.AppendNull()
				case DatasetText:
					fb.Append(string(v.Bytes))
				default:
					return fmt.Errorf("arrow table: row %d column %s: want text or null", r, columns[i].Name)
				}
			case *array.Int64Builder:
				switch v.Kind {
				case DatasetAbsent, DatasetNull:
					fb.AppendNull()
				case DatasetInt:
					fb.Append(v.Int)
				default:
					return fmt.Errorf("arrow table: row %d column %s: want an integer or null", r, columns[i].Name)
				}
			}
		}
		if (r+1)%arrowTableBatchRows == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(rows)%arrowTableBatchRows != 0 || len(rows) == 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	return fw.Close()
}
