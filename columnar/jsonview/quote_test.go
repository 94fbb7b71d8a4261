package jsonview

import (
	"encoding/json"
	"testing"
)

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
