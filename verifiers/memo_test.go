package verifiers

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

func TestWorldMemo(t *testing.T) {
	parse := func(text string, share bool) jsonview.Value {
		d := new(jsonview.Doc)
		v, err := d.Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if share {
			d.Share()
		}
		return v
	}
	var calls atomic.Int64
	size := func(w World) int {
		calls.Add(1)
		return w.Initial.Len()
	}
	var m WorldMemo[int]
	a, b := parse(`{"x":1,"y":2}`, true), parse(`{"x":1}`, true)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				if m.Get(World{Initial: a}, size) != 2 || m.Get(World{Initial: b}, size) != 1 {
					t.Error("wrong value")
					return
				}
			}
		})
	}
	wg.Wait()
	if n := calls.Load(); n < 2 || n > 8 {
		t.Errorf("%d calls for 2 shared worlds read 800 times, want one or a few each", n)
	}
	calls.Store(0)
	u := parse(`{"x":1,"y":2,"z":3}`, false)
	for range 3 {
		if m.Get(World{Initial: u}, size) != 3 {
			t.Fatal("wrong value for an unshared state")
		}
	}
	if calls.Load() != 3 {
		t.Errorf("an unshared state was memoized: %d calls for 3 reads", calls.Load())
	}
	calls.Store(0)
	for range 3 { // a shared state with an unshared task row: not one world
		if m.Get(World{Initial: a, Task: parse(`{"t":1}`, false)}, size) != 2 {
			t.Fatal("wrong value with an unshared task row")
		}
	}
	if calls.Load() != 3 {
		t.Errorf("a world with an unshared task row was memoized: %d calls for 3 reads", calls.Load())
	}
}
