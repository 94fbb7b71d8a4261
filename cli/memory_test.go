package cli

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/hostile"
)

// memoryBound is the documented figure: with default flags, no sequence of
// requests takes gavel serve over it (docs/serving.md).
const memoryBound = 512 << 20

// startServeProcess starts `gavel serve` on a free 127.0.0.1 port with
// the given flags and waits for its "listening" log line. The test stops
// it by its process id.
func startServeProcess(t *testing.T, flags ...string) hostile.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(gavelBinary(t), append([]string{"serve", "--addr", addr}, flags...)...)
	cmd.Env = append(os.Environ(), "GOMEMLIMIT=") // the server's own default
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), `"msg":"listening"`) {
				said = true
				close(listening)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Errorf("gavel serve did not stop within 60s of SIGTERM")
			<-exited
		}
	})
	select {
	case <-listening:
	case err := <-exited:
		t.Fatalf("gavel serve exited before listening: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("gavel serve did not log listening within 2 minutes")
	}
	return hostile.Server{URL: "http://" + addr, PID: cmd.Process.Pid}
}

// With default flags, no sequence of the hostile requests takes gavel
// serve over the documented resident memory, and /healthz answers
// throughout.
func TestServeMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("sends about 2 GB of requests")
	}
	s := startServeProcess(t)
	c := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, a := range hostile.Memory(hostile.Scale{Lines: 6, Sessions: 12000, CheckSets: 120}) {
		w := hostile.Watch(s)
		start := time.Now()
		var tally hostile.Tally
		err := a.Run(ctx, s, c, &tally)
		peak, probes, failed, first := w.Stop()
		_, hwm, rerr := s.RSS()
		if rerr != nil {
			t.Fatal(rerr)
		}
		t.Logf("%s (%s): %.1fs, answers %s, resident peak %d MiB (process peak so far %d MiB), /healthz %d of %d failed",
			a.Name, a.What, time.Since(start).Seconds(), &tally, peak>>20, hwm>>20, failed, probes)
		if err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
		if hwm > memoryBound {
			t.Errorf("%s: gavel serve reached %d MiB resident, over the documented %d MiB", a.Name, hwm>>20, memoryBound>>20)
		}
		if failed > 0 {
			t.Errorf("%s: /healthz failed %d of %d probes (first: %s)", a.Name, failed, probes, first)
		}
	}
}
