package judge

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func key(i int) Key {
	var k Key
	k[0], k[1] = byte(i), byte(i>>8)
	return k
}

func verdict(i int) Verdict {
	return Verdict{Score: float64(i%10) / 10, Issues: []string{"issue " + itoa(i)}, Suggestion: "s"}
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
		if err := c.put(key(i), verdict(i)); err != nil {
			t.Fatal(err)
		}
	}
	name := c.w.Name()
	before := size(t, name)
	if err := c.put(key(n-1), verdict(n-1)); err != nil {
		t.Fatal(err)
	}
	if err := c.close(); err != nil {
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
			if v, ok := c.get(key(i)); !ok || !reflect.DeepEqual(v, verdict(i)) {
				t.Fatalf("cut at %d: record %d = %+v, %v", cut, i, v, ok)
			}
		}
		if _, ok := c.get(key(n - 1)); ok {
			t.Fatalf("cut at %d: the torn record was read", cut)
		}
		if got := size(t, log); got != before {
			t.Fatalf("cut at %d: log is %d bytes after opening, want truncated to %d", cut, got, before)
		}
		if err := c.put(key(100), verdict(100)); err != nil {
			t.Fatal(err)
		}
		c.close()
		c, err = openCache(d)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := c.get(key(100)); !ok || !reflect.DeepEqual(v, verdict(100)) || len(c.m) != n {
			t.Fatalf("cut at %d: appended record = %+v, %v, %d records; want it and %d", cut, v, ok, len(c.m), n)
		}
		c.close()
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
		c.put(key(1), verdict(1))
		c.close()
		c, _ = openCache(d)
		if _, ok := c.get(key(1)); !ok {
			t.Errorf("cut at %d: record lost", cut)
		}
		c.close()
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
	a.put(key(1), verdict(1))
	b.put(key(2), verdict(2))
	c, err := openCache(d) // reads both, locked by a and b
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.get(key(1)); !ok {
		t.Error("third cache misses the first's record")
	}
	if _, ok := c.get(key(2)); !ok {
		t.Error("third cache misses the second's record")
	}
	for _, x := range []*cache{a, b, c} {
		if err := x.close(); err != nil {
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
	c.put(key(1), verdict(1))
	c.put(key(2), verdict(2))
	name := c.w.Name()
	c.close()
	b, _ := os.ReadFile(name)
	b[len(b)-3] ^= 0x20 // inside the last record's JSON
	os.WriteFile(name, b, 0o644)
	c, err = openCache(d)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	_, ok1 := c.get(key(1))
	_, ok2 := c.get(key(2))
	if !ok1 || ok2 {
		t.Errorf("after corrupting the last record: first read %v, last read %v; want true, false", ok1, ok2)
	}
}
