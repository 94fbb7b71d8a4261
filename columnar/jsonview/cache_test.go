package jsonview

import (
	"fmt"
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
