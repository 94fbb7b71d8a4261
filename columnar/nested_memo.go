package columnar

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// nestedMemo keeps the JSON text of the nested values of one column that
// repeat across rows, such as the initial state a dataset repeats in every
// rollout of a task, so that a repeated value is rendered once.
//
// A value is recognized by its key: the bytes its leaf arrays hold for its
// row, copied range by range in a fixed order (validity, list lengths,
// fixed-width values, string lengths and bytes), which is much cheaper than
// rendering it. Two values of the same type have the same key only if they
// are the same value, so a key found in the memo, compared in full, names
// its text exactly; no hash alone decides.
//
// The texts are memory the memo never writes again while the reader lives,
// handed out as Stable cells: the initial-state cache recognizes a repeated
// one by its address without reading it (jsonview.Cache.ParseStable).
// Texts are admitted on first sighting until the memo holds
// nestedMemoBytes; after memoMissRun rows in a row that neither found nor
// admitted a text (a column whose values do not repeat), only one row in
// memoReprobe is looked up, until one is found again.
//
// A dictionary array (a Parquet leaf read as a dictionary, or an Arrow
// dictionary column) is keyed by its indices, which say which value only
// together with the dictionary: a dictionary may change from one record
// batch to the next (each Parquet row group has its own). So bind gives
// each distinct dictionary an id, found by comparing its whole content with
// the dictionaries seen before, and every key begins with the ids of the
// dictionaries of the record batch. A new dictionary makes the texts of the
// old ones unreachable in practice, so it empties the memo.
//
// Rejected: hashing the leaf ranges alone (a collision would hand a row
// another row's state), and a dictionary's address as its identity (the
// buffers of released record batches are reused).
type nestedMemo struct {
	seed   maphash.Seed
	key    []byte // scratch: the key of the current row
	texts  map[uint64][]memoText
	bytes  int
	misses int // rows in a row that neither found nor admitted a text
	rows   int

	// Dictionaries: prefix begins every key of the bound record batch,
	// off is set when its keys cannot be made.
	prefix []byte
	off    bool
	dicts  map[uint64][]memoDict // the dictionaries seen, by content hash
	dictsN int                   // bytes held by dicts
	nextID uint64
}

type memoText struct{ key, text []byte }

// memoDict is a dictionary seen: its content as appendMemoKey keys all its
// values, and its id.
type memoDict struct {
	content []byte
	id      uint64
}

const (
	nestedMemoBytes = 4 << 20
	memoMaxChain    = 4
	memoMissRun     = 256
	memoReprobe     = 64
	// memoDictBytes bounds the contents of the dictionaries remembered;
	// past it they are forgotten (a dictionary seen again gets a new id).
	memoDictBytes = 4 << 20
)

func newNestedMemo() *nestedMemo {
	return &nestedMemo{seed: maphash.MakeSeed(), texts: map[uint64][]memoText{}, dicts: map[uint64][]memoDict{}}
}

// bind prepares the keys of the values of arr, a record batch's array of
// the column: the ids of its dictionaries.
func (m *nestedMemo) bind(arr arrow.Array) {
	m.prefix, m.off = m.prefix[:0], false
	var found []*array.Dictionary
	collectDicts(&found, arr)
	fresh := false
	for _, d := range found {
		var ok bool
		if m.key, ok = appendMemoKey(m.key[:0], d.Dictionary(), 0, d.Dictionary().Len()); !ok {
			m.off = true
			return
		}
		id, isNew := m.dictID(m.key)
		fresh = fresh || isNew
		m.prefix = binary.LittleEndian.AppendUint64(m.prefix, id)
	}
	if fresh && m.bytes > 0 {
		m.empty()
	}
}

// empty forgets every text.
func (m *nestedMemo) empty() {
	clear(m.texts)
	m.bytes = 0
}

// resting counts a row and reports whether it is not to be looked up: the
// memo has found nothing for memoMissRun rows in a row, and the row is
// not one of the one in memoReprobe still probed.
func (m *nestedMemo) resting() bool {
	m.rows++
	return m.misses >= memoMissRun && m.rows%memoReprobe != 0
}

// dictID returns the id of the dictionary whose content is content, and
// whether it was not seen before.
func (m *nestedMemo) dictID(content []byte) (id uint64, isNew bool) {
	h := maphash.Bytes(m.seed, content)
	for _, d := range m.dicts[h] {
		if bytes.Equal(d.content, content) {
			return d.id, false
		}
	}
	if m.dictsN+len(content) > memoDictBytes {
		clear(m.dicts)
		m.dictsN = 0
	}
	m.nextID++
	m.dicts[h] = append(m.dicts[h], memoDict{content: bytes.Clone(content), id: m.nextID})
	m.dictsN += len(content)
	return m.nextID, true
}

// collectDicts appends the dictionary arrays in arr to dst, in the order
// appendMemoKey meets them, and those in their dictionaries.
func collectDicts(dst *[]*array.Dictionary, arr arrow.Array) {
	switch a := arr.(type) {
	case *array.Struct:
		for k := range a.NumField() {
			collectDicts(dst, a.Field(k))
		}
	case array.ListLike:
		collectDicts(dst, a.ListValues())
	case *array.Dictionary:
		*dst = append(*dst, a)
		collectDicts(dst, a.Dictionary())
	}
}

// find returns the text of the value whose key m.key holds, or nil; h is
// the key's hash. A text found ends a run of misses.
func (m *nestedMemo) find(h uint64) []byte {
	for _, e := range m.texts[h] {
		if bytes.Equal(e.key, m.key) {
			m.misses = 0
			return e.text
		}
	}
	return nil
}

// lookup returns the memoized text of row i of arr, or nil with ok false
// when it is not memoized; then h is the key's hash for admit, and try
// false when the row was not looked up at all.
func (m *nestedMemo) lookup(arr arrow.Array, i int) (text []byte, h uint64, try bool) {
	if m.resting() || m.off {
		return nil, 0, false
	}
	var ok bool
	m.key, ok = appendMemoKey(append(m.key[:0], m.prefix...), arr, i, i+1)
	if !ok {
		return nil, 0, false
	}
	h = maphash.Bytes(m.seed, m.key)
	return m.find(h), h, true
}

// admit keeps a copy of text as the text of the key lookup left in m.key,
// and returns the copy, or nil when the memo is full.
func (m *nestedMemo) admit(h uint64, text []byte) []byte {
	chain := m.texts[h]
	if len(chain) >= memoMaxChain || m.bytes+len(m.key)+len(text) > nestedMemoBytes {
		m.misses++
		return nil
	}
	m.misses = 0
	own := make([]byte, len(m.key)+len(text))
	copy(own, m.key)
	copy(own[len(m.key):], text)
	e := memoText{key: own[:len(m.key):len(m.key)], text: own[len(m.key):]}
	m.texts[h] = append(chain, e)
	m.bytes += len(own)
	return e.text
}

// appendMemoKey appends the key of rows [s, e) of arr to dst. ok is false
// for a type it does not cover. A dictionary array is keyed by its
// indices: keys of rows of different arrays compare only together with
// the identity of their dictionaries (nestedMemo.bind).
func appendMemoKey(dst []byte, arr arrow.Array, s, e int) ([]byte, bool) {
	if s >= e {
		return dst, true
	}
	// A validity byte per value, whether or not the array has nulls, so
	// that every key of a type is read the same way.
	if arr.NullN() == 0 {
		for n := e - s; n > 0; {
			k := min(n, len(allValid))
			dst = append(dst, allValid[:k]...)
			n -= k
		}
	} else {
		for j := s; j < e; j++ {
			if arr.IsNull(j) {
				dst = append(dst, 0)
			} else {
				dst = append(dst, 1)
			}
		}
	}
	off := arr.Data().Offset()
	switch a := arr.(type) {
	case *array.Null:
		return dst, true
	case *array.Struct:
		for k := range a.NumField() {
			var ok bool
			if dst, ok = appendMemoKey(dst, a.Field(k), s, e); !ok {
				return dst, false
			}
		}
		return dst, true
	case *array.List:
		return appendListKey(dst, a.Offsets()[off:], a.ListValues(), s, e)
	case *array.Map:
		return appendListKey(dst, a.Offsets()[off:], a.ListValues(), s, e)
	case *array.LargeList:
		return appendListKey(dst, a.Offsets()[off:], a.ListValues(), s, e)
	case *array.FixedSizeList:
		n := int(a.DataType().(*arrow.FixedSizeListType).Len())
		return appendMemoKey(dst, a.ListValues(), (off+s)*n, (off+e)*n)
	case *array.Dictionary:
		return appendMemoKey(dst, a.Indices(), s, e)
	case *array.String:
		return appendBytesKey(dst, a.ValueOffsets(), a.ValueBytes(), s, e)
	case *array.Binary:
		return appendBytesKey(dst, a.ValueOffsets(), a.ValueBytes(), s, e)
	case *array.LargeString:
		return appendBytesKey(dst, a.ValueOffsets(), a.ValueBytes(), s, e)
	case *array.LargeBinary:
		return appendBytesKey(dst, a.ValueOffsets(), a.ValueBytes(), s, e)
	case *array.Boolean:
		for j := s; j < e; j++ {
			if a.Value(j) {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		}
		return dst, true
	}
	switch arr.DataType().ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP,
		arrow.DURATION, arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO,
		arrow.FIXED_SIZE_BINARY:
	default:
		return dst, false
	}
	fw, ok := arr.DataType().(arrow.FixedWidthDataType)
	bufs := arr.Data().Buffers()
	if !ok || fw.BitWidth()%8 != 0 || len(bufs) != 2 || bufs[1] == nil {
		return dst, false
	}
	w := fw.BitWidth() / 8
	return append(dst, bufs[1].Bytes()[(off+s)*w:(off+e)*w]...), true
}

// allValid is the validity part of a key for values without nulls.
var allValid = bytes.Repeat([]byte{1}, 256)

// appendListKey appends the lengths of lists [s, e), whose offsets offs
// holds from the array's first, and the key of their elements.
func appendListKey[T int32 | int64](dst []byte, offs []T, values arrow.Array, s, e int) ([]byte, bool) {
	var ok bool
	if dst, ok = appendLengths(dst, offs[s:e+1]); !ok {
		return dst, false
	}
	return appendMemoKey(dst, values, int(offs[s]), int(offs[e]))
}

// appendBytesKey appends the lengths and the bytes of values [s, e) of a
// string or binary array, whose offsets offs holds from the array's
// first and whose data begins at the first's.
func appendBytesKey[T int32 | int64](dst []byte, offs []T, data []byte, s, e int) ([]byte, bool) {
	var ok bool
	if dst, ok = appendLengths(dst, offs[s:e+1]); !ok {
		return dst, false
	}
	return append(dst, data[offs[s]-offs[0]:offs[e]-offs[0]]...), true
}

// appendLengths appends the differences of consecutive offsets as 32-bit
// lengths; ok is false for a length that does not fit.
func appendLengths[T int32 | int64](dst []byte, offs []T) ([]byte, bool) {
	for j := 1; j < len(offs); j++ {
		n := offs[j] - offs[j-1]
		if int64(n) < 0 || int64(n) > math.MaxUint32 {
			return dst, false
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	}
	return dst, true
}
