package inputs

import (
	"encoding/binary"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// The input hash (the rewards' input_hash) identifies what a verifier was
// given: equal hashes mean equal inputs, whatever the format they were read
// from, so that a later run can take a rollout's results from an earlier
// one. It is XXH64 (seed 0), the same in every process and on every
// machine, over framed fields:
//
//	"gavel-input-1", then for each field, in this order, its tag, its kind
//	and the XXH64 of its content as 8 little-endian bytes:
//	t task_id   's' the id's text (a number in its decimal form)
//	i initial   'j' the row's own initial_state, or '-' when absent or null
//	f final     'j' final_state, or '-' when absent or null
//	o output    's' output ("" when absent or null: one input)
//	l log       'j' log, or '-' when absent or null
//	m metadata  'j' the object of the row's other fields, as verifiers see it
//	k task row  'j' the row of --tasks (or of a harness's log), or '-'
//
// A 'j' content is the value's JSON text as a compact token stream:
// whitespace outside strings removed, members in the order written, every
// token (a number, an escape) as written. A state held as JSON text in a
// string is the text it holds, so the same state in a Parquet string
// column, an Arrow one, or a JSON Lines object or string hashes the same;
// so does a task row's initial_state. Absent and null are one input for
// the rollout fields; in the metadata a member set to null is kept
// (verifiers see it), as JSON Lines writes it, while a null Parquet or
// Arrow cell is no member. Each field's content is hashed on its own and
// framed by its tag, so bytes moved from one field to another change the
// hash.
//
// Rejected: hashing a canonical form (sorted members, normalized numbers),
// which verifiers do not see (they read members in document order and may
// read a number's text), and would cost a parse per field; SHA-256, whose
// strength reuse does not need (a rollout's hash is compared only with the
// hash of the same rollout_id) and which costs several times more per byte.
const inputHashVersion = "gavel-input-1"

// Kinds of a field in the input hash.
const (
	hashAbsent = '-'
	hashJSON   = 'j'
	hashString = 's'
)

// InputHasher computes input hashes for one worker. The hash of an initial
// state that the run's cache of initial states holds is kept by the
// address of the cached text (which the cache never frees or writes
// again), so that the initial state a task's rollouts share is scanned
// once.
type InputHasher struct {
	d     xxhash.Digest
	known map[*byte]knownHash
}

type knownHash struct {
	n    int
	hash uint64
}

// maxKnown bounds InputHasher.known; it is cleared when full.
const maxKnown = 1 << 12

// sum returns the input hash of the decoded rollout r. initial is the
// row's own initial state (Missing when it has none; r.Initial may then
// be the task's), cached reports that initial is held by the run's cache
// of initial states, and t is the rollout's task row (nil: none).
func (h *InputHasher) Sum(r *verifiers.Rollout, initial jsonview.Value, cached bool, t *Task) uint64 {
	var buf [len(inputHashVersion) + 7*10]byte
	b := append(buf[:0], inputHashVersion...)
	b = appendField(b, 't', hashString, xxhash.Sum64String(r.TaskID))
	initialSum, initialKind := uint64(0), byte(hashAbsent)
	if !initial.IsNull() {
		initialSum, initialKind = h.initial(initial, cached), hashJSON
	}
	b = appendField(b, 'i', initialKind, initialSum)
	switch {
	case r.Final.IsNull():
		b = appendField(b, 'f', hashAbsent, 0)
	case initialKind == hashJSON && sameBytes(r.Final.Raw(), initial.Raw()):
		// A world left unchanged shares the initial state's index.
		b = appendField(b, 'f', hashJSON, initialSum)
	default:
		b = appendField(b, 'f', hashJSON, h.value(r.Final))
	}
	b = appendField(b, 'o', hashString, xxhash.Sum64String(r.Output))
	if r.Log.IsNull() {
		b = appendField(b, 'l', hashAbsent, 0)
	} else {
		b = appendField(b, 'l', hashJSON, h.value(r.Log))
	}
	b = appendField(b, 'm', hashJSON, h.value(r.Meta))
	if t == nil {
		b = appendField(b, 'k', hashAbsent, 0)
	} else {
		b = appendField(b, 'k', hashJSON, t.hash)
	}
	return xxhash.Sum64(b)
}

// appendField appends one field of the input hash: its tag, its kind and
// its content's hash.
func appendField(b []byte, tag, kind byte, sum uint64) []byte {
	b = append(b, tag, kind)
	return binary.LittleEndian.AppendUint64(b, sum)
}

// initial returns the content hash of an initial state, kept when its
// text is cached.
func (h *InputHasher) initial(v jsonview.Value, cached bool) uint64 {
	text := v.Raw()
	if !cached || len(text) == 0 {
		return h.value(v)
	}
	p := unsafe.SliceData(text)
	if k, ok := h.known[p]; ok && k.n == len(text) {
		return k.hash
	}
	sum := h.value(v)
	if h.known == nil || len(h.known) >= maxKnown {
		h.known = make(map[*byte]knownHash)
	}
	h.known[p] = knownHash{len(text), sum}
	return sum
}

// value returns the XXH64 of v's text as a compact token stream. The
// parser recorded where the text has whitespace, so the text is not
// scanned again.
func (h *InputHasher) value(v jsonview.Value) uint64 {
	h.d.Reset()
	v.WriteCompact(&h.d)
	return h.d.Sum64()
}

// json returns the XXH64 of text, a valid JSON value, as a compact token
// stream.
func (h *InputHasher) json(text []byte) uint64 {
	h.d.Reset()
	writeCompact(&h.d, text)
	return h.d.Sum64()
}

// Within reports whether the bytes of p lie inside buf.
func Within(p, buf []byte) bool {
	if len(p) == 0 || len(buf) == 0 {
		return false
	}
	lo, at := uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return at >= lo && at+uintptr(len(p)) <= lo+uintptr(len(buf))
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// writeCompact writes text, valid JSON, to d without the whitespace outside
// its strings.
func writeCompact(d *xxhash.Digest, text []byte) { jsonview.WriteCompactText(d, text) }

// taskHash returns the content hash of a task row, the object fields, whose
// member initialName is the task's initial state: when that member is a
// string, the JSON text it holds stands in its place, as for a rollout's
// states.
func taskHash(fields jsonview.Value, initialName string) uint64 {
	var d xxhash.Digest
	d.Reset()
	d.Write([]byte{'{'})
	n := 0
	for m := fields.First(); m.Exists(); m = m.Next() {
		if n > 0 {
			d.Write([]byte{','})
		}
		n++
		member := m.RawMember()
		s, isStr := m.Str()
		if !isStr || !m.KeyIs(initialName) {
			writeCompact(&d, member)
			continue
		}
		writeCompact(&d, member[:len(member)-len(m.Raw())]) // the key and the colon
		writeCompact(&d, s)
	}
	d.Write([]byte{'}'})
	return d.Sum64()
}
