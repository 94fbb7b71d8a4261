package jsonview

import (
	"bytes"
	"io"
)

// WriteCompact writes the value's text to w without the whitespace outside
// its strings, as encoding/json.Compact writes it (every token as written),
// and writes nothing for Missing. Parse records where it skipped
// whitespace, so the text is written in the pieces between those runs
// without being scanned again: a value written without whitespace is one
// Write. The root of a ParseSkipping, whose left-out members were not
// scanned for whitespace, is scanned as WriteCompactText does.
func (v Value) WriteCompact(w io.Writer) {
	if v.d == nil {
		return
	}
	d := v.d
	p := &d.nodes[v.i]
	start, end := p.start, p.end
	text := d.data[start:end:end]
	if d.partial && v.i == 0 {
		WriteCompactText(w, text)
		return
	}
	// The first run at or after the value's start; the runs in the value
	// follow it, up to the value's end (a value begins and ends with a
	// token, so a run is either in it or out of it).
	spaces := d.spaces
	lo, hi := 0, len(spaces)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if spaces[2*m] < start {
			lo = m + 1
		} else {
			hi = m
		}
	}
	k := 2 * lo
	if k == len(spaces) || spaces[k] >= end {
		w.Write(text)
		return
	}
	at := start
	for ; k < len(spaces) && spaces[k] < end; k += 2 {
		if spaces[k] > at {
			w.Write(d.data[at:spaces[k]])
		}
		at = spaces[k+1]
	}
	if at < end {
		w.Write(d.data[at:end])
	}
}

// WriteCompactText writes text, valid JSON, to w without the whitespace
// outside its strings, as WriteCompact does for an indexed value. Compact
// text is written in one piece; strings are skipped with bytes.IndexByte,
// so the cost is mostly the scan for quotes.
func WriteCompactText(w io.Writer, text []byte) {
	start := 0
	for i := 0; i < len(text); {
		switch text[i] {
		case '"':
			i = stringEnd(text, i+1)
		case ' ', '\t', '\n', '\r':
			w.Write(text[start:i])
			for i++; i < len(text) && isSpace[text[i]]; i++ {
			}
			start = i
		default:
			i++
		}
	}
	w.Write(text[start:])
}

// stringEnd returns the index after the closing quote of the string whose
// content starts at i (len(text) when it has none). A quote is escaped
// when an odd number of backslashes precede it.
func stringEnd(text []byte, i int) int {
	for {
		j := bytes.IndexByte(text[i:], '"')
		if j < 0 {
			return len(text)
		}
		j += i
		k := j
		for k > i && text[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
}
