package serve

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gavelhq/gavel/verifiers"
)

// The request memory: what fits is charged at once; a request larger than
// the whole is let in alone; the oldest holder may take its own share up
// to the whole; another that does not fit waits, then is refused with
// errMemory; giving memory back wakes the waiting.
func TestMemBudget(t *testing.T) {
	b := newMemBudget(100)
	b.maxWait = 20 * time.Millisecond
	far := time.Now().Add(time.Minute)
	acct := func() *memAccount { a := b.open(context.Background(), far); return &a }
	x, y, z := acct(), acct(), acct() // oldest first
	if err := b.acquire(y, 60); err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(z, 50); !errors.Is(err, errMemory) {
		t.Fatalf("60+50 of 100: %v, want errMemory", err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(z, 50) }()
	waitUntil(t, "a waiter", func() bool { _, w := b.state(); return w == 1 })
	b.mu.Lock()
	b.release(y, 20)
	b.mu.Unlock()
	if err := <-got; err != nil {
		t.Fatalf("40+50 of 100 after a release: %v", err)
	}
	// y (older than z) holds 40 and may grow to the whole, past the sum.
	if err := b.acquire(y, 60); err != nil {
		t.Fatalf("the oldest holder growing to the whole: %v", err)
	}
	if used, _ := b.state(); used != 150 {
		t.Fatalf("used %d, want 150 (within twice the whole)", used)
	}
	b.mu.Lock()
	b.release(y, y.held)
	b.release(z, z.held)
	b.mu.Unlock()
	if err := b.acquire(x, 300); err != nil {
		t.Fatalf("300 of 100 alone: %v", err)
	}
	if err := b.acquire(z, 1); !errors.Is(err, errMemory) {
		t.Fatalf("1 beside one over the whole: %v, want errMemory", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := b.open(ctx, far)
	if err := b.acquire(&c, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	x.close()
	if used, waiting := b.state(); used != 0 || waiting != 0 || len(b.holders) != 0 {
		t.Fatalf("after all released: %d used, %d waiting, %d holders", used, waiting, len(b.holders))
	}
}

// memIdle waits until no request holds request memory: every request
// gives back all it charged.
func memIdle(t *testing.T, s *Server) {
	t.Helper()
	waitUntil(t, "the request memory to be given back", func() bool { used, _ := s.mem.state(); return used == 0 })
}

// countingVerifier grades TASK-COUNT and counts its calls.
func countingVerifier(n *atomic.Int64) *verifiers.Verifier {
	return &verifiers.Verifier{ID: "VER-COUNT", Name: "counts its calls", Tasks: []string{"TASK-COUNT"},
		Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
			n.Add(1)
			c.Add(verifiers.Check{ID: "counted", Label: "counted", Required: true, Status: verifiers.Pass})
			return nil
		}}
}

// A stream of lines as long as the request memory allows is graded whole,
// charged batch by batch: the request memory in use never passes its bound
// by more than one line, and all of it is given back.
func TestStreamChargesMemory(t *testing.T) {
	var calls atomic.Int64
	s, ts := newServer(t, Config{MaxMemory: 64 << 20}, countingVerifier(&calls))
	const lines, size = 24, 1 << 20
	var body strings.Builder
	pad := strings.Repeat("x", size)
	for i := range lines {
		fmt.Fprintf(&body, `{"rollout_id":"r%d","task_id":"TASK-COUNT","output":"%s"}`+"\n", i, pad)
	}
	got := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", body.String())
	if got.code != 200 || strings.Count(got.body, `"status":"passed"`) != lines {
		t.Fatalf("stream of %d lines of 1 MiB = %d, %d passed; want 200 and all passed: %.300s", lines, got.code, strings.Count(got.body, `"status":"passed"`), got.body)
	}
	bound := s.mem.max + (size+4<<10)*bytesPerBodyByte
	if p := s.mem.highest(); p == 0 || p > bound {
		t.Errorf("request memory peaked at %d MiB, want some and at most %d MiB", p>>20, bound>>20)
	}
	memIdle(t, s)
}

// Requests that together ask more than the request memory are served in
// turn or refused with 503 and Retry-After, never all at once, and each
// gives back what it charged.
func TestObjectsShareMemory(t *testing.T) {
	var calls atomic.Int64
	s, ts := newServer(t, Config{MaxMemory: 64 << 20, MaxInflight: 16}, countingVerifier(&calls))
	body := `{"task_id":"TASK-COUNT","output":"` + strings.Repeat("y", 3<<20) + `"}`
	codes := make(chan response, 12)
	for range cap(codes) {
		go func() { codes <- do(t, ts, "POST", "/v1/grade", "", body) }()
	}
	ok := 0
	for range cap(codes) {
		r := <-codes
		switch {
		case r.code == 200:
			ok++
		case r.code == 503 && strings.Contains(r.body, "memory") && r.header.Get("Retry-After") != "":
		default:
			t.Errorf("a 3 MiB rollout = %d %s, want 200, or 503 for memory with Retry-After", r.code, r.body)
		}
	}
	if ok == 0 {
		t.Error("no request was graded")
	}
	// Each asks more than the whole: one at a time.
	one := int64(len(body)+1)*bytesPerBodyByte + 1<<20
	if p := s.mem.highest(); p < one/2 || p > one {
		t.Errorf("request memory peaked at %d MiB, want one request's charge (at most %d MiB)", p>>20, one>>20)
	}
	memIdle(t, s)
}

// zstdBomb returns a zstd frame of n lines of size bytes each (an "x"
// repeated, a newline), in RLE blocks of 128 KiB: a few bytes that
// decompress to n*size.
func zstdBomb(n, size int) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x50} // magic; no checksum, no size; a 1 MiB window
	block := func(typ, size int, last bool, content ...byte) {
		h := uint32(size)<<3 | uint32(typ)<<1
		if last {
			h |= 1
		}
		b = binary.LittleEndian.AppendUint32(b, h)[:len(b)+3]
		b = append(b, content...)
	}
	for i := range n {
		for left := size - 1; left > 0; {
			k := min(left, 128<<10)
			block(1, k, false, 'x')
			left -= k
		}
		block(0, 1, i == n-1, '\n')
	}
	return b
}

// A stream that decompresses to more than its deadline lets the server
// read ends at the deadline: decoding stops, not only grading.
func TestStreamDeadlineStopsDecoding(t *testing.T) {
	var calls atomic.Int64
	s, ts := newServer(t, Config{RequestTimeout: 500 * time.Millisecond, MaxBody: 1 << 20}, countingVerifier(&calls))
	bomb := zstdBomb(2000, 64<<20) // 128 GiB of too-long lines
	start := time.Now()
	got := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", string(bomb), "Content-Encoding", "zstd")
	took := time.Since(start)
	if !strings.Contains(got.body, "longer than 500ms (the request timeout)") {
		t.Errorf("bomb of %d KB = %d %.300s, want the request timeout", len(bomb)>>10, got.code, got.body)
	}
	if took > 10*time.Second {
		t.Errorf("bomb answered after %s, want about the 500ms deadline", took)
	}
	waitUntil(t, "the request to end", func() bool { return testutil.ToFloat64(s.metrics.inflight) == 0 })
	memIdle(t, s)
}

// When its client goes, a stream stops reading and grading (its deadline
// far away) as soon as the server sees it gone: at a failed write.
func TestStreamStopsWhenClientGoes(t *testing.T) {
	var calls atomic.Int64
	slow := countingVerifier(&calls)
	grade := slow.Grade
	slow.Grade = func(r *verifiers.Rollout, c *verifiers.Checks) error {
		time.Sleep(200 * time.Microsecond)
		return grade(r, c)
	}
	s, ts := newServer(t, Config{RequestTimeout: 10 * time.Minute}, slow)
	const rows = 200_000 // a minute of grading at least
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	body := enc.EncodeAll([]byte(strings.Repeat(`{"task_id":"TASK-COUNT"}`+"\n", rows)), nil)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /v1/grade HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Encoding: zstd\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "200") {
		t.Fatalf("status line %q: %v", line, err)
	}
	waitUntil(t, "some rollouts graded", func() bool { return calls.Load() > 0 })
	conn.Close()
	gone := time.Now()
	waitUntil(t, "the request to end once its client went", func() bool { return testutil.ToFloat64(s.metrics.inflight) == 0 })
	if d := time.Since(gone); d > 5*time.Second {
		t.Errorf("the request ended %s after its client went, want at once", d)
	}
	if n := calls.Load(); n >= rows {
		t.Errorf("graded all %d rollouts of a client that went", n)
	}
	memIdle(t, s)
}

// A request's deadline bounds its whole life: a sender trickling a JSON
// Lines or array body is cut at the deadline, however often it sends.
func TestSlowSenderCut(t *testing.T) {
	s, ts := newServer(t, Config{RequestTimeout: 500 * time.Millisecond})
	for _, tt := range []struct{ ctype, first, drip string }{
		{"application/x-ndjson", "", `{"task_id": "TASK-C01"}` + "\n"},
		{"", "[", " "},
	} {
		pr, pw := io.Pipe()
		stop := make(chan struct{})
		go func() {
			defer pw.Close()
			pw.Write([]byte(tt.first))
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for range 1000 { // 20 s at most
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := pw.Write([]byte(tt.drip)); err != nil {
					return
				}
			}
		}()
		req, _ := http.NewRequest("POST", ts.URL+"/v1/grade", pr)
		if tt.ctype != "" {
			req.Header.Set("Content-Type", tt.ctype)
		}
		start := time.Now()
		resp, err := ts.Client().Do(req)
		var body []byte
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		took := time.Since(start)
		close(stop)
		if err != nil || !strings.Contains(string(body), "request timeout") {
			t.Errorf("%q dripping %q: %v %s, want cut by the request timeout", tt.ctype, tt.drip, err, body)
		}
		if took > 8*time.Second {
			t.Errorf("%q dripping %q: cut after %s, want about the 500ms deadline", tt.ctype, tt.drip, took)
		}
	}
	memIdle(t, s)
}

// /readyz says when the server is saturated: every place in flight taken.
func TestReadyzSaturated(t *testing.T) {
	s, ts := newServer(t, Config{MaxInflight: 1})
	release := make(chan struct{})
	done, cleanup := stalled(t, ts.URL, release)
	defer cleanup()
	waitUntil(t, "the stalled request to be admitted", func() bool { return len(s.inflight) == 1 })
	if got := do(t, ts, "GET", "/readyz", "", ""); got.code != 503 || !strings.Contains(got.body, "saturated, 1 of 1 requests in flight") {
		t.Errorf("/readyz while full = %d %s, want 503 saturated", got.code, got.body)
	}
	close(release)
	<-done
	waitUntil(t, "the place to be free", func() bool { return len(s.inflight) == 0 })
	if got := do(t, ts, "GET", "/readyz", "", ""); got.code != 200 {
		t.Errorf("/readyz once free = %d %s, want 200", got.code, got.body)
	}
}

// A session counts the memory it holds: its body is kept in a buffer of
// its length, whatever the buffer it was read into.
func TestSessionsCountMemory(t *testing.T) {
	ss := newSessions(1000, 1<<20)
	body := make([]byte, 100, 1<<20)
	ss.put("a", body)
	stored, _ := ss.get("a")
	if cap(stored) != 100 || ss.bytes != 100+1+sessionOverhead {
		t.Errorf("stored a 100-byte body in a buffer of %d, counted %d bytes", cap(stored), ss.bytes)
	}
	for i := range 100 {
		ss.put(fmt.Sprint("s", i), make([]byte, 30<<10))
		if ss.bytes > 1<<20 {
			t.Fatalf("after %d sessions of 30 KB: %d bytes counted, over the bound of 1 MiB", i+1, ss.bytes)
		}
	}
	if n := ss.lru.Len(); n < 30 || n > 34 {
		t.Errorf("%d sessions of 30 KB kept in 1 MiB, want 30 to 34", n)
	}
}

// Compiled checks are counted by the memory they hold, and the cache stays
// within its bound.
func TestCheckCacheBytes(t *testing.T) {
	c := newGymCache(1 << 20)
	for i := range 50 {
		text := fmt.Sprintf(`[{"id":"c%d","type":"expr","expr":"size(final) >= %d"}]`, i, i)
		if _, err := c.get([]byte(text)); err != nil {
			t.Fatal(err)
		}
		if c.bytes > c.maxBytes || c.bytes < checksCost(len(text)) {
			t.Fatalf("after %d sets: %d bytes counted (bound %d)", i+1, c.bytes, c.maxBytes)
		}
	}
}

// A rollout denser in JSON values than the index bound (its index would
// not be bounded by its length) is refused: a row with status error in a
// stream, a 400 alone; a rollout as dense but short is graded.
func TestDenseRolloutRefused(t *testing.T) {
	s, ts := newServer(t, Config{})
	dense := `{"task_id":"TASK-C01","final_state":{"events":[` + strings.Repeat("0,", 1<<18) + `0]}}`
	got := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", dense+"\n")
	if got.code != 200 || !strings.Contains(got.body, `"status":"error"`) || !strings.Contains(got.body, "more JSON values than the memory bound allows") {
		t.Errorf("dense line of %d bytes = %d %.300s, want a row with the index error", len(dense), got.code, got.body)
	}
	got = do(t, ts, "POST", "/v1/grade", "", dense)
	if got.code != 400 || !strings.Contains(got.body, "more JSON values than the memory bound allows") {
		t.Errorf("dense rollout of %d bytes = %d %.300s, want 400 with the index error", len(dense), got.code, got.body)
	}
	short := `{"task_id":"TASK-C01","final_state":{"events":[` + strings.Repeat("0,", 100) + `0]}}`
	if got := do(t, ts, "POST", "/v1/grade", "", short); got.code != 200 || strings.Contains(got.body, `"status":"error"`) {
		t.Errorf("short dense rollout = %d %.300s, want graded", got.code, got.body)
	}
	memIdle(t, s)
}

// A body of announced length (one charge, one buffer) and the same body
// sent in chunks (charged as read, a growing buffer) give the same bytes,
// for a rollout, an array and a gym request.
func TestBodyLengthKnownOrNot(t *testing.T) {
	s, ts := newServer(t, Config{})
	for _, tt := range []struct{ path, body string }{
		{"/v1/grade", `{"task_id": "TASK-C01", "final_state": {"events": [` + meeting + `]}, "model": "m1"}`},
		{"/v1/grade", `[{"task_id": "TASK-004", "output": "$1,234.50"}, {"task_id": "TASK-001"}, 3]`},
		{"/verifier", `{"sessionId": "s", "final_state": {"events": [` + meeting + `]}, "checks": [{"id": "c", "type": "expr", "expr": "size(final.events) == 1"}]}`},
	} {
		known := do(t, ts, "POST", tt.path, "", tt.body)
		pr, pw := io.Pipe()
		go func() {
			for i := 0; i < len(tt.body); i += 7 {
				pw.Write([]byte(tt.body[i:min(i+7, len(tt.body))]))
			}
			pw.Close()
		}()
		req, _ := http.NewRequest("POST", ts.URL+tt.path, pr)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		chunked, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if req.ContentLength > 0 || known.code != 200 || resp.StatusCode != 200 || known.body != string(chunked) {
			t.Errorf("%s %.40s: announced %d %q, chunked %d %q", tt.path, tt.body, known.code, known.body, resp.StatusCode, chunked)
		}
	}
	memIdle(t, s)
}

// A stream's reader that waits for its own batches to be done is woken
// when the last one leaves, not at its deadline: the memory they held may
// have been given back before they left, waking it too early.
func TestBatchLeavingWakesItsReader(t *testing.T) {
	b := newMemBudget(100)
	a := b.open(context.Background(), time.Now().Add(time.Minute))
	if err := b.acquire(&a, 80); err != nil {
		t.Fatal(err)
	}
	a.batch(+1)
	got := make(chan error, 1)
	go func() { got <- b.acquire(&a, 50) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, waiting := b.state(); waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reader's charge did not wait for its batch in flight")
		}
		time.Sleep(time.Millisecond)
	}
	a.batch(-1)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("charge after the batch left: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader still waits 5 s after its last batch left (until its deadline)")
	}
	if used, _ := b.state(); used != 130 {
		t.Errorf("used %d, want 130 (80 held, then 50 more once no batch is in flight)", used)
	}
}
