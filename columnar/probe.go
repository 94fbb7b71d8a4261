package columnar

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// ProbeColumns returns the top-level column names of an input file: from
// the schema of a Parquet or Arrow file, or the keys of the first object
// line of a JSON Lines file (nil when it has none).
func ProbeColumns(path string) ([]string, error) {
	format, ok := InputFormat(path)
	if !ok {
		return nil, fmt.Errorf("open %s: unsupported file type", path)
	}
	switch format {
	case InputParquet:
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return nil, err
		}
		pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		var names []string
		for _, field := range pf.Schema().Fields() {
			names = append(names, field.Name())
		}
		return names, nil
	case InputArrow:
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		var names []string
		if fr, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.NewGoAllocator())); err == nil {
			for _, field := range fr.Schema().Fields() {
				names = append(names, field.Name)
			}
			fr.Close()
			return names, nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		sr, err := ipc.NewReader(f, ipc.WithAllocator(memory.NewGoAllocator()))
		if err != nil {
			return nil, fmt.Errorf("open %s: not an Arrow IPC file or stream: %w", path, err)
		}
		defer sr.Release()
		for _, field := range sr.Schema().Fields() {
			names = append(names, field.Name)
		}
		return names, nil
	}
	r, err := OpenJSONL(path, Options{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var doc jsonview.Doc
	for {
		b, err := r.Next(16)
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, row := range b.Rows {
			root, err := doc.Parse(row.Line)
			if err != nil || root.Kind() != jsonview.Object {
				continue
			}
			var names []string
			for m := root.First(); m.Exists(); m = m.Next() {
				names = append(names, string(m.Key()))
			}
			b.Release()
			return names, nil
		}
		b.Release()
	}
}
