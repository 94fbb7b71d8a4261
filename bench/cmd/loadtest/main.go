// Command loadtest measures gavel serve on this machine: it starts `gavel
// serve` on 127.0.0.1 as a child process, drives it with bounded load
// (every phase stops at a request count or a duration, whichever comes
// first), stops it with SIGTERM by its process id, and prints a Markdown
// table. Run it through `make loadtest`.
//
// Phases: single-rollout POST /v1/grade and POST /verifier at the highest
// rate a closed loop of -conns clients reaches, then an open loop at half
// that rate for latency (a constant-rate schedule served by 64 clients); one JSON Lines request of the whole dataset
// against `gavel grade --format jsonl` of the same file; -overload clients
// at once for peak memory and the share of 429s; then, against a new
// server, the memory-bound phase: the hostile requests of internal/hostile
// at full size, with the server's peak resident memory.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gavelhq/gavel/bench"
	"github.com/gavelhq/gavel/internal/hostile"
)

func main() {
	bin := flag.String("bin", "bin/gavel", "the gavel binary")
	data := flag.String("data", "bench/data", "directory for the generated dataset (kept and reused)")
	rollouts := flag.Int("rollouts", 100000, "rollouts of the batch phase's dataset")
	dur := flag.Duration("duration", 8*time.Second, "longest duration of each load phase")
	maxReq := flag.Int("max-requests", 200000, "most requests of each load phase")
	conns := flag.Int("conns", 8, "clients of the closed-loop phases")
	overload := flag.Int("overload", 500, "clients of the overload phase")
	memory := flag.Bool("memory", true, "run the memory-bound phase")
	flag.Parse()
	if err := run(*bin, *data, *rollouts, *dur, *maxReq, *conns, *overload, *memory); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(bin, dataDir string, rollouts int, dur time.Duration, maxReq, conns, overload int, memory bool) error {
	ctx := context.Background()
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	file := filepath.Join(dataDir, fmt.Sprintf("serve-crm-%d.jsonl", rollouts))
	if _, err := os.Stat(file); err != nil {
		if _, err := bench.RunProcess(ctx, []string{bin, "gen", "--out", file, "--rollouts", strconv.Itoa(rollouts), "--seed", "1"}); err != nil {
			return fmt.Errorf("gen: %w", err)
		}
	}
	lines, err := firstLines(file, 2000)
	if err != nil {
		return err
	}
	gymBodies := make([][]byte, len(lines))
	for i, l := range lines {
		gymBodies[i] = gymBody(l)
	}
	fmt.Printf("load before: %.2f (1-minute average, %d CPUs shared)\n\n", bench.LoadAverage(), numCPU())

	// gavel grade of the same file, for the batch comparison.
	out, err := os.MkdirTemp("", "gavel-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	gp, err := bench.RunProcess(ctx, []string{bin, "grade", "--quiet", "--format", "jsonl", "--out", filepath.Join(out, "grade"), file}, 0, 3)
	if err != nil {
		return fmt.Errorf("grade: %w", err)
	}
	gradeRate := float64(rollouts) / gp.Wall.Seconds()

	spec := filepath.Join(dataDir, "trainers.yaml")
	if err := os.WriteFile(spec, []byte(trainerSpec), 0o644); err != nil {
		return err
	}
	srv, addr, err := startServe(bin, "--spec", spec)
	if err != nil {
		return err
	}
	defer srv.stop()
	url := "http://" + addr

	answers := trainerBodies(2000)
	var rows [][]string
	for _, route := range []struct {
		name, path string
		bodies     [][]byte
	}{
		{"POST /v1/grade, 1 rollout", "/v1/grade", lines}, {"POST /verifier, 1 state check", "/verifier", gymBodies},
		{"POST /v1/grade, 1 answer (trainer phase)", "/v1/grade", answers.grade},
		{"POST /get_reward, 1 answer (OpenRLHF)", "/get_reward", answers.openRLHF},
		{"POST /verify, 1 answer (NeMo Gym)", "/verify", answers.nemoGym},
	} {
		cpu0 := srv.cpu()
		self0 := selfCPU()
		max := closedLoop(url+route.path, route.bodies, conns, dur, maxReq)
		srvCPU := srv.cpu() - cpu0
		genCPU := selfCPU() - self0
		half := max.rate() / 2
		lat := openLoop(url+route.path, route.bodies, half, dur, maxReq)
		rows = append(rows, []string{route.name,
			fmt.Sprintf("%.0f req/s (%d clients, %d requests, %d not 200)", max.rate(), conns, max.n, max.bad),
			fmt.Sprintf("%.1f µs server + %.1f µs load generator", 1e6*srvCPU/float64(max.n), 1e6*genCPU/float64(max.n)),
			fmt.Sprintf("at %.0f req/s: p50 %s, p99 %s (%d requests, %d not 200)", lat.rate(), ms(lat.p(50)), ms(lat.p(99)), lat.n, lat.bad)})
	}

	// One JSON Lines request of the whole file.
	cpu0 := srv.cpu()
	start := time.Now()
	got, err := postFile(url+"/v1/grade", file)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	if got != rollouts {
		return fmt.Errorf("batch request: %d response lines, want %d", got, rollouts)
	}
	serveRate := float64(rollouts) / wall.Seconds()
	rows = append(rows, []string{fmt.Sprintf("one JSON Lines request, %d rollouts", rollouts),
		fmt.Sprintf("%.0f rollouts/s (gavel grade: %.0f rollouts/s, ratio %.2f)", serveRate, gradeRate, serveRate/gradeRate),
		fmt.Sprintf("%.1f µs server per rollout (grade: %.1f µs)", 1e6*(srv.cpu()-cpu0)/float64(rollouts), 1e6*(gp.User+gp.System).Seconds()/float64(rollouts)),
		fmt.Sprintf("wall %.2fs (grade %.2fs)", wall.Seconds(), gp.Wall.Seconds())})

	ov := closedLoop(url+"/v1/grade", lines, overload, dur, maxReq)
	rss, err := srv.peakRSS()
	if err != nil {
		return err
	}
	rows = append(rows, []string{fmt.Sprintf("overload: %d clients on /v1/grade", overload),
		fmt.Sprintf("%.0f req/s; %d requests: %d 200, %d 429, %d other", ov.rate(), ov.n, ov.codes[200], ov.codes[429], ov.n-ov.codes[200]-ov.codes[429]),
		fmt.Sprintf("peak RSS of gavel serve over the whole run: %.0f MB", float64(rss)/1e6), ""})

	if err := srv.stop(); err != nil {
		return err
	}
	fmt.Println("| phase | throughput | CPU per request | latency |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, r := range rows {
		fmt.Println("| " + strings.Join(r, " | ") + " |")
	}
	fmt.Printf("\nload after: %.2f\n", bench.LoadAverage())
	if !memory {
		return nil
	}
	return memoryPhase(bin)
}

// memoryPhase runs the hostile requests of internal/hostile, at full size,
// against a new gavel serve with default flags, and prints each one's
// answers and the server's peak resident memory against the documented
// bound (docs/serving.md).
func memoryPhase(bin string) error {
	srv, addr, err := startServe(bin)
	if err != nil {
		return err
	}
	defer srv.stop()
	s := hostile.Server{URL: "http://" + addr, PID: srv.cmd.Process.Pid}
	c := &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	fmt.Printf("\nmemory bound (gavel serve, default flags: --max-memory 512MiB), load before: %.2f\n\n", bench.LoadAverage())
	fmt.Println("| requests | answers | wall | peak RSS during | /healthz failed |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	var failed error
	for _, a := range hostile.Memory(hostile.Scale{}) {
		w := hostile.Watch(s)
		start := time.Now()
		var tally hostile.Tally
		err := a.Run(ctx, s, c, &tally)
		peak, probes, bad, _ := w.Stop()
		fmt.Printf("| %s | %s | %.1fs | %.0f MiB | %d of %d |\n", a.What, &tally, time.Since(start).Seconds(), float64(peak)/(1<<20), bad, probes)
		if err != nil && failed == nil {
			failed = fmt.Errorf("%s: %w", a.Name, err)
		}
	}
	_, hwm, err := s.RSS()
	if err != nil {
		return err
	}
	fmt.Printf("\npeak RSS of gavel serve over the memory phase: %.0f MiB (bound 512 MiB); load after: %.2f\n", float64(hwm)/(1<<20), bench.LoadAverage())
	if failed != nil {
		return failed
	}
	if hwm > 512<<20 {
		return fmt.Errorf("gavel serve reached %.0f MiB resident, over the documented 512 MiB", float64(hwm)/(1<<20))
	}
	return nil
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return bytes.Count(b, []byte("\nprocessor")) + 1
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// firstLines returns the first n lines of a JSON Lines file.
func firstLines(path string, n int) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	var out [][]byte
	for len(out) < n && sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out, sc.Err()
}

// gymBody turns a CRM rollout line into a /verifier request: the line's
// members (final_state, initial_state, log, output, metadata) beside
// sessionId and one state check.
func gymBody(line []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"sessionId": "load", "checks": [{"id": "acme-created", "type": "state", "table": "opportunities", "asserts": [{"comparator": "eq", "function": "object_contains", "function_args": ["_result[*]", {"name": "ACME Expansion", "status": "open"}], "value": true}]}],`)
	b.Write(line[1:])
	return b.Bytes()
}

// server is the gavel serve child process.
type server struct {
	cmd     *exec.Cmd
	stopped bool
	err     error
}

func startServe(bin string, args ...string) (*server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr}, args...)...)
	cmd.Env = append(os.Environ(), "GOMEMLIMIT=") // the server's own soft limit
	cmd.Stdout = io.Discard
	cmd.Stderr = io.Discard // one access log line per request
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	s := &server{cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, addr, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, "", fmt.Errorf("gavel serve not ready after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM to the server's process id and waits for its exit.
func (s *server) stop() error {
	if s.stopped {
		return s.err
	}
	s.stopped = true
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case s.err = <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		s.err = fmt.Errorf("gavel serve did not stop within 30s of SIGTERM")
		<-done
	}
	return s.err
}

// cpu returns the server's CPU seconds so far (user + system).
func (s *server) cpu() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // clock ticks; 100 per second on Linux
}

// peakRSS returns the server's peak resident memory (VmHWM).
func (s *server) peakRSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM")
}

func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// result is one phase's outcome.
type result struct {
	n, bad int
	wall   time.Duration
	lat    []time.Duration
	codes  map[int]int
}

func (r *result) rate() float64 { return float64(r.n) / r.wall.Seconds() }

func (r *result) p(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	slices.Sort(r.lat)
	return r.lat[min(len(r.lat)-1, int(float64(len(r.lat))*q/100))]
}

func client(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}}
}

func post(c *http.Client, url string, body []byte) (int, error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// closedLoop runs conns clients, each sending its next request when the
// last one is answered, until dur or maxReq.
func closedLoop(url string, bodies [][]byte, conns int, dur time.Duration, maxReq int) *result {
	c := client(conns)
	defer c.CloseIdleConnections()
	var next atomic.Int64
	var mu sync.Mutex
	res := &result{codes: map[int]int{}}
	stop := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes := map[int]int{}
			for time.Now().Before(stop) {
				i := next.Add(1)
				if i > int64(maxReq) {
					break
				}
				code, err := post(c, url, bodies[int(i)%len(bodies)])
				if err != nil {
					code = -1
				}
				codes[code]++
			}
			mu.Lock()
			for k, v := range codes {
				res.codes[k] += v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.wall = time.Since(start)
	for k, v := range res.codes {
		res.n += v
		if k != 200 {
			res.bad += v
		}
	}
	return res
}

// openLoopWorkers is the number of clients (each with its own keep-alive
// connection) of an open loop: enough that at half the sustained rate a
// client is nearly always free, so a request waits for the server, not
// for the generator.
const openLoopWorkers = 64

// openLoop sends requests on a fixed schedule (request i is due at
// start + i/rate), whatever the answers: a dispatcher releases each
// request when it is due to a pool of openLoopWorkers clients. Latency is
// measured from the request's due time, so a request that waited for a
// free client (or a server that fell behind) counts its wait.
func openLoop(url string, bodies [][]byte, rate float64, dur time.Duration, maxReq int) *result {
	n := min(maxReq, int(rate*dur.Seconds()))
	c := client(openLoopWorkers)
	defer c.CloseIdleConnections()
	res := &result{codes: map[int]int{}, lat: make([]time.Duration, n)}
	codes := make([]int, n)
	interval := float64(time.Second) / rate
	due := func(i int) time.Duration { return time.Duration(float64(i) * interval) }
	slots := make(chan int, n)
	start := time.Now()
	var wg sync.WaitGroup
	for range openLoopWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range slots {
				code, err := post(c, url, bodies[i%len(bodies)])
				if err != nil {
					code = -1
				}
				codes[i] = code
				res.lat[i] = time.Since(start) - due(i)
			}
		}()
	}
	// The dispatcher wakes every 200 µs or so and releases every request
	// due by then: no sleep per request, whose overshoot on a loaded
	// machine would skew the schedule.
	for i := 0; i < n; {
		now := time.Since(start)
		for ; i < n && due(i) <= now; i++ {
			slots <- i
		}
		if i < n {
			time.Sleep(min(due(i)-now, 200*time.Microsecond))
		}
	}
	close(slots)
	wg.Wait()
	res.wall = time.Since(start)
	res.n = n
	for _, code := range codes {
		res.codes[code]++
		if code != 200 {
			res.bad++
		}
	}
	return res
}

// postFile sends a JSON Lines file as one request and counts the
// response's lines.
func postFile(url, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	req, err := http.NewRequest("POST", url, f)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	c := &http.Client{Timeout: 10 * time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("batch request: %s %s", resp.Status, b)
	}
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	n := 0
	for {
		_, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// trainerSpec is the verifier of the trainer phase: an answer checked
// against the ground truth the trainer sends, as docs/trainers.md maps it.
const trainerSpec = `verifiers:
  - id: VER-ANSWER
    task: TASK-ANSWER
    name: the answer holds the label
    checks:
      - id: answer
        type: expr
        expr: "output.contains(string(meta.label))"
      - id: short
        type: expr
        optional: true
        expr: "size(output) < 200"
`

// answerBodies are the same answers as the bodies of three routes.
type answerBodies struct {
	grade, openRLHF, nemoGym [][]byte
}

// trainerBodies returns n answers to arithmetic questions, half of them
// right, as /v1/grade rollouts, OpenRLHF /get_reward requests of one
// query and NeMo Gym /verify requests.
func trainerBodies(n int) answerBodies {
	var b answerBodies
	for i := range n {
		x, y := i%97, i%89
		answer := x * y
		if i%2 == 1 {
			answer++
		}
		prompt := fmt.Sprintf("<|user|>What is %d times %d? Show your work.<|assistant|>", x, y)
		output := fmt.Sprintf("%d times %d: %d tens and %d ones, so the product is %d.", x, y, x*y/10, x*y%10, answer)
		label := strconv.Itoa(x * y)
		b.grade = append(b.grade, fmt.Appendf(nil, `{"rollout_id":"a%d","task_id":"TASK-ANSWER","output":%q,"prompt":%q,"label":%q}`, i, output, prompt, label))
		b.openRLHF = append(b.openRLHF, fmt.Appendf(nil, `{"query":[%q],"prompts":[%q],"labels":[%q],"task":"TASK-ANSWER"}`, prompt+output, prompt, label))
		b.nemoGym = append(b.nemoGym, fmt.Appendf(nil, `{"responses_create_params":{"input":[{"role":"user","content":%q}]},`+
			`"response":{"id":"resp_%d","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":%q}]}]},`+
			`"task":"TASK-ANSWER","label":%q}`, prompt, i, output, label))
	}
	return b
}
