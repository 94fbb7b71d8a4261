package jsonview

import (
	"math/bits"
	"slices"
)

// parseIndexed indexes data as parseScalar does without skipping, but in
// two stages (see stage1): it writes the same nodes and whitespace runs
// for every text parseScalar accepts, and reports false, leaving the Doc
// empty, for every text parseScalar refuses, without naming the error.
//
// Stage 2 runs in walk, which calls no function, so that the compiler
// keeps its state in registers instead of spilling it at every label;
// walk returns here for what needs a call (whitespace, a string holding
// escapes or not closed by the next mark, a number with an exponent, a
// full buffer), which this loop does before walking on.
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
	d.spaces = d.spaces[:0]
	d.stack = append(d.stack[:0], frame{node: -1})
	d.nodes = d.nodes[:0]
	d.key = key{}
	if !stage1(data, marks) {
		return d.failIndexed()
	}
	i, at := 0, atValue
	for {
		var ev event
		i, at, ev = d.walk(data, marks, i, at)
		switch ev {
		case evSpace:
			j := d.space(data, i)
			if j == i { // a control character, not whitespace
				return d.failIndexed()
			}
			i = j
		case evGrow:
			if d.limitPerByte > 0 {
				var code errCode
				if d.nodes, code = d.growLimited(d.nodes, d.spaces, n); code != errNone {
					return d.failIndexed()
				}
			} else {
				d.nodes = slices.Grow(d.nodes, 1)
			}
		case evPush:
			nd := &d.nodes[len(d.nodes)-1]
			d.stack = append(d.stack, frame{node: int32(len(d.nodes) - 1), kind: nd.kind})
			i++
		case evString:
			j, flags, ok := closeString(data, marks, i+1)
			if !ok {
				return d.failIndexed()
			}
			nd := &d.nodes[len(d.nodes)-1]
			nd.kind, nd.end = String, int32(j)
			nd.flags |= flags
			i = j
		case evKey:
			j, flags, ok := closeString(data, marks, i+1)
			if !ok {
				return d.failIndexed()
			}
			d.key = key{int32(i + 1), int32(j - 1), flagMember}
			if flags != 0 {
				d.key.flags |= flagKeyEsc
			}
			i = j
		case evNumber:
			j, code := scanNumber(data, i)
			if code != errNone {
				return d.failIndexed()
			}
			nd := &d.nodes[len(d.nodes)-1]
			nd.kind, nd.end = Number, int32(j)
			i = j
		case evEnd:
			if i < n && data[i] <= ' ' {
				i = skipSpace(data, i)
			}
			if i < n {
				return d.failIndexed()
			}
			d.nodes[0].flags |= flagLast
			d.data, d.stack = data, d.stack[:0]
			return Value{d: d, i: 0}, true
		default:
			return d.failIndexed()
		}
	}
}

// failIndexed leaves the Doc empty, keeping its buffers, and reports
// false.
func (d *Doc) failIndexed() (Value, bool) {
	d.data, d.nodes, d.stack, d.spaces, d.partial = nil, d.nodes[:0], d.stack[:0], d.spaces[:0], false
	return Value{}, false
}

// A resume is where walk starts: the state of parseScalar it stands for.
type resume uint8

const (
	atValue  resume = iota // value: a value is due at i, maybe after whitespace
	atAfter                // afterValue: a value ended at i
	atKey                  // key: a member's key is due at i
	atColon                // colon: the colon after a key is due at i
	atOpened               // a container opened at i-1
)

// An event is why walk returned.
type event uint8

const (
	evFail   event = iota // the text is invalid
	evSpace               // whitespace at i: record it, and resume
	evGrow                // the nodes are full: grow them, and resume
	evPush                // the node last written opens a container at i: push it, step past i, and resume
	evString              // the string of the node last written opens at i: close it, and resume after it
	evKey                 // a key opens at i: close it, set the next key, and resume after it
	evNumber              // the number of the node last written starts at i: scan it, and resume after it (or refuse it)
	evEnd                 // the root value ended at i
)

// walk is parseIndexed's state machine from state at with the next byte at
// i, until it meets an event, which it returns with the index and the
// state to resume at.
func (d *Doc) walk(data []byte, marks []uint64, i int, at resume) (int, resume, event) {
	n := len(data)
	top := &d.stack[len(d.stack)-1]
	var (
		j    int
		idx  int32
		c    byte
		t    uint64
		kind Kind
		nd   *node
		f    frame
	)
	switch at {
	case atAfter:
		goto afterValue
	case atKey:
		goto key
	case atColon:
		goto colon
	case atOpened:
		goto opened
	}

value:
	if i < n && data[i] <= ' ' {
		return i, atValue, evSpace
	}
	if i >= n {
		return i, atValue, evFail
	}
	if len(d.nodes) == cap(d.nodes) {
		return i, atValue, evGrow
	}
	idx = int32(len(d.nodes))
	top.count++
	top.last = idx
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
		return i, atAfter, evString
	case '{', '[':
		if len(d.stack) > MaxDepth {
			return i, atValue, evFail
		}
		kind = Array
		if c == '{' {
			kind = Object
		}
		nd.kind = kind
		if len(d.stack) == cap(d.stack) {
			return i, atOpened, evPush
		}
		d.stack = d.stack[:len(d.stack)+1]
		top = &d.stack[len(d.stack)-1]
		*top = frame{node: idx, kind: kind}
		i++
		goto opened
	case 't':
		if i+4 > n || string(data[i:i+4]) != "true" {
			return i, atValue, evFail
		}
		nd.kind, nd.end = True, int32(i+4)
		i += 4
		goto afterValue
	case 'f':
		if i+5 > n || string(data[i:i+5]) != "false" {
			return i, atValue, evFail
		}
		nd.kind, nd.end = False, int32(i+5)
		i += 5
		goto afterValue
	case 'n':
		if i+4 > n || string(data[i:i+4]) != "null" {
			return i, atValue, evFail
		}
		nd.kind, nd.end = Null, int32(i+4)
		i += 4
		goto afterValue
	}
	if c != '-' && (c < '0' || c > '9') {
		return i, atValue, evFail
	}
	// A number: scanNumber's work, here for those without an exponent,
	// which are most.
	j = i
	if c == '-' {
		j++
	}
	if j < n && data[j]-'0' < 10 {
		if data[j] == '0' {
			j++
		} else {
			for j++; j < n && data[j]-'0' < 10; j++ {
			}
		}
		if j < n && data[j] == '.' {
			if j+1 >= n || data[j+1]-'0' >= 10 {
				return i, atAfter, evNumber
			}
			for j += 2; j < n && data[j]-'0' < 10; j++ {
			}
		}
		if j >= n || data[j]|0x20 != 'e' {
			nd.kind, nd.end = Number, int32(j)
			i = j
			goto afterValue
		}
	}
	return i, atAfter, evNumber

opened:
	// The container on top of the stack opened at i-1.
	if i < n && data[i] <= ' ' {
		return i, atOpened, evSpace
	}
	if i >= n {
		return i, atOpened, evFail
	}
	if top.kind == Object {
		if data[i] == '}' {
			goto closeContainer
		}
		goto key
	}
	if data[i] == ']' {
		goto closeContainer
	}
	goto value

afterValue:
	if top.kind == Missing {
		return i, atAfter, evEnd
	}
	if i < n && data[i] <= ' ' {
		return i, atAfter, evSpace
	}
	if i >= n {
		return i, atAfter, evFail
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
		return i, atAfter, evFail
	}
	if c == ']' {
		goto closeContainer
	}
	return i, atAfter, evFail

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
		return i, atKey, evSpace
	}
	if i >= n || data[i] != '"' {
		return i, atKey, evFail
	}
	j = i + 1
	if t = marks[j>>6] >> (j & 63); t != 0 {
		if j += bits.TrailingZeros64(t); data[j] == '"' {
			d.key = key{int32(i + 1), int32(j), flagMember}
			i = j + 1
			goto colon
		}
	}
	return i, atColon, evKey

colon:
	if i < n && data[i] <= ' ' {
		return i, atColon, evSpace
	}
	if i >= n || data[i] != ':' {
		return i, atColon, evFail
	}
	i++
	goto value
}

// space records the whitespace run at i and returns the index past it.
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
