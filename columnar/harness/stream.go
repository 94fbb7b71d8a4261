package harness

import (
	"bufio"
	"bytes"
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

// stream walks one JSON text: the structure around the records (the
// top-level object's keys, the brackets and commas of arrays) byte by
// byte, and each value it is asked for whole, as a slice of its buffer
// found by following strings and brackets. The value is not validated
// here: jsonview validates it where it is mapped, so that a malformed
// record is a bad row, and the text is read once.
//
// encoding/json's Decoder did this job first; its Token and Decode
// (into a json.RawMessage) validate and copy every byte, and ran at less
// than a third of this speed.
type stream struct {
	name string
	src  io.Reader
	buf  []byte
	r, w int   // buf[r:w] is unread
	off  int64 // file offset of buf[0]
	eof  bool
	err  error // a read error of src
	raw  []byte
	// first is set after an opening bracket, until the first element.
	first bool
}

func newStream(name string, in io.Reader) *stream {
	s := &stream{name: name, src: in, buf: make([]byte, 256<<10)}
	s.fill()
	if bytes.HasPrefix(s.buf[s.r:s.w], bom) {
		s.r += len(bom)
	}
	return s
}

// fill reads more input after buf[r:w], moving the unread bytes to the
// front and growing the buffer when it is full. It reports false at the
// end of the input.
func (s *stream) fill() bool {
	if s.eof {
		return false
	}
	if s.r > 0 {
		n := copy(s.buf, s.buf[s.r:s.w])
		s.off += int64(s.r)
		s.r, s.w = 0, n
	}
	if s.w == len(s.buf) {
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
	}
	for {
		n, err := s.src.Read(s.buf[s.w:])
		s.w += n
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.err = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// offset is the byte offset in the file of the next unread byte.
func (s *stream) offset() int64 { return s.off + int64(s.r) }

// truncated is the error of an input that ends inside the text.
func (s *stream) truncated(what string) error {
	if s.err != nil {
		return fmt.Errorf("read %s: %s at byte %d: %w", s.name, what, s.off+int64(s.w), s.err)
	}
	return fmt.Errorf("read %s: %s: truncated at byte %d: %w", s.name, what, s.off+int64(s.w), io.ErrUnexpectedEOF)
}

func (s *stream) unexpected(what, want string) error {
	return fmt.Errorf("read %s: %s at byte %d: want %s, found %q", s.name, what, s.offset(), want, s.buf[s.r])
}

// peek skips whitespace and returns the next byte, unread; ok is false at
// the end of the input.
func (s *stream) peek() (c byte, ok bool) {
	for {
		for s.r < s.w {
			switch c := s.buf[s.r]; c {
			case ' ', '\t', '\n', '\r':
				s.r++
			default:
				return c, true
			}
		}
		if !s.fill() {
			return 0, false
		}
	}
}

// delim reads the next byte, which must be want.
func (s *stream) delim(what string, want byte) error {
	c, ok := s.peek()
	if !ok {
		return s.truncated(what)
	}
	if c != want {
		return s.unexpected(what, fmt.Sprintf("%q", want))
	}
	s.r++
	s.first = want == '{' || want == '['
	return nil
}

// more reads what separates the elements of an array or the members of
// an object: a comma before the next one (true), or the closing bracket
// close (false).
func (s *stream) more(what string, close byte) (bool, error) {
	c, ok := s.peek()
	if !ok {
		return false, s.truncated(what)
	}
	if c == close {
		s.r++
		s.first = false
		return false, nil
	}
	if s.first {
		s.first = false
		return true, nil
	}
	if c != ',' {
		return false, s.unexpected(what, fmt.Sprintf("',' or %q", close))
	}
	s.r++
	return true, nil
}

// key reads the next key of an object, or reports end when the object
// closes.
func (s *stream) key(what string) (key string, end bool, err error) {
	more, err := s.more(what, '}')
	if err != nil || !more {
		return "", !more, err
	}
	if c, ok := s.peek(); ok && c != '"' {
		return "", false, s.unexpected(what, "a key")
	}
	if err := s.value(what); err != nil {
		return "", false, err
	}
	key = string(unescapeID(s.raw[1 : len(s.raw)-1]))
	if err := s.delim(what, ':'); err != nil {
		return "", false, err
	}
	return key, false, nil
}

// arrayOrNull reads the start of an array; a null reads as an empty one
// (ok false).
func (s *stream) arrayOrNull(what string) (ok bool, err error) {
	c, ok := s.peek()
	if !ok {
		return false, s.truncated(what)
	}
	if c == 'n' {
		if err := s.value(what); err != nil {
			return false, err
		}
		if string(s.raw) != "null" {
			return false, fmt.Errorf("read %s: %s at byte %d: want an array, found %q", s.name, what, s.offset()-int64(len(s.raw)), s.raw)
		}
		return false, nil
	}
	if err := s.delim(what, '['); err != nil {
		return false, err
	}
	return true, nil
}

// element reads the next element of the array being read into s.raw, and
// reports false at the array's end (after its closing bracket).
func (s *stream) element(what string) (bool, error) {
	more, err := s.more(what, ']')
	if err != nil || !more {
		return false, err
	}
	return true, s.value(what)
}

// value reads the next value whole into s.raw, a slice of the buffer
// valid until the next read. It follows strings and brackets only.
func (s *stream) value(what string) error {
	c, ok := s.peek()
	if !ok {
		return s.truncated(what)
	}
	i := s.r // buf[s.r:i] is scanned
	depth, inStr := 0, false
	switch c {
	case ']', '}', ',', ':':
		return s.unexpected(what, "a value")
	}
	for {
		for ; i < s.w; i++ {
			c := s.buf[i]
			if inStr {
				switch c {
				case '\\':
					i++
				case '"':
					inStr = false
					if depth == 0 {
						return s.take(i + 1)
					}
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth <= 0 {
					if depth < 0 { // a scalar ends at its container's bracket
						return s.take(i)
					}
					return s.take(i + 1)
				}
			case ',', ' ', '\t', '\n', '\r':
				if depth == 0 {
					return s.take(i)
				}
			}
		}
		// i may be one past w after an escape at the end.
		n := i - s.r
		if !s.fill() {
			if depth == 0 && !inStr && n > 0 && i == s.w {
				return s.take(s.w) // a scalar that ends the input
			}
			return s.truncated(what)
		}
		i = s.r + n
	}
}

// take makes buf[r:end] the value read.
func (s *stream) take(end int) error {
	s.raw = s.buf[s.r:end:end]
	s.r = end
	s.first = false
	return nil
}

// end checks that nothing but whitespace follows the text.
func (s *stream) end() error {
	if _, ok := s.peek(); ok {
		return fmt.Errorf("read %s: data after the end at byte %d", s.name, s.offset())
	}
	if s.err != nil {
		return s.truncated("end")
	}
	return nil
}
