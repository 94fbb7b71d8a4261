package columnar

import (
	"encoding/binary"
	"path/filepath"
	"strings"

	"github.com/gavelhq/gavel/columnar/harness"
)

// The input formats: every name an input's format goes by, in one place.
// Resolve gives an input its format; newReader and DescribeStdin read
// each. Adding a format means a name here, its case in Resolve and its
// reader.
const (
	// Files typed by their names (formatOfExt).
	InputParquet = "parquet"
	InputJSONL   = "jsonl"
	InputArrow   = "arrow"

	// InputArrowStream is an Arrow IPC stream read as it arrives, from
	// standard input (DescribeStdin). A file holding a stream is
	// InputArrow, read as files are.
	InputArrowStream = "arrow-stream"

	// InputJSON is a request body of gavel serve that is not JSON Lines:
	// one rollout, or a JSON array of them.
	InputJSON = "json"

	// Other harnesses' logs (package harness). An .eval file is an
	// Inspect log by its name; other files are read in one of these
	// formats only when asked (Source.From).
	InputInspect  = string(harness.Inspect)
	InputTauBench = string(harness.TauBench)
	InputTau2     = string(harness.Tau2)
	InputMessages = string(harness.Messages)
	InputNemoGym  = string(harness.NemoGym)
	InputATIF     = string(harness.ATIF)
)

// A Source is what is known of an input when its format is resolved.
type Source struct {
	// Name is a file's path or an object's key; the format of a named
	// input goes by its name and From.
	Name string
	// From is the harness format asked for (gavel grade --from); "" for
	// none.
	From string

	// Stdin marks standard input, read as From says, else as Format
	// says, else as its first bytes, Head, say.
	Stdin bool
	// Format is the format standard input is asked to be read in (gavel
	// grade --input-format): InputJSONL, InputArrowStream or "".
	Format string
	// Head is standard input's first bytes (up to 4), nil when not read.
	Head []byte

	// HTTP marks a request body, read as its ContentType says.
	HTTP        bool
	ContentType string
}

// Resolve returns the format of the input s describes, the one place
// where an input gets its format; ok is false for a named input of no
// format.
//
// A named input: an .eval file is an Inspect log whatever From. Without
// From, .parquet; .jsonl and .ndjson, plain or with .zst or .gz; .arrow
// and .feather. With From, a .json file (plain, .gz or .zst) is a log of
// that format, and with messages a JSON Lines file is read as chat
// messages. With nemo-gym, JSON Lines files are rollouts, but a run's
// materialized inputs (X_materialized_inputs.jsonl, joined to the
// rollouts beside them, not read as rollouts) and .json files (aggregate
// metrics) are not inputs. With atif, JSON Lines files and .json files
// named trajectory* (Harbor's trajectory.json, trajectory.cont-1.json)
// are trajectories; other .json files (Harbor's result.json and
// config.json beside them) are not inputs.
//
// Standard input is a log of From; else in Format; else an Arrow IPC
// stream when Head is the start of one (sniffStream), JSON Lines
// otherwise (also before Head is read).
//
// A request body is JSON Lines when its Content-Type names JSON Lines,
// whatever its parameters; InputJSON otherwise.
func Resolve(s Source) (format string, ok bool) {
	switch {
	case s.HTTP:
		if isJSONLinesType(s.ContentType) {
			return InputJSONL, true
		}
		return InputJSON, true
	case s.Stdin:
		switch {
		case s.From != "":
			return s.From, true
		case s.Format != "":
			return s.Format, true
		}
		return sniffStream(s.Head), true
	}
	return formatOfName(s.Name, s.From)
}

// formatOfName is Resolve for a named input.
func formatOfName(name, from string) (format string, ok bool) {
	if harness.IsEvalArchive(name) {
		return InputInspect, true
	}
	format, ok = formatOfExt(name)
	switch {
	case from == InputNemoGym:
		switch {
		case format == InputJSONL && harness.IsMaterializedInputs(name):
			return "", false
		case format == InputJSONL:
			return InputNemoGym, true
		case isJSONName(name):
			return "", false
		}
	case from == InputATIF:
		switch {
		case format == InputJSONL:
			return InputATIF, true
		case isJSONName(name):
			if strings.HasPrefix(strings.ToLower(filepath.Base(name)), "trajectory") {
				return InputATIF, true
			}
			return "", false
		}
	case from == InputMessages && format == InputJSONL:
		return InputMessages, true
	case from != "" && from != InputMessages && isJSONName(name):
		return from, true
	}
	return format, ok
}

// formatOfExt returns the format of a file by its name alone:
// .parquet; .jsonl and .ndjson, plain or with .zst or .gz; .arrow and
// .feather. ok is false for any other name.
func formatOfExt(name string) (format string, ok bool) {
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

// isJSONName reports whether name ends in .json, plain or with .gz or
// .zst.
func isJSONName(name string) bool {
	lower := strings.ToLower(name)
	lower = strings.TrimSuffix(strings.TrimSuffix(lower, ".gz"), ".zst")
	return strings.HasSuffix(lower, ".json")
}

// sniffStream returns the format of a stream by its first bytes, head (up
// to 4 of them): InputArrowStream when they are the continuation marker
// 0xFFFFFFFF that starts every message of an Arrow IPC stream, or, from
// writers older than Arrow 0.15, a message length (a little-endian int32
// of at least 4 and under 64 MiB whose first byte cannot start a JSON
// Lines stream); InputJSONL otherwise. JSON Lines starts with whitespace,
// '{' or a UTF-8 byte order mark, and any four bytes of printable text
// read as a length exceed 512 MiB, so text is never taken for a stream;
// an empty stream is JSON Lines without lines.
func sniffStream(head []byte) string {
	if len(head) < 4 {
		return InputJSONL
	}
	n := binary.LittleEndian.Uint32(head)
	if n == 0xFFFFFFFF {
		return InputArrowStream
	}
	switch head[0] {
	case ' ', '\t', '\r', '\n', '{', 0xEF:
		return InputJSONL
	}
	if n >= 4 && n < streamMetadataLimit {
		return InputArrowStream
	}
	return InputJSONL
}

// jsonLinesTypes are the media types of JSON Lines in a Content-Type.
var jsonLinesTypes = []string{
	"application/x-ndjson", "application/ndjson", "application/jsonl",
	"application/x-jsonlines", "application/jsonlines", "application/x-jsonl",
}

// isJSONLinesType reports whether a Content-Type names JSON Lines,
// whatever its parameters.
func isJSONLinesType(ctype string) bool {
	if ctype == "" {
		return false
	}
	ctype, _, _ = strings.Cut(ctype, ";")
	ctype = strings.TrimSpace(ctype)
	for _, t := range jsonLinesTypes {
		if strings.EqualFold(ctype, t) {
			return true
		}
	}
	return false
}
