package jsonview

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	c := NewCache(64)
	var d Doc
	a := []byte(`{"x":[1,2,3]}`)
	b := []byte(`{"y":"two"}`)
	steps := []struct {
		name       string
		data       []byte
		wantCached bool
		wantLen    int
	}{
		{"first sighting parses", a, false, 0},
		{"second sighting parses and admits", a, false, 1},
		{"third sighting is served from the cache", a, true, 1},
		{"another text parses", b, false, 1},
		{"another text is admitted", b, false, 2},
		{"and served", b, true, 2},
	}
	for _, s := range steps {
		data := append([]byte(nil), s.data...) // the row buffer is not kept
		v, cached, err := c.Parse(&d, data)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if cached != s.wantCached || c.Len() != s.wantLen {
			t.Errorf("%s: cached %v, Len %d; want %v, %d", s.name, cached, c.Len(), s.wantCached, s.wantLen)
		}
		for i := range data {
			data[i] = ' ' // overwriting the row must not change a cached value
		}
		if cached && string(v.Raw()) != string(s.data) {
			t.Errorf("%s: cached value %s, want %s", s.name, v.Raw(), s.data)
		}
	}
	big := []byte(`{"z":"` + string(make([]byte, 0)) + `0123456789012345678901234567890123456789012345678901234567890123"}`)
	for range 3 {
		if _, cached, _ := c.Parse(&d, big); cached {
			t.Errorf("a text past MaxBytes was cached")
		}
	}
	if _, _, err := c.Parse(&d, []byte(`{"a":`)); err == nil {
		t.Errorf("invalid text parsed without error")
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache(0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d Doc
			for i := range 2000 {
				text := fmt.Sprintf(`{"task":%d,"g":[%d]}`, i%7, 0)
				v, _, err := c.Parse(&d, []byte(text))
				if err != nil {
					t.Error(err)
					return
				}
				if n, _ := v.Get("task").Int(); n != int64(i%7) {
					t.Errorf("goroutine %d: task %d, want %d", g, n, i%7)
					return
				}
			}
		}()
	}
	wg.Wait()
	if c.Len() != 7 {
		t.Errorf("Len = %d, want 7", c.Len())
	}
}

// Long texts are keyed by a sample of their bytes: texts that differ only
// between the samples share a key and are still told apart, each served
// its own index.
func TestCacheSampledKeys(t *testing.T) {
	c := NewCache(0)
	var d Doc
	long := func(v byte) []byte {
		b := []byte(`{"pad":"` + strings.Repeat("x", 3000) + `","v":"`)
		b = append(b, v)
		return append(b, `","tail":"`+strings.Repeat("y", 3000)+`"}`...)
	}
	vs := []byte("abc")
	texts := [][]byte{long(vs[0]), long(vs[1]), long(vs[2])}
	if c.key(texts[0]) != c.key(texts[1]) {
		t.Fatal("the texts do not share a sampled key; the test needs them to")
	}
	for round := range 4 {
		for i, text := range texts {
			v, cached, err := c.Parse(&d, text)
			if err != nil {
				t.Fatal(err)
			}
			if round == 3 && !cached {
				t.Errorf("round %d: text %d not served from the cache", round, i)
			}
			if got, want := string(v.Get("v").Raw()), `"`+string(vs[i])+`"`; got != want {
				t.Fatalf("round %d: v = %s, want %s", round, got, want)
			}
		}
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d, want 3", c.Len())
	}
}

// BenchmarkCacheLookup looks up a cached 5.7 KB text, as every rollout of
// a per-row dataset does with its initial state.
func BenchmarkCacheLookup(b *testing.B) {
	text := []byte(`{"items":[` + strings.Repeat(`{"id":"opp-0001","stage":"open","amount":12345.5},`, 110) + `{}]}`)
	c := NewCache(0)
	var d Doc
	for range 2 {
		if _, _, err := c.Parse(&d, text); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Lookup(text); !ok {
			b.Fatal("not cached")
		}
	}
}

// TestCacheParseStable checks that a stable text found by its address
// gives the index of its own bytes: for the same memory, for a prefix of
// it, and for new memory that the collector may have placed at the address
// of a freed text.
func TestCacheParseStable(t *testing.T) {
	c := NewCache(0)
	var d Doc
	text := func(v int) []byte {
		return []byte(fmt.Sprintf(`{"v":%d,"pad":"%s"}`, v, strings.Repeat("x", 2000)))
	}
	get := func(data []byte) (int64, bool) {
		t.Helper()
		v, cached, err := c.ParseStable(&d, data)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := v.Get("v").Int()
		if !ok {
			t.Fatalf("no v in %.20s", data)
		}
		return n, cached
	}
	a := text(1)
	for i := range 4 {
		n, cached := get(a)
		if n != 1 || cached != (i >= 2) {
			t.Fatalf("sighting %d: v %d, cached %v", i, n, cached)
		}
	}
	if _, _, err := c.ParseStable(&d, a[:len(a)-1]); err == nil {
		t.Fatal("a prefix of the text parsed as the text")
	}
	for round := range 50 {
		a = nil
		runtime.GC()
		b := text(round + 2)
		for range 3 {
			if n, _ := get(b); n != int64(round+2) {
				t.Fatalf("round %d: v = %d, want %d", round, n, round+2)
			}
		}
	}
}

// TestParseSkippingCache checks that a skipped value that a cache holds is
// found by its beginning, without scanning, and that texts that cannot
// stand for a value at the start of a longer text are not.
func TestParseSkippingCache(t *testing.T) {
	long := `{"k":"` + strings.Repeat("v", 300) + `"}`
	c := NewCache(0)
	var d, d2 Doc
	for _, text := range []string{long, long, long + " ", long + " ", `{"short":1}`, `{"short":1}`} {
		c.Parse(&d, []byte(text))
	}
	for _, tt := range []struct {
		line   string
		cached bool
	}{
		{`{"a":1,"s":` + long + `,"b":2}`, true},
		{`{"s":` + long + `}`, true},
		{`{"s":` + long + ` }`, true},
		{`{"s":{"short":1}}`, false},
		{`{"s":` + long[:len(long)-2] + `w"}}`, false},
	} {
		root, sk, _, err := d2.ParseSkipping([]byte(tt.line), Skips{Cache: c, Scan: "s"})
		skipped, cached := sk.Text, sk.Cached
		if err != nil {
			t.Fatalf("%.40s: %v", tt.line, err)
		}
		if cached.Exists() != tt.cached {
			t.Errorf("%.40s: cached %v, want %v", tt.line, cached.Exists(), tt.cached)
		}
		if cached.Exists() && (string(cached.Raw()) != string(skipped) || !cached.Shared()) {
			t.Errorf("%.40s: cached %.20q, skipped %.20q", tt.line, cached.Raw(), skipped)
		}
		if root.Get("s").Exists() {
			t.Errorf("%.40s: the skipped member is in the index", tt.line)
		}
	}
}

// A shared Doc is read by many goroutines: indexing into it again is a bug.
func TestSharedDocRefusesParse(t *testing.T) {
	d := new(Doc)
	if _, err := d.Parse([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	d.Share()
	defer func() {
		if recover() == nil {
			t.Error("Parse into a shared Doc did not panic")
		}
	}()
	_, _ = d.Parse([]byte(`[]`))
}

// TestCacheMissRun: after missRun texts that do not repeat, lookups miss
// without looking, but for one in reprobe; a text that repeats is still
// admitted by those, and its hits make every lookup look again.
func TestCacheMissRun(t *testing.T) {
	c := NewCache(0)
	for i := range missRun {
		c.Lookup(fmt.Appendf(nil, `{"unique":%d}`, i))
	}
	a := []byte(`{"repeats":true}`)
	n := 0
	for ; n < 4*reprobe; n++ {
		if _, ok := c.Lookup(a); ok {
			break
		}
	}
	if n < reprobe || n == 4*reprobe {
		t.Fatalf("a repeated text was found on lookup %d after the miss run, want between %d and %d", n+1, reprobe+1, 4*reprobe)
	}
	b := []byte(`{"repeats":"too"}`)
	for i := range 3 {
		if _, ok := c.Lookup(b); ok != (i == 2) {
			t.Errorf("after a hit, lookup %d of a new text: found %v, want %v", i+1, ok, i == 2)
		}
	}
}
