package jsonview

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// refAppendJSONString is AppendJSONString one byte at a time, as it was
// before it read eight plain bytes at a time: the word test must change
// no byte.
func refAppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// checkAgainstRef compares AppendJSONString with the byte-at-a-time
// reference, and its escape report with the text.
func checkAgainstRef(t *testing.T, s string) {
	t.Helper()
	got, esc := appendJSONString(nil, s)
	if want := refAppendJSONString(nil, s); !bytes.Equal(got, want) {
		t.Fatalf("AppendJSONString(%q) = %s, byte at a time %s", s, got, want)
	}
	if want := bytes.IndexByte(got[1:len(got)-1], '\\') >= 0; esc != want {
		t.Fatalf("AppendJSONString(%q) = %s: reported escapes %v", s, got, esc)
	}
}

// TestAppendJSONStringWords puts every byte value at every position of
// strings of 1 to 24 bytes, so that each lands in and after the words
// read eight bytes at a time.
func TestAppendJSONStringWords(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for p := range n {
			for c := range 256 {
				b := bytes.Repeat([]byte{'a'}, n)
				b[p] = byte(c)
				checkAgainstRef(t, string(b))
			}
		}
	}
	checkAgainstRef(t, "12345678\u2028abcdefgh\xffxyz")
}

func TestAppendJSONString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", `""`},
		{"plain", "plain", `"plain"`},
		{"quote and backslash", `q"b\s`, `"q\"b\\s"`},
		{"short escapes", "\n\r\t\b\f", `"\n\r\t\b\f"`},
		{"control bytes", "\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"no HTML escaping", "<&>", `"<&>"`},
		{"multibyte", "ünï ✓ 😀", `"ünï ✓ 😀"`},
		{"line separators", "a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"invalid UTF-8", "bad\xffutf8\xc3", "\"bad\ufffdutf8\ufffd\""},
		{"surrogate half", "\xed\xa0\x80", "\"\ufffd\ufffd\ufffd\""}, // invalid UTF-8
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendJSONString(nil, tt.in)); got != tt.want {
				t.Errorf("AppendJSONString(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if got := string(AppendJSONString(nil, []byte(tt.in))); got != tt.want {
				t.Errorf("AppendJSONString([]byte(%q)) = %s, want %s", tt.in, got, tt.want)
			}
			checkReadsBack(t, tt.in)
		})
	}
}

// FuzzAppendJSONString checks that strings and byte slices are written
// alike, after what is already in the buffer, and read back as encoding/json
// reads what it writes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\x7f", "ü\u2028", "\xff\xc3", "\xed\xa0\x80", "😀\xf0\x9f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := string(AppendJSONString([]byte("x"), s))
		b := string(AppendJSONString([]byte("x"), []byte(s)))
		if a != b {
			t.Fatalf("AppendJSONString(%q) = %s, of its bytes %s", s, a, b)
		}
		if a[0] != 'x' {
			t.Fatalf("AppendJSONString(%q) overwrote the buffer: %s", s, a)
		}
		checkReadsBack(t, s)
		checkAgainstRef(t, s)
	})
}

// checkReadsBack checks that AppendJSONString(s) is valid JSON that reads
// back as what encoding/json writes for s reads back as.
func checkReadsBack(t *testing.T, s string) {
	t.Helper()
	got := AppendJSONString(nil, s)
	std, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var a, b string
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("AppendJSONString(%q) = %s: invalid JSON: %v", s, got, err)
	}
	if err := json.Unmarshal(std, &b); err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("AppendJSONString(%q) reads back as %q, encoding/json's as %q", s, a, b)
	}
}
