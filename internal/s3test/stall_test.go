package s3test_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/s3test"
)

// TestStalledUpload: a client that stops in the middle of an upload (as a
// suspended Slurm task does) stalls only its own request. With the
// directory backend s3fake uses, listings, reads and other uploads go on
// being served, and the stalled upload completes once its client sends
// the rest.
func TestStalledUpload(t *testing.T) {
	srv, err := s3test.Start(s3test.Options{Dir: t.TempDir(), Buckets: []string{"bucket"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	do := func(method, path string, body []byte) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s while an upload is stalled: %v", method, path, err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(got)
	}
	if code, _ := do(http.MethodPut, "/bucket/first", []byte("one")); code != http.StatusOK {
		t.Fatalf("PUT first: %d", code)
	}

	// The stalled upload: half of its body, then nothing.
	const size = 1 << 20
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, srv.URL+"/bucket/stalled", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	stalled := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			stalled <- -1
			return
		}
		resp.Body.Close()
		stalled <- resp.StatusCode
	}()
	if _, err := pw.Write(bytes.Repeat([]byte{'x'}, size/2)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the server is reading the body

	if code, body := do(http.MethodGet, "/bucket?list-type=2", nil); code != http.StatusOK || !strings.Contains(body, "<Key>first</Key>") {
		t.Errorf("listing: %d %s", code, body)
	}
	if code, body := do(http.MethodGet, "/bucket/first", nil); code != http.StatusOK || body != "one" {
		t.Errorf("GET first: %d %q", code, body)
	}
	if code, _ := do(http.MethodPut, "/bucket/second", []byte("two")); code != http.StatusOK {
		t.Errorf("PUT second: %d", code)
	}

	if _, err := pw.Write(bytes.Repeat([]byte{'y'}, size/2)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if code := <-stalled; code != http.StatusOK {
		t.Fatalf("stalled upload, completed: status %d", code)
	}
	if code, body := do(http.MethodGet, "/bucket/stalled", nil); code != http.StatusOK || len(body) != size || body[size-1] != 'y' {
		t.Errorf("GET stalled: %d, %d bytes", code, len(body))
	}
}
