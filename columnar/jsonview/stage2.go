package jsonview

import (
	"math/bits"
	"slices"
)

// parseIndexed indexes data as parseScalar does without skipping, but in
// two stages (see stage1): it writes the same nodes and whitespace runs
// for every text parseScalar accepts, and reports false, leaving the Doc
// empty, for every text parseScalar refuses, without naming the error.
func (d *Doc) parseIndexed(data []byte) (Value, bool) {
	if len(data) > maxText {
		return Value{}, false
	}
	d.data = nil
	d.partial = false
	n := len(data)
	marks := d.marks
	if m := marksLen(n); m > cap(marks) {
		marks = make([]uint64, m)
	} else {
		marks = marks[:m]
	}
	d.marks = marks
	// The nodes, the whitespace runs, the stack of open containers and
	// the next key are read and written in the Doc rather than in local
	// variables, which the compiler would spill at every label.
	d.spaces = d.spaces[:0]
	d.stack = append(d.stack[:0], frame{node: -1})
	d.nodes = d.nodes[:0]
	top := &d.stack[0]
	d.key = key{}
	var (
		i     int   // the next byte to read
		j     int   // scan results
		idx   int32 // the node being written
		c     byte
		code  errCode
		kind  Kind
		flags uint8
		t     uint64
		ok    bool
		nd    *node
		f     frame
	)
	if !stage1(data, marks) {
		goto fail
	}

value:
	if i < n && data[i] <= ' ' {
		i = d.space(data, i)
	}
	if i >= n {
		goto fail
	}
	idx = int32(len(d.nodes))
	top.count++
	top.last = idx
	if len(d.nodes) == cap(d.nodes) {
		if d.limitPerByte > 0 {
			if d.nodes, code = d.growLimited(d.nodes, d.spaces, n); code != errNone {
				goto fail
			}
		} else {
			d.nodes = slices.Grow(d.nodes, 1)
		}
	}
	d.nodes = d.nodes[:idx+1]
	nd = &d.nodes[idx]
	nd.start, nd.after, nd.n = int32(i), idx+1, 0
	// As in parseScalar, an element keeps the span of the key before it
	// (not read: it has no flagMember).
	nd.keyStart, nd.keyEnd, nd.flags = d.key.start, d.key.end, d.key.flags
	d.key.flags = 0
	c = data[i]
	switch c {
	case '"':
		// The next mark closes most strings: a quote.
		j = i + 1
		if t = marks[j>>6] >> (j & 63); t != 0 {
			if j += bits.TrailingZeros64(t); data[j] == '"' {
				j++
				nd.kind, nd.end = String, int32(j)
				i = j
				goto afterValue
			}
		}
		if j, flags, ok = closeString(data, marks, i+1); !ok {
			goto fail
		}
		nd.kind, nd.end = String, int32(j)
		nd.flags |= flags
		i = j
		goto afterValue
	case '{', '[':
		if len(d.stack) > MaxDepth {
			goto fail
		}
		kind = Array
		if c == '{' {
			kind = Object
		}
		nd.kind = kind
		d.stack = append(d.stack, frame{node: idx, kind: kind})
		top = &d.stack[len(d.stack)-1]
		i++
		if i < n && data[i] <= ' ' {
			j = skipSpace(data, i)
			d.spaces = append(d.spaces, int32(i), int32(j))
			i = j
		}
		if i >= n {
			goto fail
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
			goto fail
		}
		if j, code = scanNumber(data, i); code != errNone {
			goto fail
		}
		nd.kind, nd.end = Number, int32(j)
		i = j
		goto afterValue
	}
	// A literal: kind and its length j.
	if i+j > n || string(data[i:i+j]) != literals[kind] {
		goto fail
	}
	nd.kind, nd.end = kind, int32(i+j)
	i += j

afterValue:
	if top.kind == Missing {
		goto end
	}
	if i < n && data[i] <= ' ' {
		i = d.space(data, i)
	}
	if i >= n {
		goto fail
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
		goto fail
	}
	if c == ']' {
		goto closeContainer
	}
	goto fail

closeContainer:
	f = *top
	d.stack = d.stack[:len(d.stack)-1]
	top = &d.stack[len(d.stack)-1]
	nd = &d.nodes[f.node]
	nd.end = int32(i + 1)
	nd.after = int32(len(d.nodes))
	nd.n = f.count
	if f.count > 0 {
		d.nodes[f.last].flags |= flagLast
	}
	i++
	goto afterValue

key:
	if i < n && data[i] <= ' ' {
		i = d.space(data, i)
	}
	if i >= n || data[i] != '"' {
		goto fail
	}
	j = i + 1
	if t = marks[j>>6] >> (j & 63); t != 0 {
		if j += bits.TrailingZeros64(t); data[j] == '"' {
			d.key = key{int32(i + 1), int32(j), flagMember}
			i = j + 1
			goto colon
		}
	}
	if j, flags, ok = closeString(data, marks, i+1); !ok {
		goto fail
	}
	d.key = key{int32(i + 1), int32(j - 1), flagMember}
	if flags != 0 {
		d.key.flags |= flagKeyEsc
	}
	i = j

colon:
	if i < n && data[i] <= ' ' {
		i = d.space(data, i)
	}
	if i >= n || data[i] != ':' {
		goto fail
	}
	i++
	goto value

end:
	if i < n && data[i] <= ' ' {
		i = skipSpace(data, i)
	}
	if i < n {
		goto fail
	}
	d.nodes[0].flags |= flagLast
	d.data, d.stack = data, d.stack[:0]
	return Value{d: d, i: 0}, true

fail:
	d.data, d.nodes, d.stack, d.spaces, d.partial = nil, d.nodes[:0], d.stack[:0], d.spaces[:0], false
	return Value{}, false
}

// space records the whitespace run at i and returns the index past it. It
// is kept out of line, off parseIndexed's common path: stored states are
// compact.
//
//go:noinline
func (d *Doc) space(data []byte, i int) int {
	j := skipSpace(data, i)
	d.spaces = append(d.spaces, int32(i), int32(j))
	return j
}

// key is the key of the member whose value stage 2 reads next.
type key struct {
	start, end int32 // the key's text without quotes
	flags      uint8 // flagMember, and flagKeyEsc if it holds escapes
}

// closeString returns the index past the closing quote of the string
// whose opening quote is at i-1, found in stage 1's marks, and flagStrEsc
// if the string holds escapes, which it checks. It reports false when the
// string does not end or an escape is malformed.
func closeString(data []byte, marks []uint64, i int) (int, uint8, bool) {
	var esc uint8
	n := len(data)
	for {
		w := i >> 6
		m := marks[w] & (^uint64(0) << (i & 63))
		for m == 0 {
			w++
			if w >= len(marks) {
				return 0, 0, false
			}
			m = marks[w]
		}
		p := w<<6 + bits.TrailingZeros64(m)
		if data[p] == '"' {
			return p + 1, esc, true
		}
		// A backslash that starts an escape.
		esc = flagStrEsc
		if p+1 >= n {
			return 0, 0, false
		}
		switch data[p+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i = p + 2
		case 'u':
			if p+6 > n || !isHex[data[p+2]] || !isHex[data[p+3]] || !isHex[data[p+4]] || !isHex[data[p+5]] {
				return 0, 0, false
			}
			i = p + 6
		default:
			return 0, 0, false
		}
	}
}
