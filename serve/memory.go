package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// The server's memory is bounded by Config.MaxMemory, shared out when the
// server is made:
//
//   - request data, a quarter: every request is charged for the bytes of
//     its body it holds decoded (after decompression), at
//     bytesPerBodyByte each, before it reads them; a stream gives a
//     batch's bytes back once the batch is graded and written;
//   - sessions, an eighth, counted by the bytes they hold;
//   - compiled checks of /verifier, a sixteenth, counted at
//     bytesPerCheckByte per byte of their text;
//   - the Go runtime's soft limit, three quarters (set by `gavel serve`
//     when GOMEMLIMIT is unset), above what the three can hold together,
//     so that garbage collection does not run hot when they are full.
//
// The rest is the program itself (its code is mapped from the binary) and
// its runtime. docs/serving.md states the resulting bound, which the
// memory-bound test checks with the hostile requests of internal/hostile.

// DefaultMaxMemory is Config.MaxMemory's default.
const DefaultMaxMemory = 512 << 20

// bytesPerBodyByte is what one byte of a request's body costs while it is
// held: the byte itself, the index of its JSON values (a node of 28 bytes
// per value, and a dense world has one value in every four or five
// bytes), and the slack of buffers that grow by doubling. Measured with
// internal/hostile's worlds: about 6.
const bytesPerBodyByte = 8

// bytesPerCheckByte is what one byte of a /verifier check set's text costs
// once compiled (the CEL programs and their ASTs). Measured: about 30 for
// checks of expressions.
const bytesPerCheckByte = 48

// memWait is how long a request waits for its share of the request memory
// before it is a 503 (a stream whose own batches are in flight waits for
// them instead, up to its deadline).
const memWait = 2 * time.Second

// errMemory is a request refused because the request memory stayed full.
var errMemory = errors.New("server at its memory bound")

// memBudget is the request memory: bytes charged by the requests in
// flight, at most max, except that a request larger than max is let in
// alone.
type memBudget struct {
	mu      sync.Mutex
	max     int64
	used    int64
	peak    int64 // the most used at once
	waiting int
	wake    chan struct{} // closed and replaced when memory is given back
}

func newMemBudget(max int64) *memBudget {
	return &memBudget{max: max, wake: make(chan struct{})}
}

// acquire charges n bytes, waiting until they fit for at most wait, or
// until ctx is done.
func (b *memBudget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	var timer *time.Timer
	for {
		b.mu.Lock()
		if b.used+n <= b.max || b.used == 0 {
			b.used += n
			b.peak = max(b.peak, b.used)
			b.mu.Unlock()
			return nil
		}
		wake := b.wake
		b.waiting++
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		var err error
		select {
		case <-wake:
		case <-timer.C:
			err = errMemory
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// release gives n bytes back.
func (b *memBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		panic(fmt.Sprintf("serve: request memory released twice (%d bytes in use)", b.used))
	}
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// state returns the bytes charged and the requests waiting.
func (b *memBudget) state() (used int64, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.waiting
}

// highest returns the most bytes charged at once so far.
func (b *memBudget) highest() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// memAccount is one request's charge on the request memory: the body
// bytes it holds decoded, each charged bytesPerBodyByte before it is read.
// A stream's reader charges while its writer gives back, so the account
// has a lock.
type memAccount struct {
	b        *memBudget
	ctx      context.Context
	deadline time.Time // ends every wait

	mu   sync.Mutex
	held int64 // charged
	kept int64 // body bytes held
	// batches, for a stream, is the batches being graded or written:
	// while there are some, a read waits for the memory they give back.
	batches int
}

// reserve charges for n more body bytes, kept+n in all.
func (a *memAccount) reserve(n int64) error {
	a.mu.Lock()
	need := (a.kept + n) * bytesPerBodyByte
	if need <= a.held {
		a.mu.Unlock()
		return nil
	}
	// Grow by at least a quarter of what is held, so that a body read in
	// small pieces asks a few times, not once per piece.
	step := max(need-a.held, a.held/4, 1<<20)
	wait := memWait
	if a.batches > 0 {
		wait = time.Until(a.deadline)
	}
	a.mu.Unlock()
	if err := a.b.acquire(a.ctx, step, wait); err != nil {
		return err
	}
	a.mu.Lock()
	a.held += step
	a.mu.Unlock()
	return nil
}

// read records n body bytes read (after reserve).
func (a *memAccount) read(n int64) {
	a.mu.Lock()
	a.kept += n
	a.mu.Unlock()
}

// drop records n body bytes no longer held, and gives back the charge
// beyond what the bytes still held need.
func (a *memAccount) drop(n int64) {
	a.mu.Lock()
	a.kept -= n
	extra := a.held - a.kept*bytesPerBodyByte
	if extra > 0 {
		a.held -= extra
	}
	a.mu.Unlock()
	if extra > 0 {
		a.b.release(extra)
	}
}

// batch records a stream's batch entering (+1) or leaving (-1) grading.
func (a *memAccount) batch(d int) {
	a.mu.Lock()
	a.batches += d
	a.mu.Unlock()
}

// close gives back all the account holds.
func (a *memAccount) close() {
	a.mu.Lock()
	held := a.held
	a.held, a.kept = 0, 0
	a.mu.Unlock()
	a.b.release(held)
}

// chargedReader charges a request for the bytes read through it, before
// reading them, and stops reading once the request's context is done (its
// client gone, its deadline past).
type chargedReader struct {
	r    io.Reader
	acct *memAccount
	n    int64 // bytes read
}

// maxChargedRead bounds one read, so that a large buffer does not ask for
// a large charge at once.
const maxChargedRead = 256 << 10

func (c *chargedReader) Read(p []byte) (int, error) {
	if err := c.acct.ctx.Err(); err != nil {
		return 0, context.Cause(c.acct.ctx)
	}
	if len(p) > maxChargedRead {
		p = p[:maxChargedRead]
	}
	if err := c.acct.reserve(int64(len(p))); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.acct.read(int64(n))
	return n, err
}
