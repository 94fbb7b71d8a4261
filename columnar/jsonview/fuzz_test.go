package jsonview

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks Parse against encoding/json: both accept the same texts
// (except that encoding/json lets invalid UTF-8 through, which Parse
// refuses), and an accepted text reads the same through the view.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2.5e3,-0,"x\u00e9\n"],"b":{"c":null,"d":true,"e":false},"a":{}}`,
		`"\ud83d\ude00\ud83d\u0041"`,
		`[[[]],{},""]`,
	} {
		f.Add([]byte(s))
	}
	var d, d2 Doc // reused, as in production
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := d.Parse(data)
		if !utf8.Valid(data) {
			if err == nil {
				t.Fatalf("Parse accepted invalid UTF-8 %q", data)
			}
			return
		}
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("Parse(%q) error = %v, json.Valid = %v", data, err, valid)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(data)) {
				t.Fatalf("Parse(%q) error = %#v, want a *SyntaxError within the text", data, err)
			}
			return
		}
		want, err := decodeStd(data)
		if err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if got := generic(root); !reflect.DeepEqual(want, got) {
			t.Fatalf("Parse(%q) mismatch (-want +got):\n%s", data, cmp.Diff(want, got))
		}
		checkInvariants(t, root)
		root2, err := d2.Parse(data)
		if err != nil {
			t.Fatalf("second Parse: %v", err)
		}
		if !Equal(root, root2) || !Equal(root2, root) {
			t.Fatalf("Equal(%q, itself) = false", data)
		}
	})
}

// checkInvariants walks the view checking what generic does not: offsets,
// lengths, lookups, comparisons of values with themselves.
func checkInvariants(t *testing.T, root Value) {
	stack := []Value{root}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		raw := v.Raw()
		if !json.Valid(raw) {
			t.Fatalf("Raw() = %q is not a JSON value", raw)
		}
		switch v.Kind() {
		case Number:
			if c, ok := CompareNumbers(v, v); !ok || c != 0 {
				t.Fatalf("CompareNumbers(%s, itself) = %d, %v", raw, c, ok)
			}
		case String:
			s, _ := v.Str()
			if !v.StrIs(string(s)) {
				t.Fatalf("StrIs(Str()) = false for %s", raw)
			}
		case Array, Object:
			n, seen := 0, map[string]bool{}
			for c := v.First(); c.Exists(); c = c.Next() {
				if v.Kind() == Object {
					k := c.Key()
					if !c.KeyIs(string(k)) {
						t.Fatalf("KeyIs(Key()) = false for %q", k)
					}
					if !seen[string(k)] {
						seen[string(k)] = true
						if g := v.Get(string(k)); g.Offset() != c.Offset() {
							t.Fatalf("Get(%q) is at %d, want the first occurrence at %d", k, g.Offset(), c.Offset())
						}
					}
				} else if got := v.Index(n); got.Offset() != c.Offset() {
					t.Fatalf("Index(%d) is at %d, want %d", n, got.Offset(), c.Offset())
				}
				n++
				stack = append(stack, c)
			}
			if n != v.Len() {
				t.Fatalf("Len() = %d, iterated %d", v.Len(), n)
			}
		}
	}
}

// FuzzCompareNumbers checks CompareNumbers against exact rational
// arithmetic.
func FuzzCompareNumbers(f *testing.F) {
	for _, p := range [][2]string{
		{"1", "1.0"}, {"-0", "0"}, {"9007199254740993", "9007199254740992"},
		{"1e3", "1000.000"}, {"0.00012", "1.2e-4"}, {"-5.5", "-55e-1"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !isSmallNumber(a) || !isSmallNumber(b) {
			return
		}
		var da, db Doc
		va, erra := da.Parse([]byte(a))
		vb, errb := db.Parse([]byte(b))
		if erra != nil || errb != nil || va.Kind() != Number || vb.Kind() != Number {
			return
		}
		ra, oka := new(big.Rat).SetString(string(va.Raw()))
		rb, okb := new(big.Rat).SetString(string(vb.Raw()))
		if !oka || !okb {
			t.Fatalf("big.Rat cannot read %q or %q", va.Raw(), vb.Raw())
		}
		want := ra.Cmp(rb)
		if got, ok := CompareNumbers(va, vb); !ok || got != want {
			t.Fatalf("CompareNumbers(%s, %s) = %d, %v, want %d", a, b, got, ok, want)
		}
		if f, ok := va.Float(); !ok || !sameFloat(f, strconvFloat(string(va.Raw()))) {
			t.Fatalf("Float(%s) = %v, %v, want %v", a, f, ok, strconvFloat(string(va.Raw())))
		}
		if i, ok := va.Int(); ok != (ra.IsInt() && ra.Num().IsInt64()) || ok && i != ra.Num().Int64() {
			t.Fatalf("Int(%s) = %d, %v", a, i, ok)
		}
	})
}

// isSmallNumber keeps big.Rat's work bounded: short texts with small
// exponents.
func isSmallNumber(s string) bool {
	if len(s) == 0 || len(s) > 40 {
		return false
	}
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		e := strings.TrimLeft(s[k+1:], "+-")
		e = strings.TrimLeft(e, "0")
		if len(e) > 3 {
			return false
		}
	}
	return true
}

// FuzzEqual checks Equal against a reference: both values decoded into
// canonical Go values (numbers as exact rationals, objects as maps holding
// each key's first occurrence) and compared with reflect.DeepEqual.
func FuzzEqual(f *testing.F) {
	for _, p := range [][2]string{
		{`{"a":1,"b":[1,2]}`, `{"b":[1.0,2e0],"a":1}`},
		{`{"a":1,"a":2}`, `{"a":1}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`["x",{"\u0061":null}]`, `["x",{"a":null}]`},
		{`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5}`, `{"k5":5,"k4":4,"k3":3,"k2":2,"k1":1,"k0":0}`},
		{`-0`, `0.0`},
		{`"é"`, `"\u00e9"`},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var da, db Doc
		va, erra := da.Parse([]byte(a))
		vb, errb := db.Parse([]byte(b))
		if erra != nil || errb != nil {
			return
		}
		ca, oka := canonical(va)
		cb, okb := canonical(vb)
		if !oka || !okb {
			return
		}
		want := reflect.DeepEqual(ca, cb)
		if got := Equal(va, vb); got != want {
			t.Fatalf("Equal(%s, %s) = %v, want %v", a, b, got, want)
		}
		if got := Equal(vb, va); got != want {
			t.Fatalf("Equal(%s, %s) = %v, want %v", b, a, got, want)
		}
	})
}

// canonical decodes v for FuzzEqual; ok is false for numbers with
// exponents too large for big.Rat to handle quickly.
func canonical(v Value) (any, bool) {
	switch v.Kind() {
	case Number:
		if !isSmallNumber(string(v.Raw())) {
			return nil, false
		}
		r, ok := new(big.Rat).SetString(string(v.Raw()))
		if !ok {
			return nil, false
		}
		return "n:" + r.RatString(), true
	case String:
		s, _ := v.Str()
		return "s:" + string(s), true
	case Array:
		out := []any{}
		for c := v.First(); c.Exists(); c = c.Next() {
			x, ok := canonical(c)
			if !ok {
				return nil, false
			}
			out = append(out, x)
		}
		return out, true
	case Object:
		out := map[string]any{}
		for c := v.First(); c.Exists(); c = c.Next() {
			x, ok := canonical(c)
			if !ok {
				return nil, false
			}
			if _, dup := out[string(c.Key())]; !dup {
				out[string(c.Key())] = x
			}
		}
		return out, true
	}
	return v.Kind(), true // null, true, false
}

// strconvFloat is the reference for Float.
func strconvFloat(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// sameFloat reports whether a and b are the same float64, signed zeros told
// apart.
func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// FuzzParseSkipping checks ParseSkipping against Parse: on a text Parse
// accepts, ParseSkipping accepts it too; its scanned text is the first
// root member named "s" (an object or array) as Parse reads it, its
// matched text, if any, the first member named "m", and the rest of the
// root is Parse's root without them. On a text Parse refuses,
// ParseSkipping or the parse of its scanned text fails. It runs without a
// cache, then with one that holds the texts seen, so that values are also
// found by their beginning.
func FuzzParseSkipping(f *testing.F) {
	long := `{"k":"` + strings.Repeat("v", 300) + `"}`
	for _, s := range []string{
		`{"a":1,"s":{"x":[1,"]}\"",{}]},"b":[2]}`,
		`{"s":[],"s":{}}`,
		`{"s" : [ "\\" , "\"" ] }`,
		`{"a":{"s":{}},"s":"text","t":{"s":[1]}}`,
		`{"s":{"a":}]}`,
		`{"s":{"a":1}`,
		`{"s":{"a":1}}x`,
		`{"s":[[[[]]]] , "z":null}`,
		`{"a":1,"s":` + long + `,"m":` + long + `,"b":2}`,
		`{"m":` + long + `,"s":` + long + `}`,
		`{"s":` + long[:len(long)-1] + `]}`,
		`{"m":` + long + `x,"s":` + long + `}`,
	} {
		f.Add([]byte(s))
	}
	var d, d2, d3 Doc
	cache := NewCache(1 << 20)
	f.Fuzz(func(t *testing.T, data []byte) {
		full, fullErr := d.Parse(data)
		for _, withCache := range []bool{false, true} {
			sk := Skips{Scan: "s", Match: "m"}
			if withCache {
				sk.Cache = cache
			}
			root, scanned, matched, err := d2.ParseSkipping(data, sk)
			if err == nil && scanned.Text != nil && !scanned.Cached.Exists() {
				if _, serr := d3.Parse(scanned.Text); serr != nil {
					err = serr
				}
			}
			if (fullErr == nil) != (err == nil) {
				t.Fatalf("%q (cache %v): Parse error %v, ParseSkipping (and its scanned text) error %v", data, withCache, fullErr, err)
			}
			if fullErr != nil {
				continue
			}
			for _, sk := range []Skipped{scanned, matched} {
				if sk.Cached.Exists() && string(sk.Cached.Raw()) != string(sk.Text) {
					t.Fatalf("%q: cached %q for %q", data, sk.Cached.Raw(), sk.Text)
				}
			}
			if matched.Text != nil && !matched.Cached.Exists() {
				t.Fatalf("%q: matched %q without a cached index", data, matched.Text)
			}
			if full.Kind() != Object {
				if scanned.Text != nil || matched.Text != nil || string(root.Raw()) != string(full.Raw()) {
					t.Fatalf("%q: root %q, want %q", data, root.Raw(), full.Raw())
				}
				continue
			}
			var want []Value
			seenS, seenM := false, false
			for m := full.First(); m.Exists(); m = m.Next() {
				plain := m.d.nodes[m.i].flags&flagKeyEsc == 0
				switch {
				case plain && !seenS && string(m.Key()) == "s":
					seenS = true
					if m.Kind() == Object || m.Kind() == Array {
						if string(scanned.Text) != string(m.Raw()) {
							t.Fatalf("%q: scanned %q, want %q", data, scanned.Text, m.Raw())
						}
						continue
					}
				case plain && !seenM && string(m.Key()) == "m":
					seenM = true
					if matched.Text != nil {
						if string(matched.Text) != string(m.Raw()) {
							t.Fatalf("%q: matched %q, want %q", data, matched.Text, m.Raw())
						}
						continue
					}
				}
				want = append(want, m)
			}
			var got []Value
			for m := root.First(); m.Exists(); m = m.Next() {
				got = append(got, m)
			}
			if root.Len() != len(want) || len(got) != len(want) {
				t.Fatalf("%q: %d members (Len %d), want %d", data, len(got), root.Len(), len(want))
			}
			for i := range got {
				gk, wk := got[i].Key(), want[i].Key()
				if string(gk) != string(wk) || string(got[i].Raw()) != string(want[i].Raw()) {
					t.Fatalf("%q: member %d is %s:%s, want %s:%s", data, i, gk, got[i].Raw(), wk, want[i].Raw())
				}
			}
			// Let the cache hold the texts seen, for the next inputs.
			for _, sk := range []Skipped{scanned, matched} {
				if sk.Text != nil {
					cache.Lookup(sk.Text)
					cache.Lookup(sk.Text)
				}
			}
			for m := full.First(); m.Exists(); m = m.Next() {
				if k := m.Kind(); k == Object || k == Array {
					cache.Lookup(m.Raw())
					cache.Lookup(m.Raw())
				}
			}
		}
	})
}
