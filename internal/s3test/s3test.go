// Package s3test runs an S3-protocol server (gofakes3) on 127.0.0.1 for
// tests and benchmarks, with faults injected on request: 500s, 503
// SlowDown throttling, a connection reset in the middle of a body, and
// slow answers. It counts the requests it serves by method.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/spf13/afero"
)

// Server is an S3 server on 127.0.0.1. Its zero value is not usable: make
// one with Start.
type Server struct {
	// URL is the server's endpoint, http://127.0.0.1:PORT.
	URL string

	srv     *http.Server
	ln      net.Listener
	backend gofakes3.Backend

	// Faults injected into the next requests; set them with Inject.
	mu     sync.Mutex
	faults []Fault

	gets, puts, lists atomic.Int64
}

// Fault is one fault injected into a request matching Method (any when
// "") whose path contains Path (any when "").
type Fault struct {
	Method, Path string
	// Status answers the request with this status (500, or 503 as
	// SlowDown) without serving it.
	Status int
	// Reset serves the request but closes the connection after half of
	// the body (at most 64 KiB) is sent.
	Reset bool
	// Delay waits this long before serving the request.
	Delay time.Duration
}

// Options tunes Start. The zero value serves from memory.
type Options struct {
	// Addr is the address to listen on ("127.0.0.1:0" when empty).
	Addr string
	// Dir, when set, keeps the buckets in this directory (one
	// subdirectory per bucket), so that their objects outlive the server.
	Dir string
	// Buckets are created at the start.
	Buckets []string
}

// Start starts a server.
func Start(opts Options) (*Server, error) {
	var backend gofakes3.Backend
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, err
		}
		b, err := s3afero.MultiBucket(afero.NewBasePathFs(afero.NewOsFs(), opts.Dir))
		if err != nil {
			return nil, fmt.Errorf("s3 backend in %s: %w", opts.Dir, err)
		}
		backend = b
	} else {
		backend = s3mem.New()
	}
	for _, b := range opts.Buckets {
		if ok, _ := backend.BucketExists(b); ok {
			continue
		}
		if err := backend.CreateBucket(b); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	faker := gofakes3.New(backend, gofakes3.WithTimeSkewLimit(0), gofakes3.WithIntegrityCheck(false))
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln, backend: backend}
	s.srv = &http.Server{Handler: s.wrap(faker.Server())}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Put stores the local file as the object key of bucket.
func (s *Server) Put(bucket, key, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if _, err := s.backend.PutObject(bucket, key, map[string]string{}, f, st.Size(), nil); err != nil {
		return fmt.Errorf("put %s/%s: %w", bucket, key, err)
	}
	return nil
}

// Inject queues faults: each applies once, to the next request it
// matches.
func (s *Server) Inject(f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f...)
}

// Clear drops the injected faults that have not applied.
func (s *Server) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Pending returns how many injected faults have not applied yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.faults)
}

// Counts returns the GET requests of objects (not listings), the PUT and
// POST requests, and the listings served (faulted ones included).
func (s *Server) Counts() (gets, puts, lists int64) {
	return s.gets.Load(), s.puts.Load(), s.lists.Load()
}

// ResetCounts sets the counts to zero.
func (s *Server) ResetCounts() {
	s.gets.Store(0)
	s.puts.Store(0)
	s.lists.Store(0)
}

func (s *Server) take(r *http.Request) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if (f.Method == "" || f.Method == r.Method) && strings.Contains(r.URL.Path, f.Path) {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			return f, true
		}
	}
	return Fault{}, false
}

func (s *Server) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done, err := readBody(r)
		if err != nil {
			http.Error(w, "s3test: reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer done()
		switch {
		case r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 0:
			s.lists.Add(1)
		case r.Method == http.MethodGet:
			s.gets.Add(1)
		case r.Method == http.MethodPut || r.Method == http.MethodPost:
			s.puts.Add(1)
		}
		f, ok := s.take(r)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		if f.Delay > 0 {
			time.Sleep(f.Delay)
		}
		switch {
		case f.Status == http.StatusServiceUnavailable:
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(f.Status)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		case f.Status != 0:
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(f.Status)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`)
		case f.Reset:
			h.ServeHTTP(&resetWriter{ResponseWriter: w}, r)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// bodyInMemory is the largest request body readBody keeps in memory; a
// larger one goes to a temporary file.
const bodyInMemory = 32 << 20

// readBody reads r's body whole before gofakes3 sees it, and returns what
// releases it once the request is served. gofakes3's directory backend
// copies an upload into its object while holding the one lock every
// request takes: a client stopped in the middle of an upload (a Slurm task
// suspended by make test-slurm) would stall every other request until the
// server exits. Read first, the wait is that request's alone.
func readBody(r *http.Request) (func(), error) {
	if r.Body == nil || r.Body == http.NoBody {
		return func() {}, nil
	}
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, r.Body, bodyInMemory+1)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if n <= bodyInMemory {
		r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
		return func() {}, nil
	}
	f, err := os.CreateTemp("", "s3test-body-*")
	if err != nil {
		return nil, err
	}
	done := func() {
		f.Close()
		os.Remove(f.Name())
	}
	if _, err := io.Copy(f, io.MultiReader(&buf, r.Body)); err != nil {
		done()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		done()
		return nil, err
	}
	r.Body = f
	return done, nil
}

// resetWriter passes on the status and headers and half of the body (at
// most 64 KiB), then hijacks the connection and resets it.
type resetWriter struct {
	http.ResponseWriter
	limit   int
	sent    int
	dead    bool
	started bool
}

func (w *resetWriter) WriteHeader(code int) {
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *resetWriter) Write(p []byte) (int, error) {
	if w.dead {
		return 0, http.ErrHijacked
	}
	if w.limit == 0 {
		w.limit = 1
		if n := w.Header().Get("Content-Length"); n != "" {
			var total int
			fmt.Sscan(n, &total)
			w.limit = max(1, min(total/2, 64<<10))
		}
	}
	room := w.limit - w.sent
	if room > len(p) {
		w.sent += len(p)
		return w.ResponseWriter.Write(p)
	}
	w.ResponseWriter.Write(p[:room])
	w.sent += room
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
	w.dead = true
	if hj, ok := w.ResponseWriter.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetLinger(0) // RST, not FIN
			}
			conn.Close()
		}
	}
	return room, http.ErrHijacked
}

// StartTest starts a server with the bucket for the test t, stopped when
// the test ends, and points the AWS SDK of this process (and of the
// processes it starts) at it through the standard variables, with dummy
// keys and no shared configuration or instance metadata.
func StartTest(t testing.TB, bucket string) *Server {
	t.Helper()
	srv, err := Start(Options{Buckets: []string{bucket}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test-key-id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret-key")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return srv
}
