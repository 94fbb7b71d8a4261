// Package columnar reads rollout datasets (Parquet, Arrow IPC, JSON Lines,
// plain or compressed) into reusable batches of rows, and writes result
// tables as Parquet, Arrow IPC or JSON Lines. It is the only package that
// imports arrow-go or parquet-go.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package columnar

import "github.com/gavelhq/gavel/columnar/jsonview"

// CellKind says what a Cell holds.
type CellKind uint8

// Cell kinds.
const (
	// CellNull is an absent field or a null value.
	CellNull CellKind = iota
	// CellString holds the bytes of a string value (already unescaped).
	// For state and log fields this is JSON text still to be parsed.
	CellString
	// CellNumber holds the decimal text of a number as written in the
	// input (JSON Lines) or formatted from a numeric column (Parquet, Arrow).
	CellNumber
	// CellBool holds "true" or "false".
	CellBool
	// CellJSON holds a JSON value that is an object or array. In JSON
	// Lines rows Data is its raw text and V its indexed view; in Parquet
	// and Arrow rows it is a nested column's value, Data its compact JSON
	// text (valid JSON, not yet indexed) and V unset.
	CellJSON
)

// String returns the kind's name as used in error messages.
func (k CellKind) String() string {
	switch k {
	case CellNull:
		return "null"
	case CellString:
		return "string"
	case CellNumber:
		return "number"
	case CellBool:
		return "boolean"
	case CellJSON:
		return "JSON value"
	}
	return "unknown"
}

// Cell is one field of one row. Data points into buffers owned by the batch
// (or by the JSON Lines line) and is valid until the batch is released.
type Cell struct {
	Kind CellKind
	// Stable reports that Data points into memory that is never written
	// again while anything references it (a Parquet column chunk's
	// dictionary), so that while that memory lives its address and length
	// identify its bytes (jsonview.Cache.ParseStable).
	Stable bool
	Data   []byte
	// V is set for CellJSON cells: the value indexed in place in its line.
	V jsonview.Value
}

// Row is one input row. Columnar readers fill the named cells; the JSON
// Lines reader fills only Line, and DecodeLine fills the cells from it.
type Row struct {
	// Index is the row's 0-based index in its file. In JSON Lines every
	// line is counted, blank ones too.
	Index int64
	// Offset is the byte offset of the line in the (decompressed) file for
	// JSON Lines rows, and -1 for columnar rows.
	Offset int64
	// Line is the raw JSON Lines line without its line terminator.
	Line []byte
	// Err is a problem the reader found with this row alone (a JSON Lines
	// line over the length limit, or one that is not a JSON object after
	// DecodeLine; a nested value JSON cannot hold, such as NaN). The row
	// is graded as an input error; other rows go on.
	Err error

	ID, Task, Final, Initial, Output, Log Cell
	// TaskRow is the row of the rollout's task, the JSON text of an
	// object, that a harness's log carries (HarnessReader), or nil. It is
	// never written again while the run lasts.
	TaskRow []byte
	// Meta holds the other fields. For columnar rows it is aligned with
	// Batch.MetaNames; for JSON Lines rows it is unused and the metadata is
	// the line object itself.
	Meta []Cell
}

// Batch is a run of consecutive rows of one input unit. Its buffers are
// reused: a batch and everything its rows point to are valid only until it
// is handed back to its reader with Release.
type Batch struct {
	// Rows holds the batch's rows in file order.
	Rows []Row
	// MetaNames names the Meta cells of columnar rows.
	MetaNames []string
	// JSONLines is true when rows carry raw lines to be decoded with
	// DecodeLine.
	JSONLines bool
	// Mapped is true when the rows are rollouts mapped from a harness's
	// log or a chat dataset (HarnessReader): read with Options.Turns,
	// their agent turns are their metadata's member turns.
	Mapped bool
	// EndsRecordBatch is set when the batch's last row is the last of a
	// record batch of an Arrow IPC stream read as it arrives (standard
	// input): results streamed out end a record batch there too, so that
	// the rows a writer sent together are answered without waiting for
	// more.
	EndsRecordBatch bool

	release func(*Batch)
	arena   []byte
	spans   []struct{ start, end int }
}

// Release hands the batch's buffers back to the reader that produced it.
// It is safe to call on a batch whose reader has no pool.
func (b *Batch) Release() {
	if b.release != nil {
		b.release(b)
	}
}

// FieldNames maps each rollout field to the column (or JSON key) that
// holds it. The zero value reads every field from the column of its own
// name.
type FieldNames struct {
	ID, Task, Final, Initial, Output, Log string
	// Messages names the column of a row's chat messages, read for its
	// agent turns in a run that scores turns; it stays in the metadata.
	Messages string
}

// Standard field names of a rollout (docs/grading.md, "Input").
const (
	FieldID      = "rollout_id"
	FieldTask    = "task_id"
	FieldFinal   = "final_state"
	FieldInitial = "initial_state"
	FieldOutput  = "output"
	FieldLog     = "log"
	// FieldMessages is the column of a row's chat messages (OpenAI
	// chat format), from which its agent turns are read.
	FieldMessages = "messages"
	// FieldTurns is the member of a mapped rollout (a harness's log, a
	// chat dataset) that holds its agent turns.
	FieldTurns = "turns"
)

// WithDefaults returns n with every empty name replaced by the standard one.
func (n FieldNames) WithDefaults() FieldNames {
	def := func(s, d string) string {
		if s == "" {
			return d
		}
		return s
	}
	return FieldNames{
		ID:      def(n.ID, FieldID),
		Task:    def(n.Task, FieldTask),
		Final:   def(n.Final, FieldFinal),
		Initial: def(n.Initial, FieldInitial),
		Output:  def(n.Output, FieldOutput),
		Log:     def(n.Log, FieldLog),

		Messages: def(n.Messages, FieldMessages),
	}
}

// Is reports whether column name is one of the mapped fields.
func (n FieldNames) Is(name string) bool {
	return name == n.ID || name == n.Task || name == n.Final || name == n.Initial || name == n.Output || name == n.Log
}
