package columnar

// Reader reads one input unit (a file, or standard input) as a sequence of
// batches, in file order. Implementations own the batch buffers; a caller
// hands each batch back with Batch.Release when it is done with it.
type Reader interface {
	// Next returns the next batch of at most max rows. At the end of the
	// input it returns nil and io.EOF. Any other error is fatal for the
	// unit and names the file and, where known, the row group or byte
	// offset.
	Next(max int) (*Batch, error)
	// Rows returns the number of rows when the format records it (Parquet
	// and Arrow footers), else -1.
	Rows() int64
	// Close releases the file.
	Close() error
}

// Options tunes readers. The zero value works.
type Options struct {
	// Fields maps rollout fields to columns; empty names take the
	// standard ones.
	Fields FieldNames
	// MaxLineBytes bounds one JSON Lines line (0: 64 MiB).
	MaxLineBytes int
}
