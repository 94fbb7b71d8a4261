package jsonview

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// MaxDepth is the deepest nesting of arrays and objects Parse accepts, the
// same limit encoding/json applies.
const MaxDepth = 10000

// maxText is the longest text a Doc indexes: offsets are stored as int32.
const maxText = math.MaxInt32

// Doc indexes one JSON text. A Doc is reused across rows with Reset; its
// buffers grow to the largest text seen and are then reused. After Parse
// returns, the Doc and its Values may be read by many goroutines at once
// until the next Reset.
//
// # Index layout
//
// Parse writes one node per JSON value into a flat slice (the "tape"), in
// document order: a container's node is followed by the nodes of its
// members or elements, each followed by its own subtree. A node records
//
//   - the value's kind and the span [start, end) of its text in the data
//     (for strings, quotes included; for containers, brackets included);
//   - after, the index of the first node past its subtree, so that a
//     sibling is one step away however large the value is;
//   - n, the number of members or elements of a container;
//   - for an object member, the span of its key (quotes excluded);
//   - flags: member (the key span is set), key-has-escapes,
//     string-has-escapes, and last (no sibling follows; set on the root too).
//
// A Value is the Doc pointer and a node index, so copying one is free, the
// zero Value (nil Doc) is Missing, First is index+1, Next is the node's
// after unless it is flagged last, and Get compares key bytes in place.
//
// # Invariants
//
//   - The Doc does not copy data: data must not change while the Doc's
//     Values are in use.
//   - Parse writes the index; every other method only reads it. Values of
//     one Doc may therefore be read from many goroutines at once (a task's
//     initial state is indexed once and shared by all its rollouts), until
//     the next Parse or Reset, after which they must not be used.
//   - Once its buffers have grown to fit the text, Parse allocates nothing;
//     reading allocates only in Str and Key on strings holding escapes.
//
// # Designs rejected
//
//   - Decoding into map[string]any (or structs): it allocates per value,
//     copies every string and loses key order and number text, so exact
//     number comparison and "first of a repeated key" become impossible.
//   - Unescaping strings into a scratch buffer owned by the Doc: reads run
//     concurrently, so a shared buffer would race. Strings with escapes are
//     unescaped into a fresh slice instead, and comparisons (KeyIs, StrIs,
//     Equal) unescape on the fly without any buffer.
//   - A recursive descent parser: hostile input nested 10000 deep (or much
//     deeper, to provoke a crash) would ride on the goroutine stack. Parse
//     runs as one loop over an explicit stack of open containers.
type Doc struct {
	data   []byte
	nodes  []node
	stack  []frame
	shared bool // see Share
	// spaces holds the whitespace runs between tokens, as pairs of
	// offsets [start, end) in document order, so that a value's compact
	// text (WriteCompact) is its text between them. partial reports that
	// ParseSkipping left a member out: the runs in it are not known.
	spaces  []int32
	partial bool
	// marks is stage 1's output (see stage1); key is stage 2's next key.
	marks []uint64
	key   key
	// limitPerByte and limitFloor bound the index (see LimitIndex; 0: no
	// bound).
	limitPerByte, limitFloor int
	// ParseSkipping's request and results.
	sk                  Skips
	scanned, matched    Skipped
	scanSeen, matchSeen bool
}

// Footprint returns the bytes d's index holds (not its text's): what
// Reset keeps for the next Parse.
func (d *Doc) Footprint() int {
	return cap(d.nodes)*int(unsafe.Sizeof(node{})) + cap(d.stack)*int(unsafe.Sizeof(frame{})) + cap(d.spaces)*4 + cap(d.marks)*8
}

// Shrink drops d's index and text when the index holds more than max
// bytes (the next Parse allocates afresh), so that a pooled Doc does not
// keep what one large text needed; the bound of LimitIndex stays.
func (d *Doc) Shrink(max int) {
	if d.Footprint() > max {
		*d = Doc{limitPerByte: d.limitPerByte, limitFloor: d.limitFloor}
	}
}

// LimitIndex bounds the index later Parses build: at most perByte bytes
// for each byte of the text, and never less than floor bytes. A text with
// more values than that (a long array of one-digit numbers, say) is a
// SyntaxError, so that what a Doc holds is bounded by the length of its
// text. LimitIndex(0, 0) removes the bound.
func (d *Doc) LimitIndex(perByte, floor int) { d.limitPerByte, d.limitFloor = perByte, floor }

// Share promises that d will never be parsed into or reset again, and that
// its text will not change, so that the identity of its Values stands for
// their content: two Values of shared Docs that are == hold the same JSON,
// and a memo may be keyed by them (see Value.Shared). Parse and Reset on a
// shared Doc panic.
//
// Share drops what only Parse uses (stage 1's marks): a shared Doc is
// never parsed into again.
func (d *Doc) Share() { d.shared, d.marks = true, nil }

// node is one value in the index; see the Doc documentation.
type node struct {
	start, end       int32 // the value's text
	after            int32 // the first node past this subtree
	n                int32 // containers: the number of children
	keyStart, keyEnd int32 // object members: the key text without quotes
	kind             Kind
	flags            uint8
}

// Node flags.
const (
	flagMember uint8 = 1 << iota // an object member: keyStart and keyEnd are set
	flagKeyEsc                   // the key holds escapes
	flagStrEsc                   // the string holds escapes
	flagLast                     // no sibling follows
)

// frame is an open container on the parse stack. The bottom frame stands
// for the document itself, whose only child is the root.
type frame struct {
	node  int32 // the container's node; -1 for the document
	count int32 // children so far
	last  int32 // the latest child's node
	kind  Kind  // Object, Array, or Missing for the document
}

// Character classes.
var (
	isSpace [256]bool // JSON whitespace
	isPlain [256]bool // string bytes that need no attention
	isHex   [256]bool
)

func init() {
	for _, c := range []byte(" \t\r\n") {
		isSpace[c] = true
	}
	for c := 0x20; c < 0x80; c++ {
		isPlain[c] = c != '"' && c != '\\'
	}
	for _, c := range []byte("0123456789abcdefABCDEF") {
		isHex[c] = true
	}
}

// Reset forgets the indexed text, so that the Doc keeps no reference to it,
// and keeps the Doc's buffers for the next Parse. Values of the Doc must not
// be used after Reset.
func (d *Doc) Reset() {
	if d.shared {
		panic("jsonview: Reset of a shared Doc")
	}
	d.data = nil
	d.nodes = d.nodes[:0]
	d.stack = d.stack[:0]
	d.spaces = d.spaces[:0]
	d.partial = false
}

// Parse indexes data (which the Doc does not copy: data must stay unchanged
// while the Doc's values are in use), validates it fully and returns its root.
// Trailing whitespace is allowed; anything else after the value is an error.
//
// Validation follows RFC 8259: strings must be valid UTF-8 without control
// characters, escapes must be well formed (lone surrogates in \u escapes
// are accepted and read as U+FFFD, as encoding/json does), numbers follow
// the JSON grammar, and nesting deeper than MaxDepth is refused. Errors are
// *SyntaxError. Parse replaces whatever the Doc indexed before, also when
// it fails.
func (d *Doc) Parse(data []byte) (Value, error) {
	if d.shared {
		panic("jsonview: Parse into a shared Doc")
	}
	if v, ok := d.parseIndexed(data); ok {
		return v, nil
	}
	return d.parseScalar(data, false)
}

// Skips asks ParseSkipping to leave out two members of the root object,
// the first member named Scan and the first named Match (keys as written,
// without escapes), when they are objects or arrays. An empty name leaves
// out nothing.
type Skips struct {
	// Cache, when set, is where values are looked for by their beginning
	// (Cache.MatchPrefix).
	Cache *Cache
	// Scan names a member that is always left out: found in Cache, or
	// else scanned only for where it ends, following strings and
	// brackets, without validation.
	Scan string
	// Match names a member that is left out only when found in Cache;
	// otherwise it is indexed in place.
	Match string
}

// Skipped is a member value ParseSkipping left out of the index.
type Skipped struct {
	// Text is the value's text, nil when the member was not left out.
	Text []byte
	// Cached is the cached index of Text when it was found in the cache;
	// Missing when Text was scanned, and must then be validated by the
	// caller (by parsing it, or finding it in a Cache).
	Cached Value
}

// ParseSkipping is Parse, except that the members sk names are left out
// of the index: the root reads as if it did not have them, and their
// texts are returned instead. Everything else is validated as Parse does.
// A value nested deeper than maxSkipDepth is not left out.
//
// It serves JSON Lines rows whose initial state repeats across the rows of
// a task, and whose final state often equals it: the line is indexed
// without them, and the states are looked up in the cache. A cached text
// that a value begins with is that value, since an object or array ends
// at its closing bracket, so such a value is neither scanned nor parsed.
func (d *Doc) ParseSkipping(data []byte, sk Skips) (root Value, scanned, matched Skipped, err error) {
	d.sk = sk
	d.scanned, d.matched, d.scanSeen, d.matchSeen = Skipped{}, Skipped{}, false, false
	root, err = d.parseScalar(data, true)
	scanned, matched = d.scanned, d.matched
	d.sk, d.scanned, d.matched = Skips{}, Skipped{}, Skipped{}
	return root, scanned, matched, err
}

// maxSkipDepth bounds the nesting of a value ParseSkipping skips, far
// below MaxDepth, so that validating the skipped text on its own accepts
// exactly what validating it in place would.
const maxSkipDepth = 1000

// skipMember leaves out the member value at i, whose key is
// data[ks:ke], when ParseSkipping's Skips asks for it, and returns the
// index past it, or 0.
func (d *Doc) skipMember(data []byte, i int, key []byte) int {
	sk := &d.sk
	var scan bool
	switch {
	case !d.scanSeen && sk.Scan != "" && string(key) == sk.Scan:
		d.scanSeen, scan = true, true
	case !d.matchSeen && sk.Match != "" && string(key) == sk.Match:
		d.matchSeen = true
	default:
		return 0
	}
	if j := skipSpace(data, i); j > i {
		d.spaces = append(d.spaces, int32(i), int32(j))
		i = j
	}
	if i >= len(data) || (data[i] != '{' && data[i] != '[') {
		return 0
	}
	var v Value
	j := 0
	if sk.Cache != nil {
		if v, j = sk.Cache.MatchPrefix(data[i:]); j > 0 {
			j += i
		}
	}
	if j == 0 && scan {
		j = skipValue(data, i)
	}
	if j <= 0 {
		return 0
	}
	d.partial = true
	if scan {
		d.scanned = Skipped{Text: data[i:j:j], Cached: v}
	} else {
		d.matched = Skipped{Text: data[i:j:j], Cached: v}
	}
	return j
}

// parseScalar is Parse, or ParseSkipping when skipping is set, in one
// pass that reads every byte. It names the error of a text Parse refuses,
// and is the reference the two stages are tested against.
func (d *Doc) parseScalar(data []byte, skipping bool) (Value, error) {
	if d.shared {
		panic("jsonview: Parse into a shared Doc")
	}
	if len(data) > maxText {
		d.Reset()
		return Value{}, &SyntaxError{Offset: maxText, Msg: "text too large"}
	}
	d.data = nil
	d.partial = false
	spaces := d.spaces[:0]
	nodes := d.nodes[:0]
	stack := append(d.stack[:0], frame{node: -1})
	n := len(data)
	var (
		i      int   // the next byte to read
		j      int   // scan results
		idx    int32 // the node being written
		c      byte
		code   errCode
		kind   Kind
		flags  uint8
		kflags uint8 // flags of the next node: member, key escaped
		ks, ke int32 // the key span of the next node
		top    *frame
		nd     *node
		f      frame
	)

value:
	if i < n && data[i] <= ' ' {
		j = skipSpace(data, i)
		spaces = append(spaces, int32(i), int32(j))
		i = j
	}
	if i >= n {
		goto eof
	}
	idx = int32(len(nodes))
	top = &stack[len(stack)-1]
	top.count++
	top.last = idx
	// Write the node in place: building it on the stack and copying it
	// costs a store-forwarding stall per value.
	if len(nodes) == cap(nodes) {
		if d.limitPerByte > 0 {
			if nodes, code = d.growLimited(nodes, spaces, n); code != errNone {
				return d.fail(nodes, stack, spaces, i, code, data)
			}
		} else {
			nodes = slices.Grow(nodes, 1)
		}
	}
	nodes = nodes[:idx+1]
	nd = &nodes[idx]
	nd.start, nd.after, nd.n = int32(i), idx+1, 0
	nd.keyStart, nd.keyEnd, nd.flags = ks, ke, kflags
	kflags = 0
	c = data[i]
	switch c {
	case '"':
		// Most strings are short and plain: find the closing quote
		// without a call when it is among the next 8 bytes.
		if i+9 <= n {
			if t := specialBytes(binary.LittleEndian.Uint64(data[i+1:])); t != 0 {
				if j = i + 1 + bits.TrailingZeros64(t)>>3; data[j] == '"' {
					j++
					nd.kind, nd.end = String, int32(j)
					i = j
					goto afterValue
				}
			}
		}
		j, flags, code = scanString(data, i+1)
		if code != errNone {
			return d.fail(nodes, stack, spaces, j, code, data)
		}
		nd.kind, nd.end = String, int32(j)
		nd.flags |= flags
		i = j
		goto afterValue
	case '{', '[':
		if len(stack) > MaxDepth {
			return d.fail(nodes, stack, spaces, i, errDepth, data)
		}
		kind = Array
		if c == '{' {
			kind = Object
		}
		nd.kind = kind
		stack = append(stack, frame{node: idx, kind: kind})
		i++
		if i < n && data[i] <= ' ' {
			j = skipSpace(data, i)
			spaces = append(spaces, int32(i), int32(j))
			i = j
		}
		if i >= n {
			goto eof
		}
		if kind == Object {
			if data[i] == '}' {
				goto closeContainer
			}
			goto key
		}
		if data[i] == ']' {
			goto closeContainer
		}
		goto value
	case 't':
		kind, j = True, 4
	case 'f':
		kind, j = False, 5
	case 'n':
		kind, j = Null, 4
	default:
		if c != '-' && (c < '0' || c > '9') {
			return d.fail(nodes, stack, spaces, i, errValueStart, data)
		}
		j, code = scanNumber(data, i)
		if code != errNone {
			return d.fail(nodes, stack, spaces, j, code, data)
		}
		nd.kind, nd.end = Number, int32(j)
		i = j
		goto afterValue
	}
	// A literal: kind and its length j.
	if i+j > n || string(data[i:i+j]) != literals[kind] {
		j, code = literalError(data, i, literals[kind])
		return d.fail(nodes, stack, spaces, j, code, data)
	}
	nd.kind, nd.end = kind, int32(i+j)
	i += j

afterValue:
	// A value is complete; what may follow depends on its container.
	top = &stack[len(stack)-1]
	if top.kind == Missing {
		goto end
	}
	if i < n && data[i] <= ' ' {
		j = skipSpace(data, i)
		spaces = append(spaces, int32(i), int32(j))
		i = j
	}
	if i >= n {
		goto eof
	}
	c = data[i]
	if c == ',' {
		i++
		if top.kind == Object {
			goto key
		}
		goto value
	}
	if top.kind == Object {
		if c == '}' {
			goto closeContainer
		}
		return d.fail(nodes, stack, spaces, i, errAfterMember, data)
	}
	if c == ']' {
		goto closeContainer
	}
	return d.fail(nodes, stack, spaces, i, errAfterElement, data)

closeContainer:
	// data[i] closes the container on top of the stack.
	f = stack[len(stack)-1]
	stack = stack[:len(stack)-1]
	nodes[f.node].end = int32(i + 1)
	nodes[f.node].after = int32(len(nodes))
	nodes[f.node].n = f.count
	if f.count > 0 {
		nodes[f.last].flags |= flagLast
	}
	i++
	goto afterValue

key:
	if i < n && data[i] <= ' ' {
		j = skipSpace(data, i)
		spaces = append(spaces, int32(i), int32(j))
		i = j
	}
	if i >= n {
		goto eof
	}
	if data[i] != '"' {
		return d.fail(nodes, stack, spaces, i, errKeyStart, data)
	}
	kflags = flagMember
	if i+9 <= n {
		if t := specialBytes(binary.LittleEndian.Uint64(data[i+1:])); t != 0 {
			if j = i + 1 + bits.TrailingZeros64(t)>>3; data[j] == '"' {
				ks, ke = int32(i+1), int32(j)
				i = j + 1
				goto colon
			}
		}
	}
	j, flags, code = scanString(data, i+1)
	if code != errNone {
		return d.fail(nodes, stack, spaces, j, code, data)
	}
	ks, ke = int32(i+1), int32(j-1)
	if flags != 0 {
		kflags |= flagKeyEsc
	}
	i = j

colon:
	if i < n && data[i] <= ' ' {
		j = skipSpace(data, i)
		spaces = append(spaces, int32(i), int32(j))
		i = j
	}
	if i >= n {
		goto eof
	}
	if data[i] != ':' {
		return d.fail(nodes, stack, spaces, i, errAfterKey, data)
	}
	i++
	if skipping && len(stack) == 2 && kflags == flagMember {
		d.spaces = spaces
		j = d.skipMember(data, i, data[ks:ke])
		spaces = d.spaces
		if j > 0 {
			kflags = 0
			i = j
			goto afterValue
		}
	}
	goto value

end:
	if i < n && data[i] <= ' ' {
		i = skipSpace(data, i)
	}
	if i < n {
		return d.fail(nodes, stack, spaces, i, errAfterTop, data)
	}
	nodes[0].flags |= flagLast
	d.data, d.nodes, d.stack, d.spaces = data, nodes, stack[:0], spaces
	return Value{d: d, i: 0}, nil

eof:
	return d.fail(nodes, stack, spaces, n, errEOF, data)
}

// literals holds the text of the literal kinds.
var literals = [...]string{Null: "null", False: "false", True: "true"}

// fail keeps the buffers for reuse, leaves the Doc empty and returns the
// error for code at offset off.
func (d *Doc) fail(nodes []node, stack []frame, spaces []int32, off int, code errCode, data []byte) (Value, error) {
	d.data, d.nodes, d.stack, d.spaces, d.partial = nil, nodes[:0], stack[:0], spaces[:0], false
	return Value{}, &SyntaxError{Offset: int64(off), Msg: code.message(data, off)}
}

// skipValue returns the index past the object or array that starts at i,
// following strings (and their escapes) and brackets without validating
// anything else, or -1 when the text ends first or the value nests deeper
// than maxSkipDepth.
func skipValue(data []byte, i int) int {
	depth := 0
	n := len(data)
	for i < n {
		switch data[i] {
		case '"':
			i++
			for {
				for i+8 <= n {
					if t := quoteOrBackslash(binary.LittleEndian.Uint64(data[i:])); t != 0 {
						i += bits.TrailingZeros64(t) >> 3
						break
					}
					i += 8
				}
				for i < n && data[i] != '"' && data[i] != '\\' {
					i++
				}
				if i >= n {
					return -1
				}
				if data[i] == '"' {
					break
				}
				i += 2 // an escape: the escaped byte is never a closing quote
			}
		case '{', '[':
			depth++
			if depth > maxSkipDepth {
				return -1
			}
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// quoteOrBackslash returns a mask whose lowest set bit is the high bit of
// the lowest byte of x that is a quote or a backslash, and zero if none
// is.
func quoteOrBackslash(x uint64) uint64 {
	const (
		lo = 0x0101010101010101
		hi = 0x8080808080808080
	)
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	return (((q - lo) &^ q) | ((b - lo) &^ b)) & hi
}

// scanString scans a string whose opening quote is at i-1. It returns the
// index past the closing quote and flagStrEsc if the string holds escapes;
// on error, the offset of the problem and its code.
func scanString(data []byte, i int) (int, uint8, errCode) {
	var esc uint8
	n := len(data)
	for {
		// Skip runs of plain bytes eight at a time.
		for i+8 <= n {
			if t := specialBytes(binary.LittleEndian.Uint64(data[i:])); t != 0 {
				i += bits.TrailingZeros64(t) >> 3
				goto special
			}
			i += 8
		}
		for i < n && isPlain[data[i]] {
			i++
		}
		if i >= n {
			return n, esc, errEOF
		}
	special:
		switch c := data[i]; {
		case c == '"':
			return i + 1, esc, errNone
		case c == '\\':
			esc = flagStrEsc
			if i+1 >= n {
				return n, esc, errEOF
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= n {
						return n, esc, errEOF
					}
					if !isHex[data[k]] {
						return k, esc, errHex
					}
				}
				i += 6
			default:
				return i + 1, esc, errEscape
			}
		case c < 0x20:
			return i, esc, errControl
		default: // non-ASCII: the fast loops stop only at the cases above
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return i, esc, errUTF8
			}
			i += size
		}
	}
}

// specialBytes returns a mask of the bytes of x (eight string bytes, read
// little-endian) that are a quote, a backslash, a control character or
// non-ASCII: the mask has the high bit of the lowest such byte set, and
// zero if there is none. (Bits above the lowest may be spurious, set by
// borrows, so only the lowest is meaningful.)
func specialBytes(x uint64) uint64 {
	const (
		lo = 0x0101010101010101
		hi = 0x8080808080808080
	)
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	return (((q - lo) &^ q) | ((b - lo) &^ b) | ((x - lo*0x20) &^ x) | x) & hi
}

// skipSpace returns the index of the first byte at or after i that is not
// whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace[data[i]] {
		i++
	}
	return i
}

// scanNumber scans a number starting at i. It returns the index past it, or
// on error the offset of the problem and its code.
func scanNumber(data []byte, i int) (int, errCode) {
	n := len(data)
	if data[i] == '-' {
		i++
	}
	if i >= n {
		return n, errEOF
	}
	switch c := data[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i++
		for i < n && data[i]-'0' < 10 {
			i++
		}
	default:
		return i, errNumber
	}
	if i < n && data[i] == '.' {
		i++
		if i >= n {
			return n, errEOF
		}
		if data[i]-'0' >= 10 {
			return i, errNumber
		}
		for i < n && data[i]-'0' < 10 {
			i++
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= n {
			return n, errEOF
		}
		if data[i]-'0' >= 10 {
			return i, errNumber
		}
		for i < n && data[i]-'0' < 10 {
			i++
		}
	}
	return i, errNone
}

// literalError finds where the text at i stops matching lit.
func literalError(data []byte, i int, lit string) (int, errCode) {
	for k := 1; k < len(lit); k++ {
		if i+k >= len(data) {
			return len(data), errEOF
		}
		if data[i+k] != lit[k] {
			return i + k, errLiteral
		}
	}
	return i, errLiteral // unreachable for a mismatch
}

// growLimited grows nodes within the bound of LimitIndex for a text of n
// bytes, counting the whitespace runs and stage 1's marks too, or returns
// errIndex.
func (d *Doc) growLimited(nodes []node, spaces []int32, n int) ([]node, errCode) {
	const size = int(unsafe.Sizeof(node{}))
	limit := max(d.limitFloor, d.limitPerByte*n) - cap(spaces)*4 - cap(d.marks)*8
	want := max(2*cap(nodes), 64)
	want = min(want, limit/size)
	if want <= len(nodes) {
		return nodes, errIndex
	}
	return slices.Grow(nodes, want-len(nodes)), errNone
}

// errCode says what Parse found wrong; message renders it.
type errCode uint8

const (
	errNone errCode = iota
	errEOF
	errValueStart
	errKeyStart
	errAfterKey
	errAfterMember
	errAfterElement
	errAfterTop
	errControl
	errEscape
	errHex
	errUTF8
	errNumber
	errLiteral
	errDepth
	errIndex
)

// message describes the error at offset off of data.
func (e errCode) message(data []byte, off int) string {
	var c string
	if off < len(data) {
		c = quoteByte(data[off])
	}
	switch e {
	case errEOF:
		return "unexpected end of JSON input"
	case errIndex:
		return "more JSON values than the memory bound allows for a text of this length"
	case errValueStart:
		return "invalid character " + c + " looking for beginning of value"
	case errKeyStart:
		return "invalid character " + c + " looking for beginning of object key string"
	case errAfterKey:
		return "invalid character " + c + " after object key"
	case errAfterMember:
		return "invalid character " + c + " after object key:value pair"
	case errAfterElement:
		return "invalid character " + c + " after array element"
	case errAfterTop:
		return "invalid character " + c + " after top-level value"
	case errControl:
		return "invalid character " + c + " in string literal"
	case errEscape:
		return "invalid character " + c + " in string escape code"
	case errHex:
		return "invalid character " + c + ` in \u hexadecimal character escape`
	case errUTF8:
		return "invalid UTF-8 in string"
	case errNumber:
		return "invalid character " + c + " in numeric literal"
	case errLiteral:
		// The literal's matching prefix runs back from off to its start.
		start := off
		for start > 0 && data[start-1] >= 'a' && data[start-1] <= 'z' {
			start--
		}
		for _, lit := range literals {
			if lit != "" && lit[0] == data[start] && off-start < len(lit) {
				return "invalid character " + c + " in literal " + lit + " (expecting " + quoteByte(lit[off-start]) + ")"
			}
		}
		return "invalid character " + c + " in literal"
	case errDepth:
		return "exceeded max depth of " + strconv.Itoa(MaxDepth)
	}
	return "invalid JSON"
}

// quoteByte quotes a byte for a message: 'x', '\n', or byte 0xff.
func quoteByte(b byte) string {
	if b >= utf8.RuneSelf {
		return "byte 0x" + strconv.FormatUint(uint64(b), 16)
	}
	return strconv.QuoteRuneToASCII(rune(b))
}
