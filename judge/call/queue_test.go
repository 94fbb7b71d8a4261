package call

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestQueueOrder: slots go to tickets in the order they entered, however
// the goroutines waiting for them are scheduled.
func TestQueueOrder(t *testing.T) {
	q := NewQueue(1)
	first := q.Enter()
	tickets := make([]*Ticket, 20)
	for i := range tickets {
		tickets[i] = q.Enter()
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	// Started last to first: a limiter granting slots to whichever
	// goroutine asks first would serve them backwards.
	for i := len(tickets) - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := tickets[i].Wait(context.Background()); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			tickets[i].Done()
		}()
		time.Sleep(time.Millisecond)
	}
	if err := first.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	first.Done()
	wg.Wait()
	for k, i := range order {
		if i != k {
			t.Fatalf("order %v: ticket %d served %dth", order, i, k)
		}
	}
	if q.free != 1 || len(q.waiting) != 0 {
		t.Fatalf("after all: %d free, %d waiting; want 1 and 0", q.free, len(q.waiting))
	}
}

// TestQueueCancel: a ticket whose context ends gives up its place, and
// the slots are all there afterwards.
func TestQueueCancel(t *testing.T) {
	q := NewQueue(1)
	held := q.Enter()
	ctx, cancel := context.WithCancel(context.Background())
	gone, next := q.Enter(), q.Enter()
	cancel()
	if err := gone.Wait(ctx); err == nil {
		t.Fatal("Wait on an ended context returned no error")
	}
	held.Done()
	select {
	case <-next.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the slot went to the ticket that gave up its place")
	}
	next.Done()
	if q.free != 1 || len(q.waiting) != 0 {
		t.Fatalf("%d free, %d waiting; want 1 and 0", q.free, len(q.waiting))
	}
}

// TestQueueCancelGranted: cancelling a granted ticket gives its slot to
// the next one.
func TestQueueCancelGranted(t *testing.T) {
	q := NewQueue(1)
	granted, next := q.Enter(), q.Enter()
	granted.Cancel()
	select {
	case <-next.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the slot of a cancelled granted ticket was not passed on")
	}
	next.Done()
	if q.free != 1 || len(q.waiting) != 0 {
		t.Fatalf("%d free, %d waiting; want 1 and 0", q.free, len(q.waiting))
	}
}
