package columnar

import (
	"fmt"
	"os"
)

// ParquetRowGroups returns the number of row groups of the Parquet file at
// path, read from its footer.
func ParquetRowGroups(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if err := checkParquetMagic(f, st.Size()); err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	file, err := openParquetFile(f, st.Size())
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	return len(file.RowGroups()), nil
}

// OpenParquetRange opens the Parquet file at path to read only the row
// groups first through first+n-1 (0-based). Row indexes stay those of the
// file, so rows read through a range are numbered as when the whole file is
// read; Rows returns the rows of the range.
func OpenParquetRange(path string, first, n int, opts Options) (*ParquetReader, error) {
	r, err := OpenParquet(path, opts)
	if err != nil {
		return nil, err
	}
	if first < 0 || n < 0 || first+n > len(r.groups) {
		r.Close()
		return nil, fmt.Errorf("open %s: row groups %d..%d out of range (the file has %d)", path, first, first+n-1, len(r.groups))
	}
	var start, count int64
	for i, g := range r.groups {
		switch {
		case i < first:
			start += g.NumRows()
		case i < first+n:
			count += g.NumRows()
		}
	}
	r.rg = first - 1
	r.start, r.next, r.end, r.left = start, start, start+count, count
	return r, nil
}
