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
//   - request data, an eighth: every request is charged for the bytes of
//     its body it holds decoded (after decompression), at
//     bytesPerBodyByte each, before it reads them; a stream gives a
//     batch's bytes back once the batch is graded and written (memBudget
//     says when a request may pass the eighth: all it holds stays within a
//     quarter, or within one request of the largest body alone);
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
// held: the byte itself, the index of its JSON values, bounded to
// indexPerByte bytes per byte of text (and the whitespace runs, at most
// about as much again in the densest text), and the slack of an index
// growing by doubling.
const bytesPerBodyByte = 8

// indexPerByte and indexFloor bound the index of every JSON document the
// server parses (jsonview.Doc.LimitIndex): 3 bytes per byte of text, one
// value in every 9 or 10 bytes on average (a world of records with string
// fields has one in 12 to 20), and at least 64 KiB whatever the text. A
// denser document is refused (a row with status error), since what it
// would hold is not bounded by its length.
const (
	indexPerByte = 3
	indexFloor   = 64 << 10
)

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
// flight, each through its memAccount. A charge is granted when
//
//   - it fits: all charged stays within max;
//   - or no other request holds any (a request larger than max is let in
//     alone);
//   - or the request is the oldest of those holding some, and its own
//     charge stays within max: the oldest always progresses (so requests
//     holding part of what they need cannot block each other for good),
//     and all charged stays within twice max.
//
// The last two only for a request with no batch in flight: a stream whose
// batches are being graded waits for them.
//
// Otherwise the request waits: the oldest, or one whose own batches are in
// flight, until its deadline (memory is coming back); another for memWait,
// then it is refused with errMemory and gives back what it holds.
type memBudget struct {
	mu      sync.Mutex
	max     int64
	used    int64
	peak    int64 // the most used at once
	waiting int
	holders map[*memAccount]struct{}
	seq     uint64
	wake    chan struct{} // closed and replaced when memory is given back
	// memWait, shorter in tests.
	maxWait time.Duration
}

func newMemBudget(max int64) *memBudget {
	return &memBudget{max: max, wake: make(chan struct{}), holders: map[*memAccount]struct{}{}, maxWait: memWait}
}

// oldest reports whether a is the oldest account holding memory. b.mu is
// held.
func (b *memBudget) oldest(a *memAccount) bool {
	for h := range b.holders {
		if h.seq < a.seq {
			return false
		}
	}
	return true
}

// grant charges n bytes to a if the rules allow. b.mu is held.
func (b *memBudget) grant(a *memAccount, n int64) bool {
	// Past max only for a request that cannot progress otherwise: one
	// whose own batches are in flight waits for them.
	if !(b.used+n <= b.max || a.batches == 0 && (b.used == a.held || a.held > 0 && a.held+n <= b.max && b.oldest(a))) {
		return false
	}
	if a.held == 0 {
		b.holders[a] = struct{}{}
	}
	a.held += n
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

// acquire charges n bytes to a, waiting as the rules say.
func (b *memBudget) acquire(a *memAccount, n int64) error {
	var timer *time.Timer
	for {
		b.mu.Lock()
		if b.grant(a, n) {
			b.mu.Unlock()
			return nil
		}
		wake := b.wake
		wait := b.maxWait
		if a.batches > 0 || a.held > 0 && b.oldest(a) || wait > time.Until(a.deadline) {
			wait = time.Until(a.deadline)
		}
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
			if !time.Now().Before(a.deadline) {
				err = context.DeadlineExceeded
			}
		case <-a.ctx.Done():
			err = context.Cause(a.ctx)
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// release gives n bytes of a's charge back. b.mu is held.
func (b *memBudget) release(a *memAccount, n int64) {
	if n <= 0 {
		return
	}
	if n > a.held {
		panic(fmt.Sprintf("serve: request memory released beyond its charge (%d of %d bytes)", n, a.held))
	}
	a.held -= n
	b.used -= n
	if a.held == 0 {
		delete(b.holders, a)
	}
	b.wakeWaiters()
}

// wakeWaiters wakes the requests waiting in acquire, to ask again. b.mu
// is held.
func (b *memBudget) wakeWaiters() {
	if b.waiting > 0 {
		close(b.wake)
		b.wake = make(chan struct{})
	}
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
// A stream's reader charges while its writer gives back; the budget's lock
// guards every account.
type memAccount struct {
	b        *memBudget
	ctx      context.Context
	deadline time.Time // ends every wait
	seq      uint64    // the order of the requests, for the oldest

	held int64 // charged
	kept int64 // body bytes held
	// batches, for a stream, is the batches being graded or written:
	// while there are some, a read waits for the memory they give back.
	batches int
}

// done returns why the request must stop (its client gone, its deadline
// past), or nil.
func (a *memAccount) done() error {
	if a.ctx.Err() != nil {
		return context.Cause(a.ctx)
	}
	if !time.Now().Before(a.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// open starts an account for a request.
func (b *memBudget) open(ctx context.Context, deadline time.Time) memAccount {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	return memAccount{b: b, ctx: ctx, deadline: deadline, seq: b.seq}
}

// reserve charges for n more body bytes, kept+n in all.
func (a *memAccount) reserve(n int64) error {
	b := a.b
	b.mu.Lock()
	need := (a.kept + n) * bytesPerBodyByte
	if need <= a.held {
		b.mu.Unlock()
		return nil
	}
	// Grow by at least a quarter of what is held, so that a body read in
	// small pieces asks a few times, not once per piece (but never past
	// the whole, which a request alone may need exactly).
	step := max(need-a.held, min(max(a.held/4, 1<<20), b.max-a.held))
	b.mu.Unlock()
	return b.acquire(a, step)
}

// reserveLength charges, at once, for a body whose Content-Length is
// length (when known and within max), and returns buf with room for it
// and the read that finds its end: one charge and one buffer of the
// announced size, not a buffer growing by doubling.
func (a *memAccount) reserveLength(length, max int64, buf []byte) ([]byte, error) {
	if length <= 0 || length > max {
		return buf, nil
	}
	if err := a.reserve(length + 1); err != nil {
		return buf, err
	}
	if int64(cap(buf)) < length+1 {
		buf = make([]byte, 0, length+1)
	}
	return buf, nil
}

// read records n body bytes read (after reserve).
func (a *memAccount) read(n int64) {
	a.b.mu.Lock()
	a.kept += n
	a.b.mu.Unlock()
}

// drop records n body bytes no longer held, and gives back the charge
// beyond what the bytes still held need.
func (a *memAccount) drop(n int64) {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	a.kept -= n
	b.release(a, a.held-a.kept*bytesPerBodyByte)
}

// batch records a stream's batch entering (+1) or leaving (-1) grading.
// A batch leaving wakes the waiting requests: its stream's reader may be
// waiting for its batches to be done, not for memory, and the memory the
// batch held may have been given back (drop) before it left, with the
// reader woken then, finding a batch still in flight, and waiting again.
// Without this wake it waited until its deadline.
func (a *memAccount) batch(d int) {
	a.b.mu.Lock()
	a.batches += d
	if d < 0 {
		a.b.wakeWaiters()
	}
	a.b.mu.Unlock()
}

// close gives back all the account holds.
func (a *memAccount) close() {
	if a.b == nil {
		return
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.release(a, a.held)
	a.kept = 0
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
	if err := c.acct.done(); err != nil {
		return 0, err
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
