package columnar

import (
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// unsupportedType is the error for a file name of no input format.
func unsupportedType(path string) error {
	return fmt.Errorf("open %s: unsupported file type (want .parquet, .jsonl, .ndjson, .jsonl.zst, .jsonl.gz, .arrow or .feather)", path)
}

// Open opens an input file with the reader for its format.
func Open(path string, opts Options) (Reader, error) {
	format, ok := Resolve(Source{Name: path})
	if !ok {
		return nil, unsupportedType(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return newReader(path, format, f, opts)
}

// newReader makes the reader of format for the file f, named path in
// errors. It takes f over: the reader closes it, and so does a failure.
func newReader(path, format string, f File, opts Options) (Reader, error) {
	switch format {
	case InputParquet:
		r, err := newParquetReader(path, f, opts)
		if err != nil {
			f.Close()
			return nil, err
		}
		return r, nil
	case InputArrow:
		r, err := newArrowReader(path, f, opts, memory.NewGoAllocator())
		if err != nil {
			return nil, err
		}
		return r, nil
	case InputInspect, InputTauBench, InputTau2, InputMessages, InputNemoGym, InputATIF:
		r, err := newHarnessFileReader(path, format, f)
		if err != nil {
			return nil, err
		}
		r.hr.SetTurns(opts.Turns)
		return r, nil
	}
	r, err := NewJSONLReader(path, f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closers = append(r.closers, f)
	return r, nil
}
