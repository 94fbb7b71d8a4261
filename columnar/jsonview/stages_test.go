package jsonview

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// setVector makes Parse use the vector stage 1 (where the CPU has one)
// when on is set, and the portable one otherwise, until the test ends.
func setVector(t testing.TB, on bool) {
	old := useVector
	useVector = on
	t.Cleanup(func() { useVector = old })
}

// stageDocs holds the Docs a test parses into, reused across texts as in
// production, so that the buffers one text leaves are met by the next.
type stageDocs struct {
	scalar, vector, portable Doc
	marksV, marksP           []uint64
}

// check parses data with the scalar parser, and with the two stages on
// the vector and the portable stage 1, and fails unless all three give
// the same error (offset and message) or the same index, node for node
// and whitespace run for whitespace run. It also checks that every
// vector stage 1 the CPU has writes the same marks as the portable one
// and gives the same answer, and returns the scalar parser's error.
func (s *stageDocs) check(t testing.TB, data []byte) error {
	t.Helper()
	m := marksLen(len(data))
	s.marksV, s.marksP = slices.Grow(s.marksV[:0], m)[:m], slices.Grow(s.marksP[:0], m)[:m]
	okP := stage1Portable(data, s.marksP)
	for _, v := range vectorStage1s {
		clear(s.marksV)
		okV := v.run(data, s.marksV)
		if okV != okP || !slices.Equal(s.marksV, s.marksP) {
			t.Fatalf("%q: stage 1 %s: %v %x, portable: %v %x", data, v.name, okV, s.marksV, okP, s.marksP)
		}
	}
	_, want := s.scalar.parseScalar(data, false)
	for _, vector := range []bool{true, false} {
		d := &s.portable
		if vector {
			d = &s.vector
		}
		useVector = vector
		_, err := d.Parse(data)
		useVector = true
		if fmt.Sprint(err) != fmt.Sprint(want) {
			t.Fatalf("%q (vector %v): Parse error %v, scalar parser %v", data, vector, err, want)
		}
		if err == nil && !sameIndex(d, &s.scalar) {
			t.Fatalf("%q (vector %v): index\n%+v %v\nscalar parser\n%+v %v", data, vector, d.nodes, d.spaces, s.scalar.nodes, s.scalar.spaces)
		}
	}
	return want
}

// sameIndex reports whether a and b index the same text alike.
func sameIndex(a, b *Doc) bool {
	return string(a.data) == string(b.data) && slices.Equal(a.nodes, b.nodes) &&
		slices.Equal(a.spaces, b.spaces) && a.partial == b.partial
}

// TestStagesMatchScalar runs the texts of the other tests, valid and
// invalid, through both stage 1s and the scalar parser.
func TestStagesMatchScalar(t *testing.T) {
	setVector(t, true)
	texts := []string{
		`null`, `true`, `false`, `0`, `-12.5e+3`, `"hello"`, `""`,
		`"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"é中😀"`,
		`{}`, `[]`, `{"a":[1,{"b":[]},{}],"c":{"d":null}}`,
		" \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \n",
		`{"\u0061":1,"b\n":2}`, `[null,true,false,0,-0,1e5,"x"]`,
		``, `   `, `x`, `{} x`, `1 2`, `01`, `{"a":1`, `[1,2`, `[1,]`, `{"a":1,}`,
		`{"a" 1}`, `{a:1}`, `[1 2]`, `[1}`, `{"a":1]`, "\"a\x01b\"", "\"a\nb\"",
		`"a\x"`, `"\u12g4"`, `"\u12`, "\"ab\xffc\"", "\"\xed\xa0\x80\"", "\"\xe4\xb8\"",
		`"abc`, `"abc\`, `[ `, `{"a"`, `{"a\n" `, `{"\x":1}`, `-`, `-a`, `1.`, `1.e5`,
		`1e+`, `[1ex]`, `+1`, `.5`, `[tru]`, `{"a":nulL}`, `fx`, `nul`, `True`, "\u00a01",
		`[1\"]`, `\"x"`, `["a"\"]`, `{"a\\":"\\\"\\"}`, "[\"\x7f\"]", "\xff", "[1,\xff]",
		"[\"a\"]\x00", "{\"a\":\"\x1f\"}", `"\`, `"\u"`, `"\u00"`, `"\ud800"`,
		`[0.5,-0.0,10,-10.25e3,1E5,1e-2,0]`, `[0e]`, `[0.]`, `[-01]`, `[1.5x]`, `[-]`, `[1.5`, `[12`, `-12`, `0.25`,
		strings.Repeat("[", MaxDepth+1), strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
		string(crmState(30)),
	}
	var s stageDocs
	for _, text := range texts {
		s.check(t, []byte(text))
	}
	for _, st := range benchStates() {
		s.check(t, st.data)
	}
}

// blockTexts are texts of a few blocks whose strings, escapes and values
// cross the 64-byte edges at many places.
func blockTexts() []string {
	return []string{
		`{"id":"OPP-0001","name":"Acme renewal \"q1\"","amount":1000.5,"tags":["a\\","b\u00e9"],"x":null,"ok":true,"n":[0,-1,2e3]}`,
		`[` + strings.Repeat(`"abcdefg",`, 20) + `"z"]`,
		`{"k":"` + strings.Repeat(`\\\"`, 30) + `","é":"€😀","t":false}`,
		"{\n  \"a\": [\n    1,\n    \"b\"\n  ],\n  \"c\": {\"d\": \"" + strings.Repeat("x", 70) + "\"}\n}\n",
	}
}

// TestStagesEveryByte puts every byte value at every position of texts of
// a few blocks, so that each class of byte is met at each place of a
// block, inside and outside strings.
func TestStagesEveryByte(t *testing.T) {
	setVector(t, true)
	var s stageDocs
	for _, text := range blockTexts() {
		data := []byte(text)
		for p := range data {
			orig := data[p]
			for b := range 256 {
				data[p] = byte(b)
				s.check(t, data)
			}
			data[p] = orig
		}
	}
}

// TestStagesBackslashRuns puts runs of backslashes of every length up to
// two blocks, followed by a quote or a letter, so that they end on every
// side of a block's edge, with an odd or even length.
func TestStagesBackslashRuns(t *testing.T) {
	setVector(t, true)
	var s stageDocs
	for lead := 50; lead < 70; lead++ {
		for run := 0; run <= 130; run++ {
			for _, next := range []string{`"`, `n`, `u0041`, `"]`} {
				text := `["` + strings.Repeat("a", lead) + strings.Repeat(`\`, run) + next + `","b"]`
				s.check(t, []byte(text))
			}
		}
	}
}

// TestStagesStringsAcrossEdges moves strings of many lengths across the
// edges of blocks, and ends texts inside them.
func TestStagesStringsAcrossEdges(t *testing.T) {
	setVector(t, true)
	var s stageDocs
	for lead := 0; lead < 70; lead++ {
		for length := 0; length < 140; length += 3 {
			text := `[` + strings.Repeat(" ", lead) + `"` + strings.Repeat("s", length) + `",1]`
			s.check(t, []byte(text))
			s.check(t, []byte(text[:len(text)-4]))
			s.check(t, []byte(strings.Replace(text, `"`, "\"\x01", 1)))
		}
	}
}

// TestStagesTruncatedUTF8 cuts multi-byte characters short at the end of
// a block and at the end of the text, and places whole ones across the
// edge.
func TestStagesTruncatedUTF8(t *testing.T) {
	setVector(t, true)
	var s stageDocs
	for _, r := range []string{"é", "€", "😀", "\uffff", "\U0010ffff"} {
		for cut := 0; cut <= len(r); cut++ {
			for lead := 55; lead < 68; lead++ {
				text := `["` + strings.Repeat("a", lead) + r[:cut] + `"]`
				valid := s.check(t, []byte(text)) == nil
				if valid != (cut == 0 || cut == len(r)) {
					t.Fatalf("%q: valid %v", text, valid)
				}
				s.check(t, []byte(text[:len(text)-2]))
				s.check(t, []byte(`"`+strings.Repeat("b", lead)+r[:cut]))
			}
		}
	}
	// Bytes that are never UTF-8, and overlong and surrogate forms, at
	// the edge.
	for _, bad := range []string{"\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf8", "\x80", "\xc2\xc2"} {
		for lead := 58; lead < 66; lead++ {
			text := `["` + strings.Repeat("a", lead) + bad + `"]`
			if s.check(t, []byte(text)) == nil {
				t.Fatalf("%q accepted", text)
			}
		}
	}
}

// TestStagesLimitIndex checks the bound of LimitIndex on both paths: the
// same texts fail at the same node.
func TestStagesLimitIndex(t *testing.T) {
	setVector(t, true)
	var s stageDocs
	for _, d := range []*Doc{&s.scalar, &s.vector, &s.portable} {
		d.LimitIndex(2, 4<<10)
	}
	for n := 100; n < 2000; n += 37 {
		text := "[" + strings.Repeat("0,", n) + "0]"
		// The marks count against the bound: give the scalar parser's
		// Doc the same.
		s.scalar.marks = make([]uint64, marksLen(len(text)))
		s.vector.marks, s.portable.marks = nil, nil
		s.check(t, []byte(text))
	}
	for _, text := range blockTexts() {
		for cut := range len(text) {
			checkLimited(t, []byte(text[:cut]+" "+text[cut:]))
		}
	}
}

// checkLimited is stageDocs.check on new Docs under a tight LimitIndex,
// so that the bound is met at many places: where it fails a text, the
// scalar parser and both stage 1s must fail it at the same node.
func checkLimited(t testing.TB, data []byte) {
	t.Helper()
	var s stageDocs
	for _, d := range []*Doc{&s.scalar, &s.vector, &s.portable} {
		d.LimitIndex(3, 64)
	}
	// The marks count against the bound: give the scalar parser's Doc
	// those Parse makes.
	s.scalar.marks = make([]uint64, marksLen(len(data)))
	s.check(t, data)
}

// TestPortableEnv checks that the environment variable turns the vector
// stage 1 off: it runs itself again in a new process with the variable
// set.
func TestPortableEnv(t *testing.T) {
	if os.Getenv(portableEnv) != "" {
		if useVector {
			t.Fatalf("useVector is on with %s set", portableEnv)
		}
		return
	}
	if !useVector {
		t.Fatalf("useVector is off without %s", portableEnv)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPortableEnv$", "-test.count=1")
	cmd.Env = append(os.Environ(), portableEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("with %s=1: %v\n%s", portableEnv, err, out)
	}
}

// FuzzStages checks the two stages against the scalar parser (same errors,
// same index) and their validity against encoding/json's, and the vector
// stage 1 against the portable one.
func FuzzStages(f *testing.F) {
	for _, text := range blockTexts() {
		f.Add([]byte(text))
	}
	f.Add([]byte(`["` + strings.Repeat(`\`, 63) + `"]`))
	f.Add([]byte("[\"" + strings.Repeat("a", 61) + "\xe2\x82\"]"))
	var s stageDocs
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLimited(t, data)
		err := s.check(t, data)
		if valid := json.Valid(data) && utf8.Valid(data); valid != (err == nil) {
			t.Fatalf("%q: error %v, json.Valid and utf8.Valid %v", data, err, valid)
		}
		var se *SyntaxError
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("%q: error %#v", data, err)
		}
	})
}
