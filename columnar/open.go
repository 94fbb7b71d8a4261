package columnar

import (
	"fmt"
	"strings"
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

// Open opens an input file with the reader for its format.
func Open(path string, opts Options) (Reader, error) {
	format, ok := InputFormat(path)
	if !ok {
		return nil, fmt.Errorf("open %s: unsupported file type (want .parquet, .jsonl, .ndjson, .jsonl.zst, .jsonl.gz, .arrow or .feather)", path)
	}
	switch format {
	case InputParquet:
		return OpenParquet(path, opts)
	case InputArrow:
		return OpenArrow(path, opts)
	}
	return OpenJSONL(path, opts)
}
