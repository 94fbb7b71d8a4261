package columnar

import (
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Input formats recognised by file name.
const (
	InputParquet = "parquet"
	InputJSONL   = "jsonl"
	InputArrow   = "arrow"
)

// InputFormat returns the input format of a file by its name (SPEC 3.1):
// .parquet; .jsonl and .ndjson, plain or with .zst or .gz; .arrow and
// .feather. ok is false for any other name.
func InputFormat(name string) (format string, ok bool) {
	lower := strings.ToLower(name)
	for _, c := range []string{".zst", ".gz"} {
		if strings.HasSuffix(lower, c) {
			lower = strings.TrimSuffix(lower, c)
			if strings.HasSuffix(lower, ".jsonl") || strings.HasSuffix(lower, ".ndjson") {
				return InputJSONL, true
			}
			return "", false
		}
	}
	switch {
	case strings.HasSuffix(lower, ".parquet"):
		return InputParquet, true
	case strings.HasSuffix(lower, ".jsonl"), strings.HasSuffix(lower, ".ndjson"):
		return InputJSONL, true
	case strings.HasSuffix(lower, ".arrow"), strings.HasSuffix(lower, ".feather"):
		return InputArrow, true
	}
	return "", false
}

// unsupportedType is the error for a file name of no input format.
func unsupportedType(path string) error {
	return fmt.Errorf("open %s: unsupported file type (want .parquet, .jsonl, .ndjson, .jsonl.zst, .jsonl.gz, .arrow or .feather)", path)
}

// Open opens an input file with the reader for its format.
func Open(path string, opts Options) (Reader, error) {
	format, ok := InputFormat(path)
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
		return newHarnessFileReader(path, format, f)
	}
	r, err := NewJSONLReader(path, f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closers = append(r.closers, f)
	return r, nil
}
