package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

var bom = []byte("\xef\xbb\xbf")

// skipBOM returns a buffered reader of r past a leading UTF-8 byte order
// mark, and the mark's length (0 or 3).
func skipBOM(r io.Reader) (*bufio.Reader, int64) {
	br := bufio.NewReaderSize(r, 256<<10)
	if p, _ := br.Peek(3); bytes.Equal(p, bom) {
		br.Discard(3)
		return br, 3
	}
	return br, 0
}

// stream walks one JSON text with a json.Decoder: the structure (the
// top-level object's keys, the brackets of arrays) token by token, and
// each element of the arrays that hold records as a whole, into raw,
// which is reused.
type stream struct {
	name string
	dec  *json.Decoder
	base int64 // bytes before the decoder's input (a byte order mark)
	in   *counter
	raw  json.RawMessage
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func newStream(name string, r io.Reader) *stream {
	br, n := skipBOM(r)
	in := &counter{r: br}
	return &stream{name: name, dec: json.NewDecoder(in), base: n, in: in}
}

// offset is the byte offset in the file of the decoder's position.
func (s *stream) offset() int64 { return s.base + s.dec.InputOffset() }

// fail wraps a decoding error with the file's name and the byte offset; a
// text that ends early says so.
func (s *stream) fail(what string, err error) error {
	off := s.offset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = s.base + se.Offset
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		// the text ends where the input does.
		return fmt.Errorf("read %s: %s: truncated at byte %d: %w", s.name, what, s.base+s.in.n, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("read %s: %s at byte %d: %w", s.name, what, off, err)
}

// delim reads the next token, which must be the delimiter want.
func (s *stream) delim(what string, want json.Delim) error {
	tok, err := s.dec.Token()
	if err != nil {
		return s.fail(what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("read %s: %s at byte %d: want %q, found %v", s.name, what, s.offset(), string(want), tokenText(tok))
	}
	return nil
}

// key reads the next key of an object, or reports end when the object
// closes.
func (s *stream) key(what string) (key string, end bool, err error) {
	tok, err := s.dec.Token()
	if err != nil {
		return "", false, s.fail(what, err)
	}
	switch t := tok.(type) {
	case string:
		return t, false, nil
	case json.Delim:
		if t == '}' {
			return "", true, nil
		}
	}
	return "", false, fmt.Errorf("read %s: %s at byte %d: unexpected %v", s.name, what, s.offset(), tokenText(tok))
}

// arrayOrNull reads the start of an array; a null reads as an empty one
// (ok false).
func (s *stream) arrayOrNull(what string) (ok bool, err error) {
	tok, err := s.dec.Token()
	if err != nil {
		return false, s.fail(what, err)
	}
	if tok == nil {
		return false, nil
	}
	if d, isDelim := tok.(json.Delim); isDelim && d == '[' {
		return true, nil
	}
	return false, fmt.Errorf("read %s: %s at byte %d: want an array, found %v", s.name, what, s.offset(), tokenText(tok))
}

// element decodes the next element of the array being read into s.raw,
// and reports false at the array's end (after its closing bracket).
func (s *stream) element(what string) (bool, error) {
	if !s.dec.More() {
		if err := s.delim(what, ']'); err != nil {
			return false, err
		}
		return false, nil
	}
	if err := s.dec.Decode(&s.raw); err != nil {
		return false, s.fail(what, err)
	}
	return true, nil
}

// value decodes the next value whole into s.raw.
func (s *stream) value(what string) error {
	if err := s.dec.Decode(&s.raw); err != nil {
		return s.fail(what, err)
	}
	return nil
}

// end checks that nothing but whitespace follows the text.
func (s *stream) end() error {
	if _, err := s.dec.Token(); err != io.EOF {
		if err == nil {
			return fmt.Errorf("read %s: data after the end at byte %d", s.name, s.offset())
		}
		return s.fail("after the end", err)
	}
	return nil
}

func tokenText(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(t))
	case string:
		return fmt.Sprintf("string %q", t)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
