package jsonview

import "bytes"

// Builder writes compact JSON text and its index together, for values
// whose structure is known as they are written, such as those of nested
// Arrow columns: the Doc a value ends in is the one Parse would build from
// its text (the same nodes, kinds, spans, counts and flags), without the
// text being read again.
//
// A value is written between Start and Finish. Scalars are appended to Buf
// by the caller between Begin, which writes the comma an element needs and
// returns where the value starts, and End, which records its node; Open and
// Close write a container's brackets, Key a member's name and colon. The
// caller is trusted to write valid JSON text of the kind it names (numbers
// in JSON syntax, strings quoted and escaped): the Builder does not read
// the text back. Abort drops what a failed value wrote.
//
// The Docs a Builder fills hold its text and nodes in place: Buf and the
// node slice are only appended to, so a finished value stays valid while
// later values are written, until Reset, after which the Values of every
// Doc the Builder filled must not be used. The zero Builder indexes; one
// made by NewBuilder with index false writes the text only, and Finish
// must not be called on it.
type Builder struct {
	Buf   []byte
	nodes []node
	stack []frame
	key   key
	base  int   // where the current value's text starts in Buf
	nbase int32 // its first node
	text  bool  // text only: no index
}

// NewBuilder returns a Builder that writes text into buf, indexing it when
// index is true.
func NewBuilder(buf []byte, index bool) *Builder {
	return &Builder{Buf: buf, text: !index}
}

// Indexing reports whether the Builder indexes what it writes.
func (b *Builder) Indexing() bool { return !b.text }

// Reset empties the node store for a new round of values, keeping its
// memory; Buf is the caller's.
func (b *Builder) Reset() {
	b.nodes = b.nodes[:0]
	b.stack = b.stack[:0]
}

// Start begins a value at the end of Buf.
func (b *Builder) Start() {
	b.base = len(b.Buf)
	b.nbase = int32(len(b.nodes))
	b.stack = append(b.stack[:0], frame{node: -1})
	b.key = key{}
}

// Abort drops the text and nodes of the value begun by Start.
func (b *Builder) Abort() {
	b.Buf = b.Buf[:b.base]
	b.nodes = b.nodes[:b.nbase]
	b.stack = b.stack[:0]
}

// Begin writes the comma before an array element that has a sibling
// before it, and returns where the value's text starts in Buf.
func (b *Builder) Begin() int {
	if !b.text {
		if top := &b.stack[len(b.stack)-1]; top.kind == Array && top.count > 0 {
			b.Buf = append(b.Buf, ',')
		}
	} else if n := len(b.Buf); n > b.base {
		// Text only: a value follows a comma, an opening bracket or a
		// colon, else it is an element after another.
		if c := b.Buf[n-1]; c != '[' && c != ':' && c != ',' && c != '{' {
			b.Buf = append(b.Buf, ',')
		}
	}
	return len(b.Buf)
}

// Pause stops indexing until Resume, for text written as part of
// something else (a map's string key, which Key's span records); it
// returns whether the Builder was indexing.
func (b *Builder) Pause() bool {
	was := !b.text
	b.text = true
	return was
}

// Resume undoes Pause.
func (b *Builder) Resume(was bool) { b.text = !was }

// push records a node of kind starting at start (an offset in Buf) as the
// next child of the open container.
func (b *Builder) push(kind Kind, start int) *node {
	top := &b.stack[len(b.stack)-1]
	idx := int32(len(b.nodes)) - b.nbase
	top.count++
	top.last = idx
	b.nodes = append(b.nodes, node{
		start: int32(start - b.base), after: idx + 1, kind: kind,
		keyStart: b.key.start, keyEnd: b.key.end, flags: b.key.flags,
	})
	b.key.flags = 0
	return &b.nodes[len(b.nodes)-1]
}

// End records the scalar of kind written to Buf from start, which Begin
// returned. A string's text must hold no escape (EndString says).
func (b *Builder) End(kind Kind, start int) {
	if b.text {
		return
	}
	nd := b.push(kind, start)
	nd.end = int32(len(b.Buf) - b.base)
}

// EndString records the string written to Buf from start, which Begin
// returned; esc says whether its text holds an escape.
func (b *Builder) EndString(start int, esc bool) {
	if b.text {
		return
	}
	nd := b.push(String, start)
	nd.end = int32(len(b.Buf) - b.base)
	if esc {
		nd.flags |= flagStrEsc
	}
}

// String writes s as a JSON string (AppendJSONString).
func (b *Builder) String(s string) {
	start := b.Begin()
	var esc bool
	b.Buf, esc = appendJSONString(b.Buf, s)
	b.EndString(start, esc)
}

// StringBytes is String for bytes.
func (b *Builder) StringBytes(s []byte) {
	start := b.Begin()
	var esc bool
	b.Buf, esc = appendJSONString(b.Buf, s)
	b.EndString(start, esc)
}

// Open writes the opening bracket of an object or array.
func (b *Builder) Open(kind Kind) {
	start := b.Begin()
	c := byte('[')
	if kind == Object {
		c = '{'
	}
	b.Buf = append(b.Buf, c)
	if b.text {
		return
	}
	b.push(kind, start)
	b.stack = append(b.stack, frame{node: int32(len(b.nodes)) - 1 - b.nbase, kind: kind})
}

// Close writes the closing bracket of the innermost open container.
func (b *Builder) Close(kind Kind) {
	c := byte(']')
	if kind == Object {
		c = '}'
	}
	b.Buf = append(b.Buf, c)
	if b.text {
		return
	}
	f := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	nd := &b.nodes[b.nbase+f.node]
	nd.end = int32(len(b.Buf) - b.base)
	nd.after = int32(len(b.nodes)) - b.nbase
	nd.n = f.count
	if f.count > 0 {
		b.nodes[b.nbase+f.last].flags |= flagLast
	}
}

// Key writes a member's name, quoted and escaped as AppendJSONString does,
// and the colon, with the comma before it when a member precedes it.
func (b *Builder) Key(name string) {
	b.comma()
	start := len(b.Buf)
	var esc bool
	b.Buf, esc = appendJSONString(b.Buf, name)
	b.keyEnd(start, esc)
}

// KeyBytes is Key for a name held in bytes.
func (b *Builder) KeyBytes(name []byte) {
	b.comma()
	start := len(b.Buf)
	var esc bool
	b.Buf, esc = appendJSONString(b.Buf, name)
	b.keyEnd(start, esc)
}

// KeyQuoted is Key for a name already quoted and escaped (the text
// AppendJSONString writes); esc says whether it holds an escape.
func (b *Builder) KeyQuoted(quoted []byte, esc bool) {
	b.comma()
	start := len(b.Buf)
	b.Buf = append(b.Buf, quoted...)
	b.keyEnd(start, esc)
}

// KeyText writes the member name whose quoted text was written to Buf
// from start (by a map's key encoder, say): the colon, and the key's span.
// The comma before it is the caller's, written by KeyComma before start.
func (b *Builder) KeyText(start int) {
	b.keyEnd(start, bytes.IndexByte(b.Buf[start+1:len(b.Buf)-1], '\\') >= 0)
}

// KeyComma writes the comma before a member that follows another.
func (b *Builder) KeyComma() { b.comma() }

func (b *Builder) comma() {
	if !b.text {
		if b.stack[len(b.stack)-1].count > 0 {
			b.Buf = append(b.Buf, ',')
		}
	} else if n := len(b.Buf); n > b.base && b.Buf[n-1] != '{' {
		b.Buf = append(b.Buf, ',')
	}
}

func (b *Builder) keyEnd(start int, esc bool) {
	end := len(b.Buf)
	b.Buf = append(b.Buf, ':')
	if b.text {
		return
	}
	b.key = key{int32(start + 1 - b.base), int32(end - 1 - b.base), flagMember}
	if esc {
		b.key.flags |= flagKeyEsc
	}
}

// Finish ends the value begun by Start, which must be complete (every
// container closed): d becomes its index, with its text as d's data, and
// the root is returned. d must not be parsed into while other Docs the
// Builder filled are in use.
func (b *Builder) Finish(d *Doc) Value {
	end := len(b.nodes)
	b.nodes[b.nbase].flags |= flagLast
	d.data = b.Buf[b.base:len(b.Buf):len(b.Buf)]
	d.nodes = b.nodes[b.nbase:end:end]
	d.stack, d.spaces, d.partial, d.marks = nil, nil, false, nil
	return Value{d: d}
}
