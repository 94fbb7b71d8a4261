// Package hostile holds the requests that try to take gavel serve over its
// memory bound, and a watcher of a server process's resident memory and
// liveness. The memory-bound test of package cli and `make loadtest` run
// them against `gavel serve` started with its default flags.
package hostile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Server is a running gavel serve: its base URL and process id.
type Server struct {
	URL string
	PID int
}

// RSS returns the process's resident memory now and at its peak (VmRSS and
// VmHWM of /proc/PID/status), in bytes.
func (s Server) RSS() (cur, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			cur = kB(v)
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			peak = kB(v)
		}
	}
	if peak == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmHWM", s.PID)
	}
	return cur, peak, nil
}

func kB(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
	return n << 10
}

// CPU returns the process's CPU time so far (user and system).
func (s Server) CPU() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.PID))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil // 100 clock ticks per second
}

// Attack is one sequence of requests. Run returns an error when the
// server answered something other than what the attack allows (a crash,
// a 500, a success where a refusal is due).
type Attack struct {
	Name string
	// What says what the attack sends, for a report.
	What string
	Run  func(ctx context.Context, s Server, c *http.Client, t *Tally) error
}

// Tally counts the status codes of an attack's answers.
type Tally struct {
	mu    sync.Mutex
	m     map[int]int
	notes []string
}

func (t *Tally) note(s string) {
	t.mu.Lock()
	t.notes = append(t.notes, s)
	t.mu.Unlock()
}

func (t *Tally) add(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[int]int{}
	}
	t.m[code]++
}

// String lists the codes and their counts, in the order of the codes:
// "200: 3, 503: 5".
func (t *Tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	codes := make([]int, 0, len(t.m))
	for c := range t.m {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d: %d", c, t.m[c])
	}
	return strings.Join(append(parts, t.notes...), ", ")
}

// Scale sizes the attacks: Scale{} is the full size of the probe;
// tests use smaller ones.
type Scale struct {
	// Conns is the number of requests sent at once (0: 8).
	Conns int
	// Lines is the number of 15 MiB lines of one compressed JSON Lines
	// request (0: 80).
	Lines int
	// Sessions is the number of 30 KB sessions stored (0: 20,000).
	Sessions int
	// CheckSets is the number of distinct 64 KB check sets sent to
	// /verifier (0: 253).
	CheckSets int
}

func (sc Scale) or() Scale {
	if sc.Conns == 0 {
		sc.Conns = 8
	}
	if sc.Lines == 0 {
		sc.Lines = 80
	}
	if sc.Sessions == 0 {
		sc.Sessions = 20000
	}
	if sc.CheckSets == 0 {
		sc.CheckSets = 253
	}
	return sc
}

// Memory returns the attacks on the memory bound.
func Memory(sc Scale) []Attack {
	sc = sc.or()
	return []Attack{
		{"compressed-lines", fmt.Sprintf("%d requests at once, each %d JSON Lines of 15 MiB (and one of 30 MiB) zstd-compressed", sc.Conns, sc.Lines),
			func(ctx context.Context, s Server, c *http.Client, t *Tally) error {
				return compressedLines(ctx, s, c, t, sc)
			}},
		{"big-objects", fmt.Sprintf("%d requests at once of one 16 MiB rollout each (the largest body), to /v1/grade, /verifier and PUT /sessions", 3*sc.Conns),
			func(ctx context.Context, s Server, c *http.Client, t *Tally) error {
				return bigObjects(ctx, s, c, t, sc)
			}},
		{"dense-objects", fmt.Sprintf("%d requests at once of one 16 MiB rollout whose state is an array of one-digit numbers", sc.Conns),
			func(ctx context.Context, s Server, c *http.Client, t *Tally) error {
				return denseObjects(ctx, s, c, t, sc)
			}},
		{"sessions", fmt.Sprintf("%d PUT /sessions of 30 KB, then grades by session", sc.Sessions),
			func(ctx context.Context, s Server, c *http.Client, t *Tally) error {
				return manySessions(ctx, s, c, t, sc)
			}},
		{"check-sets", fmt.Sprintf("%d distinct 64 KB check sets to /verifier", sc.CheckSets),
			func(ctx context.Context, s Server, c *http.Client, t *Tally) error {
				return checkSets(ctx, s, c, t, sc)
			}},
	}
}

// state returns a CRM final state of about n bytes: the users, stages and
// opportunities TASK-002's verifier reads, and a padding array of small
// objects, each several JSON tokens, so that parsing it costs what a real
// large world costs.
func state(n int, seed int) []byte {
	b := make([]byte, 0, n+256)
	b = append(b, `{"users":{"USR-003":{"id":"USR-003","name":"Ana","active":true},"USR-004":{"id":"USR-004","name":"Bo","active":false}},`...)
	b = append(b, `"opportunities":{"OPP-0001":{"id":"OPP-0001","ownerId":"USR-003","stageId":"STG-003","status":"open","amount":1000}},"padding":[`...)
	for i := 0; len(b) < n-64; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":"PAD-`...)
		b = strconv.AppendInt(b, int64(seed*10_000_000+i), 10)
		b = append(b, `","v":`...)
		b = strconv.AppendInt(b, int64(i%997), 10)
		b = append(b, `,"ok":true}`...)
	}
	return append(b, "]}"...)
}

// rollout returns one rollout of TASK-002 with a final state of about n
// bytes.
func rollout(id string, n, seed int) []byte {
	b := []byte(`{"rollout_id":"` + id + `","task_id":"TASK-002","final_state":`)
	b = append(b, state(n, seed)...)
	return append(b, "}"...)
}

// check answers of a request: the status must be one of ok.
func check(t *Tally, resp *http.Response, err error, what string, ok ...int) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	t.add(resp.StatusCode)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	io.Copy(io.Discard, resp.Body)
	for _, code := range ok {
		if resp.StatusCode == code {
			return nil
		}
	}
	return fmt.Errorf("%s: status %d %s, want one of %v", what, resp.StatusCode, bytes.TrimSpace(body), ok)
}

// parallel runs f(i) for i < n on n goroutines and returns the first error.
func parallel(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(i) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Busy answers a server may give an attack's request instead of grading
// it: 429 (too many requests in flight), 503 (memory or time bound), 413
// (too large).
var busy = []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusRequestEntityTooLarge}

func compressedLines(ctx context.Context, s Server, c *http.Client, t *Tally, sc Scale) error {
	line := append(rollout("zl", 15<<20, 1), '\n')
	long := append(rollout("zl-long", 30<<20, 1), '\n') // over the largest line
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	var z bytes.Buffer
	enc.Reset(&z)
	for i := range sc.Lines {
		l := line
		if i == 1 {
			l = long
		}
		if _, err := enc.Write(l); err != nil {
			return err
		}
	}
	if err := enc.Close(); err != nil {
		return err
	}
	body := z.Bytes()
	return parallel(sc.Conns, func(i int) error {
		req, err := http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/grade", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Content-Encoding", "zstd")
		resp, err := c.Do(req)
		// A stream answers 200 and may end with an error line; reading it
		// whole is what a client does.
		return check(t, resp, err, fmt.Sprintf("compressed lines (%d KB)", len(body)>>10), append([]int{200}, busy...)...)
	})
}

func bigObjects(ctx context.Context, s Server, c *http.Client, t *Tally, sc Scale) error {
	const size = 16<<20 - 1024
	body := rollout("big", size, 2)
	gym := append([]byte(`{"sessionId":"big","checks":[{"id":"c","type":"expr","expr":"true"}],"final_state":`), state(size-200, 3)...)
	gym = append(gym, '}')
	sess := append(append([]byte(`{"final_state":`), state(size-100, 4)...), '}')
	return parallel(3*sc.Conns, func(i int) error {
		var req *http.Request
		var err error
		switch i % 3 {
		case 0:
			req, err = http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/grade", bytes.NewReader(body))
		case 1:
			req, err = http.NewRequestWithContext(ctx, "POST", s.URL+"/verifier", bytes.NewReader(gym))
		default:
			req, err = http.NewRequestWithContext(ctx, "PUT", s.URL+"/sessions/big-"+strconv.Itoa(i), bytes.NewReader(sess))
		}
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		return check(t, resp, err, fmt.Sprintf("big object %d (%s %s)", i, req.Method, req.URL.Path), append([]int{200, 201}, busy...)...)
	})
}

func denseObjects(ctx context.Context, s Server, c *http.Client, t *Tally, sc Scale) error {
	body := []byte(`{"rollout_id":"dense","task_id":"TASK-002","final_state":{"padding":[` + strings.Repeat("0,", 8<<20-64) + `0]}}`)
	return parallel(sc.Conns, func(i int) error {
		req, err := http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/grade", bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		return check(t, resp, err, fmt.Sprintf("dense object %d", i), append([]int{200, http.StatusBadRequest}, busy...)...)
	})
}

func manySessions(ctx context.Context, s Server, c *http.Client, t *Tally, sc Scale) error {
	// The CPU of a small grade with the session store empty, then full:
	// collection must not run hot against a full store.
	empty, err := smallGrades(ctx, s, c, t)
	if err != nil {
		return err
	}
	var next atomic.Int64
	err = parallel(sc.Conns, func(int) error {
		for {
			i := next.Add(1) - 1
			if i >= int64(sc.Sessions) {
				return nil
			}
			body := append(append([]byte(`{"final_state":`), state(30_000, int(i))...), '}')
			req, err := http.NewRequestWithContext(ctx, "PUT", s.URL+"/sessions/s-"+strconv.FormatInt(i, 10), bytes.NewReader(body))
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err := check(t, resp, err, fmt.Sprintf("PUT /sessions/s-%d", i), 200, 201, http.StatusTooManyRequests); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return err
	}
	// Grades by the stored sessions, the newest first (the oldest are
	// evicted).
	for i := sc.Sessions - 1; i >= max(0, sc.Sessions-200); i-- {
		body := `{"sessionId":"s-` + strconv.Itoa(i) + `","checks":[{"id":"c","type":"expr","expr":"true"}]}`
		req, err := http.NewRequestWithContext(ctx, "POST", s.URL+"/verifier", strings.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err := check(t, resp, err, "POST /verifier by session s-"+strconv.Itoa(i), 200, 404); err != nil {
			return err
		}
	}
	full, err := smallGrades(ctx, s, c, t)
	if err != nil {
		return err
	}
	t.note(fmt.Sprintf("server CPU per small /v1/grade: %.0f µs with no session, %.0f µs with the store full", empty, full))
	return nil
}

// smallGrades sends 2,000 small /v1/grade requests, one at a time, and
// returns the server's CPU per request in microseconds.
func smallGrades(ctx context.Context, s Server, c *http.Client, t *Tally) (float64, error) {
	const n = 2000
	body := []byte(`{"task_id":"TASK-004","output":"$1,234.50"}`)
	cpu0, err := s.CPU()
	if err != nil {
		return 0, err
	}
	for range n {
		req, err := http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/grade", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		resp, err := c.Do(req)
		if err := check(t, resp, err, "small grade", 200); err != nil {
			return 0, err
		}
	}
	cpu1, err := s.CPU()
	if err != nil {
		return 0, err
	}
	return float64((cpu1 - cpu0).Microseconds()) / n, nil
}

// checkSet returns a distinct check set of about 64 KB: many expression
// checks, each compiled.
func checkSet(i int) []byte {
	b := []byte(`[`)
	for j := 0; len(b) < 64<<10-200; j++ {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":"c`...)
		b = strconv.AppendInt(b, int64(j), 10)
		b = append(b, `","type":"expr","expr":"size(final.users) >= `...)
		b = strconv.AppendInt(b, int64(i*100000+j), 10)
		b = append(b, ` || final.users['USR-003'].active"}`...)
	}
	return append(b, ']')
}

func checkSets(ctx context.Context, s Server, c *http.Client, t *Tally, sc Scale) error {
	var next atomic.Int64
	return parallel(sc.Conns, func(int) error {
		for {
			i := next.Add(1) - 1
			if i >= int64(sc.CheckSets) {
				return nil
			}
			body := append(append([]byte(`{"sessionId":"cs","final_state":{"users":{"USR-003":{"active":true}}},"checks":`), checkSet(int(i))...), '}')
			req, err := http.NewRequestWithContext(ctx, "POST", s.URL+"/verifier", bytes.NewReader(body))
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err := check(t, resp, err, fmt.Sprintf("check set %d", i), 200, http.StatusTooManyRequests); err != nil {
				return err
			}
		}
	})
}

// Watcher samples a server's resident memory and asks its /healthz while
// an attack runs.
type Watcher struct {
	s      Server
	stop   chan struct{}
	done   chan struct{}
	peak   atomic.Int64
	probes atomic.Int64
	failed atomic.Int64
	first  atomic.Value // string: the first failed probe
}

// Watch starts watching s: its resident memory every 20 ms, its /healthz
// every 500 ms with a one-second timeout.
func Watch(s Server) *Watcher {
	w := &Watcher{s: s, stop: make(chan struct{}), done: make(chan struct{})}
	hc := &http.Client{Timeout: time.Second}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var probing sync.WaitGroup
		defer probing.Wait()
		for n := 0; ; n++ {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			if cur, _, err := s.RSS(); err == nil && cur > w.peak.Load() {
				w.peak.Store(cur)
			}
			if n%25 == 0 {
				probing.Add(1)
				go func() {
					defer probing.Done()
					w.probes.Add(1)
					resp, err := hc.Get(s.URL + "/healthz")
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							err = fmt.Errorf("status %d", resp.StatusCode)
						}
					}
					if err != nil {
						w.failed.Add(1)
						w.first.CompareAndSwap(nil, err.Error())
					}
				}()
			}
		}
	}()
	return w
}

// Stop ends the watch and returns the highest resident memory sampled,
// the /healthz probes sent and failed, and the first failure.
func (w *Watcher) Stop() (peak, probes, failed int64, first string) {
	close(w.stop)
	<-w.done
	f, _ := w.first.Load().(string)
	return w.peak.Load(), w.probes.Load(), w.failed.Load(), f
}
