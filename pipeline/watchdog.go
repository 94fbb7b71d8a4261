package pipeline

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTimeout is Config.Timeout when it is 0.
const DefaultTimeout = 10 * time.Second

// abandonedSlot marks a worker whose row the supervisor took over.
const abandonedSlot = ^uint64(0)

// pool is the grading worker pool with its watchdog.
//
// A verifier is a Go function; one that never returns cannot be stopped.
// So each worker publishes, per row, a slot number and the time the row's
// verifier started (two atomic stores and a compare-and-swap per row: no
// goroutine, channel or timer per row). The supervisor wakes a few times
// per timeout; when a worker's row has run past the timeout, it swaps the
// worker's slot to abandonedSlot. Whoever wins that compare-and-swap owns
// the row:
//
//   - the worker wins when its verifier returns first: it clears the slot
//     and carries on;
//   - the supervisor wins: it starts a replacement worker that grades the
//     same job from that row on, the row itself as a verifier error ("timed
//     out after ..."), appending to the same results. The abandoned worker,
//     if its verifier ever returns, sees that it lost and exits at once
//     (runtime.Goexit) without touching the job again.
//
// The results a worker appended before the row, its job and the row index
// are written before the slot store that publishes the row, and read by the
// supervisor only after its successful swap, so they are handed over
// without a data race. Each worker has its own grader; the replacement
// starts a new one. An abandoned goroutine may outlive Run: it is the one
// exception to Run's promise that every goroutine has exited, and the
// number of them at once is capped by Config.MaxStuck, beyond which the run
// stops.
//
// Rejected: a goroutine (or a timer) per row, which costs more than
// grading a small rollout; a per-batch deadline, which cannot say which
// row hung and loses the rest of the batch.
type pool struct {
	r        *runner
	jobs     <-chan *job
	done     chan<- *job
	results  *resultsFree
	timeout  time.Duration // 0: no watchdog
	maxStuck int
	base     time.Time
	cancel   context.CancelFunc

	wg    sync.WaitGroup // one count per live (not abandoned) worker
	mu    sync.Mutex
	live  []*worker
	stuck atomic.Int32
	err   error // set under mu when too many workers are stuck
}

// worker is one grading goroutine's watch state.
type worker struct {
	slot    atomic.Uint64 // 0 idle, abandonedSlot, else the row in flight
	started atomic.Int64  // nanoseconds since pool.base when the row began
	seq     uint64        // owned by the goroutine

	// Owned by the goroutine; read by the supervisor after a takeover.
	job *job
	g   *grader

	// takeover, when set, is called by the supervisor (holding pool.mu)
	// once it owns the worker's stuck row, instead of starting a worker on
	// the job; it returns the worker that carries on, to be watched in its
	// place. The stuck-call limit is then the caller's (RowGrader).
	takeover func() *worker
}

// begin publishes that a verifier call starts.
func (w *worker) begin(p *pool) uint64 {
	w.seq++
	w.started.Store(int64(time.Since(p.base)))
	w.slot.Store(w.seq)
	return w.seq
}

// end clears the slot, or ends the goroutine when the supervisor took the
// row over meanwhile.
func (w *worker) end(p *pool, seq uint64) {
	if !w.slot.CompareAndSwap(seq, 0) {
		p.stuck.Add(-1)
		runtime.Goexit()
	}
}

func (p *pool) start(n int) {
	for range n {
		w := &worker{}
		p.live = append(p.live, w)
		p.wg.Add(1)
		go p.work(w, nil, 0)
	}
}

// work runs one worker: first, when not nil, is a job taken over from a
// stuck worker, to be graded from row from on, that row as timed out.
func (p *pool) work(w *worker, first *job, from int) {
	defer func() {
		if w.slot.Load() != abandonedSlot {
			p.wg.Done()
		}
	}()
	g := &grader{plan: p.r.plan, timedOut: -1}
	if p.timeout > 0 {
		g.watch = w
		g.pool = p
	}
	w.g = g
	if first != nil {
		g.timedOut = from
		p.grade(w, first, from)
		g.timedOut = -1
		p.done <- first
	}
	for j := range p.jobs {
		if j.kind == jobBatch {
			j.res = p.results.Get()
			j.res.reset()
			p.grade(w, j, 0)
		}
		p.done <- j
	}
}

// grade grades job j from row from on and hands it to the writer.
func (p *pool) grade(w *worker, j *job, from int) {
	w.job = j
	w.g.prev = j.prev
	w.g.gradeBatch(j.unit, j.batch, j.res, from)
	w.g.prev = nil
	w.job = nil
	j.batch.Release()
	j.batch = nil
}

// supervise checks the workers' rows until stop is closed.
func (p *pool) supervise(stop <-chan struct{}) {
	t := time.NewTicker(p.tick())
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		p.sweep()
		p.mu.Unlock()
	}
}

// tick is how often the supervisor checks: a few times per timeout.
func (p *pool) tick() time.Duration {
	return min(max(p.timeout/8, time.Millisecond), time.Second)
}

// sweep takes over the rows that have run past the timeout. The caller
// holds p.mu.
func (p *pool) sweep() {
	now := int64(time.Since(p.base))
	for i := 0; i < len(p.live); i++ {
		w := p.live[i]
		s := w.slot.Load()
		if s == 0 || s == abandonedSlot || now-w.started.Load() < int64(p.timeout) {
			continue
		}
		if !w.slot.CompareAndSwap(s, abandonedSlot) {
			continue
		}
		if w.takeover != nil {
			p.stuck.Add(1)
			p.live[i] = w.takeover()
			continue
		}
		j, row := w.job, w.g.row
		n := int(p.stuck.Add(1))
		if n > p.maxStuck {
			if p.err == nil {
				p.err = fmt.Errorf("%d verifier calls are stuck past the timeout of %s (limit %d), the last on %s row %d: stopping", n, p.timeout, p.maxStuck, j.unit.Path, j.batch.Rows[row].Index)
			}
			p.live = append(p.live[:i:i], p.live[i+1:]...)
			p.wg.Done()
			p.cancel()
			return
		}
		nw := &worker{}
		p.live[i] = nw
		go p.work(nw, j, row)
	}
}

func (p *pool) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
