package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/store"
)

// fault is what the scripted server does with one range request.
type fault int

const (
	serve     fault = iota
	status503       // 503 Service Unavailable, no body
	reset           // a part of the body, then the connection reset (RST)
	short           // a part of the body, then the connection closed short of its Content-Length
	status403       // 403 Forbidden, as an expired presigned URL
	status429       // 429 Too Many Requests
)

// rangeServer serves data over TLS on 127.0.0.1 with range requests,
// doing with the request after the first (the stat of OpenFile) what
// script says, in order, then serve (or always fail with 503 when
// failing is set). It records each request's Range and how many body
// bytes it sent.
type rangeServer struct {
	*httptest.Server
	data    []byte
	failing bool

	mu     sync.Mutex
	script []fault
	reqs   []served
}

// maxRequests bounds the requests a rangeServer answers.
const maxRequests = 1000

type served struct {
	rng  string
	f    fault
	sent int
}

func startRangeServer(t *testing.T, data []byte, script ...fault) *rangeServer {
	t.Helper()
	s := &rangeServer{data: data, script: script}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	oldClient, oldDelay, oldBlock := store.HTTPClient, store.RetryDelay, store.BlockSize
	store.HTTPClient = s.Client()
	store.HTTPClient.Timeout = time.Minute // a lost request fails the test, not hangs it
	store.RetryDelay = time.Millisecond
	t.Cleanup(func() { store.HTTPClient, store.RetryDelay, store.BlockSize = oldClient, oldDelay, oldBlock })
	return s
}

func (s *rangeServer) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f := serve
	if len(s.reqs) > 0 {
		if len(s.script) > 0 {
			f, s.script = s.script[0], s.script[1:]
		} else if s.failing {
			f = status503
		}
	}
	i := len(s.reqs)
	if i >= maxRequests {
		s.mu.Unlock()
		http.Error(w, "too many requests for a test", http.StatusBadRequest)
		return
	}
	s.reqs = append(s.reqs, served{rng: r.Header.Get("Range"), f: f})
	s.mu.Unlock()

	switch f {
	case status503:
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case status403:
		w.WriteHeader(http.StatusForbidden)
		return
	case status429:
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	first, last, ok := parseRange(r.Header.Get("Range"), len(s.data))
	if !ok {
		http.Error(w, "want a range", http.StatusBadRequest)
		return
	}
	body := s.data[first : last+1]
	w.Header().Set("ETag", `"v1"`)
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(s.data)))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusPartialContent)
	if f == serve {
		w.Write(body)
		s.sent(i, len(body))
		return
	}
	half := body[:len(body)/2]
	w.Write(half)
	w.(http.Flusher).Flush()
	s.sent(i, len(half))
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if f == reset {
		if tc, ok := conn.(*tls.Conn); ok {
			if nc, ok := tc.NetConn().(*net.TCPConn); ok {
				nc.SetLinger(0) // RST, not FIN
			}
		}
	}
	conn.Close()
}

func (s *rangeServer) sent(i, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs[i].sent = n
}

func (s *rangeServer) served() []served {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]served(nil), s.reqs...)
}

// parseRange parses "bytes=A-B" or "bytes=A-" for an object of size n.
func parseRange(h string, n int) (first, last int, ok bool) {
	a, b, ok := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	if !ok || !strings.HasPrefix(h, "bytes=") {
		return 0, 0, false
	}
	first, err := strconv.Atoi(a)
	if err != nil || first >= n {
		return 0, 0, false
	}
	last = n - 1
	if b != "" {
		if last, err = strconv.Atoi(b); err != nil {
			return 0, 0, false
		}
		last = min(last, n-1)
	}
	return first, last, first <= last
}

func randomData(t *testing.T, n int) []byte {
	t.Helper()
	data := make([]byte, n)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	return data
}

// checkResumed checks that the requests after the stat asked for the
// object from start on, ending at end ("" for the open end), and that
// each one after a broken body resumed where the client stopped: where
// the body was cut short, exactly after the bytes sent; after a reset, no
// earlier than where the request broke and no later than the bytes sent
// (a reset may drop bytes in flight).
func checkResumed(t *testing.T, reqs []served, start int, end string) {
	t.Helper()
	at := start
	for i, r := range reqs[1:] {
		first, last, ok := strings.Cut(strings.TrimPrefix(r.rng, "bytes="), "-")
		f, err := strconv.Atoi(first)
		if !ok || err != nil || last != end {
			t.Fatalf("request %d asked for %q, want bytes=N-%s", i+1, r.rng, end)
		}
		switch {
		case i == 0 && f != start:
			t.Errorf("request 1 asked for %q, want bytes=%d-%s", r.rng, start, end)
		case i > 0:
			prev := reqs[i]
			lo, hi := at, at
			switch prev.f {
			case short:
				lo, hi = at+prev.sent, at+prev.sent
			case reset:
				hi = at + prev.sent
			}
			if f < lo || f > hi {
				t.Errorf("request %d after a %v asked for %q, want a start in [%d, %d]", i+1, prev.f, r.rng, lo, hi)
			}
		}
		at = f
	}
}

func (f fault) String() string {
	return [...]string{"served body", "503", "reset", "short body", "403", "429"}[f]
}

// TestHTTPReadAtRetries reads an https:// object with ReadAt through a
// 503, a reset in mid-body, a body cut short and another 503: each
// failure costs one request more, each broken body is resumed from where
// it broke, and the bytes are the object's.
func TestHTTPReadAtRetries(t *testing.T) {
	data := randomData(t, 300<<10)
	script := []fault{status503, reset, short, status429}
	srv := startRangeServer(t, data, script...)
	store.BlockSize = 1 << 20 // one block: the requests come one at a time, in order
	f, err := store.OpenFile(context.Background(), srv.URL+"/a.parquet?X-Amz-Signature=secret")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, len(data))
	if n, err := f.ReadAt(got, 0); n != len(data) || (err != nil && !errors.Is(err, io.EOF)) {
		t.Fatalf("ReadAt = %d, %v, want %d bytes", n, err, len(data))
	}
	if !bytes.Equal(got, data) {
		t.Fatal("ReadAt read other bytes than the object's")
	}
	reqs := srv.served()
	if want := 1 + 1 + len(script); len(reqs) != want {
		t.Fatalf("%d requests, want %d (the stat, the read and one per fault): %+v", len(reqs), want, reqs)
	}
	checkResumed(t, reqs, 0, strconv.Itoa(len(data)-1))
}

// TestHTTPReadRetries is TestHTTPReadAtRetries for the stream of Read,
// whose requests are open-ended.
func TestHTTPReadRetries(t *testing.T) {
	data := randomData(t, 300<<10)
	script := []fault{status503, reset, short, status503, short}
	srv := startRangeServer(t, data, script...)
	f, err := store.OpenFile(context.Background(), srv.URL+"/a.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("Read read %d bytes, other than the object's %d", len(got), len(data))
	}
	reqs := srv.served()
	if want := 1 + 1 + len(script); len(reqs) != want {
		t.Fatalf("%d requests, want %d (the stat, the read and one per fault): %+v", len(reqs), want, reqs)
	}
	checkResumed(t, reqs, 0, "")
}

// TestHTTPKeepsFailing: a server that answers every read with 503 is
// asked Retries times again, and the error names the object, without
// the URL's query, and the byte range.
func TestHTTPKeepsFailing(t *testing.T) {
	data := randomData(t, 10<<10)
	srv := startRangeServer(t, data)
	srv.failing = true
	raw := srv.URL + "/data/a.parquet?X-Amz-Signature=secret"
	f, err := store.OpenFile(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.ReadAt(make([]byte, 100), 1000)
	if err == nil {
		t.Fatal("ReadAt from a failing server succeeded")
	}
	want := fmt.Sprintf("read %s/data/a.parquet bytes 0-%d: HTTP 503 Service Unavailable", srv.URL, len(data)-1)
	if err.Error() != want {
		t.Errorf("ReadAt error %q, want %q", err, want)
	}
	if n := len(srv.served()); n != 1+1+store.Retries {
		t.Errorf("%d requests, want %d (the stat, the read and %d retries)", n, 2+store.Retries, store.Retries)
	}

	// The stat of the object fails the same way.
	before := len(srv.served())
	_, err = store.OpenFile(context.Background(), raw)
	wantStat := fmt.Sprintf("stat %s/data/a.parquet: HTTP 503 Service Unavailable", srv.URL)
	if err == nil || err.Error() != wantStat {
		t.Errorf("OpenFile error %v, want %q", err, wantStat)
	}
	if n := len(srv.served()) - before; n != 1+store.Retries {
		t.Errorf("stat: %d requests, want %d", n, 1+store.Retries)
	}
}

// TestHTTPRefusedNotRetried: a 403 (an expired presigned URL) is not
// retried: one request, and an error naming the object and the status.
func TestHTTPRefusedNotRetried(t *testing.T) {
	data := randomData(t, 10<<10)
	srv := startRangeServer(t, data, status403)
	f, err := store.OpenFile(context.Background(), srv.URL+"/a.parquet?X-Amz-Signature=expired")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.ReadAt(make([]byte, 10), 0)
	want := fmt.Sprintf("read %s/a.parquet bytes 0-%d: HTTP 403 Forbidden", srv.URL, len(data)-1)
	if err == nil || err.Error() != want {
		t.Errorf("ReadAt error %v, want %q", err, want)
	}
	if n := len(srv.served()); n != 2 {
		t.Errorf("%d requests, want 2 (the stat and the refused read)", n)
	}
}
