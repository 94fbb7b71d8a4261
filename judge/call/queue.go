package call

import (
	"context"
	"sync"
)

// Queue bounds the requests in flight to one server and grants its slots
// in the order they were asked for (Enter), not in the order the
// goroutines that wait for them happen to run: a caller that enters in
// input order is served in input order, so that a later row's requests,
// hanging on a slow service, cannot take every slot ahead of an earlier
// row's. The zero Queue is not usable: use NewQueue.
type Queue struct {
	mu      sync.Mutex
	free    int
	waiting []*Ticket // in order of Enter
}

// Ticket is one place in a Queue: Wait for its slot, then Done.
type Ticket struct {
	q     *Queue
	ready chan struct{} // closed when the slot is granted
}

// NewQueue returns a queue of n slots (n >= 1).
func NewQueue(n int) *Queue { return &Queue{free: max(n, 1)} }

// Enter takes the next place in the queue.
func (q *Queue) Enter() *Ticket {
	t := &Ticket{q: q, ready: make(chan struct{})}
	q.mu.Lock()
	if q.free > 0 && len(q.waiting) == 0 {
		q.free--
		close(t.ready)
	} else {
		q.waiting = append(q.waiting, t)
	}
	q.mu.Unlock()
	return t
}

// Wait waits until the ticket's slot is granted, or returns ctx's error
// having given up its place (or its slot, when both came at once).
func (t *Ticket) Wait(ctx context.Context) error {
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
	}
	t.Cancel()
	return ctx.Err()
}

// Cancel gives up the ticket's place, or its slot when it was granted:
// for a ticket that will not Wait (its answer was found elsewhere).
func (t *Ticket) Cancel() {
	q := t.q
	q.mu.Lock()
	for i, w := range q.waiting {
		if w == t {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			q.mu.Unlock()
			return
		}
	}
	q.mu.Unlock()
	t.Done() // granted
}

// Done returns the slot of a granted ticket: to the first waiting
// ticket, or to the queue.
func (t *Ticket) Done() {
	q := t.q
	q.mu.Lock()
	if len(q.waiting) > 0 {
		next := q.waiting[0]
		q.waiting = q.waiting[1:]
		close(next.ready)
	} else {
		q.free++
	}
	q.mu.Unlock()
}
