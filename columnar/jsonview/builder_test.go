package jsonview

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
)

// buildFrom writes a value chosen by the bytes of src with b, as a nested
// column's encoder would: objects and arrays nested up to depth 6,
// strings (keys among them) cut from src itself so that every byte value
// and escape turns up, numbers, booleans and null.
type buildFrom struct {
	src []byte
	pos int
}

func (g *buildFrom) next() byte {
	if g.pos >= len(g.src) {
		return 0
	}
	c := g.src[g.pos]
	g.pos++
	return c
}

func (g *buildFrom) str() []byte {
	n := int(g.next() % 9)
	end := min(g.pos+n, len(g.src))
	s := g.src[g.pos:end]
	g.pos = end
	return s
}

func (g *buildFrom) value(b *Builder, depth int) {
	c := g.next()
	if depth >= 6 && c%8 >= 6 {
		c = 0
	}
	switch c % 8 {
	case 0:
		if g.next()%2 == 0 {
			b.StringBytes(g.str())
		} else {
			s := b.Begin()
			text, esc := appendJSONString(b.Buf, g.str())
			b.Buf = text
			b.EndString(s, esc)
		}
	case 1:
		s := b.Begin()
		b.Buf = strconv.AppendInt(b.Buf, int64(int8(g.next()))*1000003, 10)
		b.End(Number, s)
	case 2:
		s := b.Begin()
		b.Buf = strconv.AppendFloat(b.Buf, float64(g.next())/7, 'f', -1, 64)
		b.End(Number, s)
	case 3:
		s := b.Begin()
		b.Buf = append(b.Buf, "true"...)
		b.End(True, s)
	case 4:
		s := b.Begin()
		b.Buf = append(b.Buf, "false"...)
		b.End(False, s)
	case 5:
		s := b.Begin()
		b.Buf = append(b.Buf, "null"...)
		b.End(Null, s)
	case 6:
		b.Open(Array)
		for range g.next() % 5 {
			g.value(b, depth+1)
		}
		b.Close(Array)
	case 7:
		b.Open(Object)
		for k := range g.next() % 5 {
			switch k % 3 {
			case 0:
				b.KeyBytes(g.str())
			case 1:
				b.Key(string(g.str()))
			default:
				q, esc := appendJSONString(nil, g.str())
				b.KeyQuoted(q, esc)
			}
			g.value(b, depth+1)
		}
		b.Close(Object)
	}
}

// checkBuilt builds a value from src, after a value written before it in
// the same Builder, and checks that its text is what a text-only Builder
// writes and that its index is node for node the one Parse builds.
func checkBuilt(t *testing.T, src []byte) {
	var b Builder
	b.Buf = append(b.Buf, "{}"...)
	b.Start()
	(&buildFrom{src: []byte{7, 1, 0, 6, 2, 3}}).value(&b, 0)
	var first Doc
	b.Finish(&first)
	firstNodes := slices.Clone(first.nodes)
	start := len(b.Buf)
	b.Start()
	(&buildFrom{src: src}).value(&b, 0)
	var built Doc
	root := b.Finish(&built)
	text := b.Buf[start:]

	plain := NewBuilder(nil, false)
	plain.Start()
	(&buildFrom{src: src}).value(plain, 0)
	if string(plain.Buf) != string(text) {
		t.Fatalf("indexed text %q, text only %q", text, plain.Buf)
	}
	if string(root.Raw()) != string(text) {
		t.Fatalf("root %q, text %q", root.Raw(), text)
	}
	var parsed Doc
	if _, err := parsed.Parse(text); err != nil {
		t.Fatalf("built text %q: %v", text, err)
	}
	if len(parsed.nodes) != len(built.nodes) {
		t.Fatalf("%q: %d nodes built, Parse %d", text, len(built.nodes), len(parsed.nodes))
	}
	for k := range parsed.nodes {
		if parsed.nodes[k] != built.nodes[k] {
			t.Fatalf("%q: node %d built %+v, Parse %+v", text, k, built.nodes[k], parsed.nodes[k])
		}
	}
	if !slices.Equal(first.nodes, firstNodes) {
		t.Fatal("a later value changed an earlier one's nodes")
	}
}

func TestBuilder(t *testing.T) {
	for _, src := range [][]byte{
		{0, 0},
		{5},
		{6, 0},
		{7, 0},
		{7, 3, 2, 'a', 'b', 0, 3, '"', '\\', '\n', 6, 2, 1, 9, 4, 2, 0xff, 'k', 1, 200},
		[]byte("\x07\x04\x03\xe2\x80\xa8\x06\x03\x07\x01\x00\x00\x05\x06\x01\x06\x01\x07\x00"),
	} {
		t.Run(fmt.Sprintf("%x", src), func(t *testing.T) { checkBuilt(t, src) })
	}
}

func TestBuilderAbort(t *testing.T) {
	var b Builder
	b.Start()
	(&buildFrom{src: []byte{7, 1, 0, 5}}).value(&b, 0)
	var d Doc
	b.Finish(&d)
	want := string(b.Buf)
	b.Start()
	b.Open(Object)
	b.Key("x")
	b.Abort()
	if string(b.Buf) != want || len(b.nodes) != len(d.nodes) {
		t.Fatalf("after Abort: %q and %d nodes, want %q and %d", b.Buf, len(b.nodes), want, len(d.nodes))
	}
}

// FuzzBuilder: the Builder's index of every value it writes is the one
// Parse builds from the text.
func FuzzBuilder(f *testing.F) {
	f.Add([]byte{7, 3, 2, 'a', 'b', 0, 3, '"', '\\', '\n', 6, 2, 1, 9})
	f.Add([]byte("\x06\x04\x07\x02\x00\x01x\x06\x00\x03\x02\x04\x07\x01\x00\x02\x1f\x7f"))
	f.Fuzz(func(t *testing.T, src []byte) { checkBuilt(t, src) })
}
