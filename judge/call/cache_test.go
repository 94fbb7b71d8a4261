package call

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

func key(i int) Key {
	var k Key
	k[0], k[1] = byte(i), byte(i>>8)
	return k
}

// verdict is a value shaped like the judge's verdicts.
type verdict struct {
	Score      float64  `json:"score"`
	Issues     []string `json:"issues"`
	Suggestion string   `json:"suggestion"`
}

func newVerdict(i int) verdict {
	return verdict{Score: float64(i%10) / 10, Issues: []string{"issue " + strconv.Itoa(i)}, Suggestion: "s"}
}

// cacheMagic is the judge's magic, which these tests use.
const cacheMagic = "GVJUDGE1"

func openCache(dir string) (*Cache[verdict], error) {
	return Open[verdict](dir, Layout{Name: "judge cache", Magic: cacheMagic, Prefix: "verdicts"})
}

// TestCacheTornTail writes records, cuts the log at every byte offset of
// the last one, and reopens: the earlier records are intact, the torn one
// is gone, and new appends are read back.
func TestCacheTornTail(t *testing.T) {
	dir := t.TempDir()
	c, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	for i := range n - 1 {
		if err := c.Put(key(i), newVerdict(i)); err != nil {
			t.Fatal(err)
		}
	}
	name := c.w.Name()
	before := size(t, name)
	if err := c.Put(key(n-1), newVerdict(n-1)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for cut := before; cut < int64(len(full)); cut++ {
		d := t.TempDir()
		log := filepath.Join(d, filepath.Base(name))
		if err := os.WriteFile(log, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := openCache(d)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		for i := range n - 1 {
			if v, ok := c.Get(key(i)); !ok || !reflect.DeepEqual(v, newVerdict(i)) {
				t.Fatalf("cut at %d: record %d = %+v, %v", cut, i, v, ok)
			}
		}
		if _, ok := c.Get(key(n - 1)); ok {
			t.Fatalf("cut at %d: the torn record was read", cut)
		}
		if got := size(t, log); got != before {
			t.Fatalf("cut at %d: log is %d bytes after opening, want truncated to %d", cut, got, before)
		}
		if err := c.Put(key(100), newVerdict(100)); err != nil {
			t.Fatal(err)
		}
		c.Close()
		c, err = openCache(d)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := c.Get(key(100)); !ok || !reflect.DeepEqual(v, newVerdict(100)) || len(c.m) != n {
			t.Fatalf("cut at %d: appended record = %+v, %v, %d records; want it and %d", cut, v, ok, len(c.m), n)
		}
		c.Close()
	}
}

// TestCacheTornHeader: a log cut inside its header is started again.
func TestCacheTornHeader(t *testing.T) {
	for cut := range len(cacheMagic) {
		d := t.TempDir()
		log := filepath.Join(d, "verdicts-0.log")
		os.WriteFile(log, []byte(cacheMagic[:cut]), 0o644)
		c, err := openCache(d)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if c.w.Name() != log {
			t.Errorf("cut at %d: writes to %s, want %s", cut, c.w.Name(), log)
		}
		c.Put(key(1), newVerdict(1))
		c.Close()
		c, _ = openCache(d)
		if _, ok := c.Get(key(1)); !ok {
			t.Errorf("cut at %d: record lost", cut)
		}
		c.Close()
	}
}

// TestCacheTwoWriters: a second cache on a directory in use appends to its
// own log, and a third sees both.
func TestCacheTwoWriters(t *testing.T) {
	d := t.TempDir()
	a, err := openCache(d)
	if err != nil {
		t.Fatal(err)
	}
	b, err := openCache(d)
	if err != nil {
		t.Fatal(err)
	}
	if a.w.Name() == b.w.Name() {
		t.Fatalf("both caches append to %s", a.w.Name())
	}
	a.Put(key(1), newVerdict(1))
	b.Put(key(2), newVerdict(2))
	c, err := openCache(d) // reads both, locked by a and b
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(key(1)); !ok {
		t.Error("third cache misses the first's record")
	}
	if _, ok := c.Get(key(2)); !ok {
		t.Error("third cache misses the second's record")
	}
	for _, x := range []*Cache[verdict]{a, b, c} {
		if err := x.Close(); err != nil {
			t.Error(err)
		}
	}
	if logs, _ := filepath.Glob(filepath.Join(d, "*.log")); len(logs) != 3 {
		t.Errorf("logs = %v, want 3", logs)
	}
}

func size(t *testing.T, name string) int64 {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestCacheCorruptRecord: a record whose bytes changed fails its checksum
// and ends the log's valid part.
func TestCacheCorruptRecord(t *testing.T) {
	d := t.TempDir()
	c, err := openCache(d)
	if err != nil {
		t.Fatal(err)
	}
	c.Put(key(1), newVerdict(1))
	c.Put(key(2), newVerdict(2))
	name := c.w.Name()
	c.Close()
	b, _ := os.ReadFile(name)
	b[len(b)-3] ^= 0x20 // inside the last record's JSON
	os.WriteFile(name, b, 0o644)
	c, err = openCache(d)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, ok1 := c.Get(key(1))
	_, ok2 := c.Get(key(2))
	if !ok1 || ok2 {
		t.Errorf("after corrupting the last record: first read %v, last read %v; want true, false", ok1, ok2)
	}
}
