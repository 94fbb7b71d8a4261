package s3test_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "gocloud.dev/blob/s3blob"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/s3test"
	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// start starts a server with the bucket "b" and points the AWS SDK at it
// through the standard variables, with fake credentials.
func start(t *testing.T) *s3test.Server {
	t.Helper()
	srv := s3test.StartTest(t, "b")
	d := store.RetryDelay
	store.RetryDelay = 5 * time.Millisecond
	t.Cleanup(func() { store.RetryDelay = d })
	return srv
}

// fewRetries lowers gavel's retries of a failed request to one, for a
// test of requests that fail every time: under each of gavel's tries the
// AWS SDK retries too, with a backoff of up to seconds that no setting
// shortens, and a request that keeps failing spent most of its test's
// time asleep. TestReadFaults keeps the default: transient faults are
// mended by the retries.
func fewRetries(t *testing.T) {
	n := store.Retries
	store.Retries = 1
	t.Cleanup(func() { store.Retries = n })
}

func put(t *testing.T, srv *s3test.Server, key, file string) {
	t.Helper()
	if err := srv.Put("b", key, file); err != nil {
		t.Fatal(err)
	}
}

// genParquet writes a generated rollouts file of n rows in row groups of
// groupRows.
func genParquet(t *testing.T, dir string, n, groupRows int) string {
	t.Helper()
	path := filepath.Join(dir, "rollouts.parquet")
	if _, err := gen.Run(context.Background(), gen.Config{Out: path, Rollouts: n, Seed: 3, BadShare: 0.05, RowGroupRows: groupRows}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRangeReads(t *testing.T) {
	srv := start(t)
	data := make([]byte, 3<<20+12345)
	rand.Read(data)
	file := filepath.Join(t.TempDir(), "blob")
	os.WriteFile(file, data, 0o644)
	put(t, srv, "x/blob", file)
	old := store.BlockSize
	store.BlockSize = 1 << 20
	t.Cleanup(func() { store.BlockSize = old })

	srv.ResetCounts()
	f, err := store.OpenFile(context.Background(), "s3://b/x/blob")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size() != int64(len(data)) || f.ETag() == "" {
		t.Fatalf("size %d etag %q, want %d and an etag", f.Size(), f.ETag(), len(data))
	}
	for _, r := range [][2]int64{{0, 10}, {int64(len(data)) - 8, 8}, {1<<20 - 3, 7}, {5, 3 << 20}, {2 << 20, 100}} {
		got := make([]byte, r[1])
		if _, err := f.ReadAt(got, r[0]); err != nil {
			t.Fatalf("ReadAt(%d, %d): %v", r[0], r[1], err)
		}
		if !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
			t.Fatalf("ReadAt(%d, %d) differs", r[0], r[1])
		}
	}
	// Four blocks of 1 MiB, each fetched once whatever the reads.
	if gets, _, _ := srv.Counts(); gets != 4 {
		t.Errorf("%d GETs, want 4 (one per block)", gets)
	}
	all, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("Read: %v, equal %v", err, bytes.Equal(all, data))
	}
}

func TestListOverAPage(t *testing.T) {
	srv := start(t)
	file := filepath.Join(t.TempDir(), "o")
	os.WriteFile(file, []byte("x"), 0o644)
	var want []string
	for i := range 1005 {
		k := fmt.Sprintf("many/%04d.jsonl", (i*7)%1005)
		put(t, srv, k, file)
		want = append(want, k)
	}
	put(t, srv, "manyother.jsonl", file)
	sort.Strings(want)
	srv.ResetCounts()
	loc, err := store.Open(context.Background(), "s3://b/many")
	if err != nil {
		t.Fatal(err)
	}
	defer loc.Close()
	objs, err := loc.Expand(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Key)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Expand listed %d keys (first %v), want %d in order", len(got), got[:min(3, len(got))], len(want))
	}
	if _, _, lists := srv.Counts(); lists < 2 {
		t.Errorf("%d list requests, want at least 2 pages", lists)
	}
}

func TestMultipartUpload(t *testing.T) {
	srv := start(t)
	data := make([]byte, 20<<20) // above the transfer manager's 16 MiB threshold
	rand.Read(data)
	old := store.UploadPartSize
	store.UploadPartSize = 5 << 20
	t.Cleanup(func() { store.UploadPartSize = old })
	loc, err := store.Open(context.Background(), "s3://b/up/")
	if err != nil {
		t.Fatal(err)
	}
	defer loc.Close()
	srv.ResetCounts()
	if err := loc.Upload(context.Background(), "up/big", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	// CreateMultipartUpload, four UploadParts, CompleteMultipartUpload.
	if _, puts, _ := srv.Counts(); puts < 5 {
		t.Errorf("%d PUT/POST requests, want a multipart upload (5)", puts)
	}
	got, err := loc.ReadAll(context.Background(), "up/big")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v, equal %v", err, bytes.Equal(got, data))
	}
}

// gradeLocal grades inputs into a local directory, as the reference.
func gradeLocal(t *testing.T, inputs []string, cfg pipeline.Config) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "local")
	cfg.Inputs, cfg.Out = inputs, out
	if cfg.Verifiers == nil {
		cfg.Verifiers = crm.Verifiers()
	}
	if _, err := pipeline.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return out
}

// fetch downloads results from a URL.
func fetch(t *testing.T, url string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fetched")
	if err := results.FetchResults(context.Background(), url, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sameParts compares the rewards and checks parts of two result
// directories (JSON Lines) byte for byte, once the local paths of the
// reference run's source_file column are replaced by their URLs (pairs of
// old, new).
func sameParts(t *testing.T, want, got string, paths ...string) {
	t.Helper()
	repl := strings.NewReplacer(paths...)
	for _, sub := range []string{"rewards", "checks"} {
		w, _ := os.ReadDir(filepath.Join(want, sub))
		g, _ := os.ReadDir(filepath.Join(got, sub))
		if len(w) != len(g) || len(w) == 0 {
			t.Fatalf("%s: %d parts, want %d", sub, len(g), len(w))
		}
		for i := range w {
			a, _ := os.ReadFile(filepath.Join(want, sub, w[i].Name()))
			b, _ := os.ReadFile(filepath.Join(got, sub, g[i].Name()))
			a = []byte(repl.Replace(string(a)))
			if w[i].Name() != g[i].Name() || !bytes.Equal(a, b) {
				t.Errorf("%s/%s differs from the local run's", sub, g[i].Name())
			}
		}
	}
	for _, f := range []string{"summary.json", "manifest.json", "_SUCCESS"} {
		if _, err := os.Stat(filepath.Join(got, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestGradeFromAndToS3(t *testing.T) {
	srv := start(t)
	dir := t.TempDir()
	pq := genParquet(t, dir, 3000, 250)
	jl := filepath.Join("..", "..", "testdata", "badrows", "input.jsonl")
	put(t, srv, "in/a.parquet", pq)
	put(t, srv, "in/b.jsonl", jl)
	put(t, srv, "in/notes.txt", jl)
	cfg := pipeline.Config{RowGroupsPerUnit: 4, Workers: 2, Format: columnar.FormatJSONL}
	want := gradeLocal(t, []string{pq, jl}, cfg)

	cfg.Inputs, cfg.Out, cfg.Verifiers = []string{"s3://b/in/"}, "s3://b/out/run1", crm.Verifiers()
	srv.ResetCounts()
	res, err := pipeline.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete {
		t.Fatal("run not complete")
	}
	gets, _, _ := srv.Counts()
	units := 4 // 12 row groups in units of 4, and one JSON Lines file
	t.Logf("%d GETs for %d units", gets, units)
	if gets > int64(units*4) {
		t.Errorf("%d GETs for %d units: more than 4 a unit", gets, units)
	}
	got := fetch(t, "s3://b/out/run1")
	sameParts(t, want, got, pq, "s3://b/in/a.parquet", jl, "s3://b/in/b.jsonl")
	m, _ := os.ReadFile(filepath.Join(got, "manifest.json"))
	if !strings.Contains(string(m), `"path": "s3://b/in/a.parquet"`) || !strings.Contains(string(m), `"etag"`) {
		t.Errorf("manifest lacks the object URL or its ETag:\n%s", m)
	}
	s, _ := os.ReadFile(filepath.Join(got, "summary.json"))
	if !strings.Contains(string(s), "s3://b/in/notes.txt") {
		t.Errorf("summary does not list the skipped object:\n%s", s)
	}
}

// TestReadFaults injects a 500, a SlowDown, a reset in mid-body and a slow
// answer into the reads: the run retries through them and writes the
// results of a run without faults.
func TestReadFaults(t *testing.T) {
	srv := start(t)
	dir := t.TempDir()
	pq := genParquet(t, dir, 2000, 250)
	put(t, srv, "in/a.parquet", pq)
	want := gradeLocal(t, []string{pq}, pipeline.Config{Workers: 2, Format: columnar.FormatJSONL})
	srv.Inject(
		s3test.Fault{Method: http.MethodGet, Path: "/b/in/", Status: 500},
		s3test.Fault{Method: http.MethodGet, Path: "/b/in/", Status: 503},
		s3test.Fault{Method: http.MethodGet, Path: "/b/in/", Reset: true},
		s3test.Fault{Method: http.MethodGet, Path: "/b/in/", Delay: 300 * time.Millisecond},
		s3test.Fault{Method: http.MethodGet, Path: "/b/in/", Reset: true},
	)
	cfg := pipeline.Config{Inputs: []string{"s3://b/in/a.parquet"}, Out: "s3://b/out/", Workers: 2, Format: columnar.FormatJSONL, Verifiers: crm.Verifiers()}
	if _, err := pipeline.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if n := srv.Pending(); n != 0 {
		t.Fatalf("%d faults not met", n)
	}
	sameParts(t, want, fetch(t, "s3://b/out/"), pq, "s3://b/in/a.parquet")
}

// TestReadKeepsFailing: an object whose reads keep failing is an input
// error naming it and the byte range; the other inputs are graded.
func TestReadKeepsFailing(t *testing.T) {
	srv := start(t)
	fewRetries(t)
	dir := t.TempDir()
	pq := genParquet(t, dir, 500, 250)
	jl := filepath.Join("..", "..", "testdata", "badrows", "input.jsonl")
	put(t, srv, "in/a.parquet", pq)
	put(t, srv, "in/b.jsonl", jl)
	var faults []s3test.Fault
	for range 200 {
		faults = append(faults, s3test.Fault{Method: http.MethodGet, Path: "/b/in/a.parquet", Status: 500})
	}
	cfg := pipeline.Config{Inputs: []string{"s3://b/in/"}, Out: "s3://b/out/", Workers: 2, Verifiers: crm.Verifiers()}
	// The object is described before the faults start.
	srv.Inject(faults...)
	res, err := pipeline.Run(context.Background(), cfg)
	srv.Clear()
	if err == nil || !strings.Contains(err.Error(), "s3://b/in/a.parquet") {
		t.Fatalf("Run: %v, want an error naming the object", err)
	}
	if res == nil || res.Summary.Rollouts == 0 || len(res.Summary.FailedInputs) != 1 {
		t.Fatalf("result %+v: want the JSON Lines input graded and one failed input", res)
	}
	f := res.Summary.FailedInputs[0]
	if !strings.Contains(f.Error, "s3://b/in/a.parquet") {
		t.Errorf("failed input %+v does not name the object", f)
	}
	st, err := os.Stat(pq)
	if err != nil {
		t.Fatal(err)
	}
	m := byteRange.FindStringSubmatch(f.Error)
	if m == nil {
		t.Fatalf("failed input error %q names no byte range", f.Error)
	}
	first, _ := strconv.ParseInt(m[1], 10, 64)
	last, _ := strconv.ParseInt(m[2], 10, 64)
	if first > last || last >= st.Size() {
		t.Errorf("failed input error %q: bytes %d-%d, want a range within the object's %d bytes", f.Error, first, last, st.Size())
	}
}

// byteRange matches the byte range of a failed read of s3://b/in/a.parquet.
var byteRange = regexp.MustCompile(`read s3://b/in/a\.parquet bytes (\d+)-(\d+): `)

// TestUploadFailsThenResume: an upload that keeps failing stops the run;
// --resume completes it with the results of a run that never failed, and
// a changed input is refused by name.
func TestUploadFailsThenResume(t *testing.T) {
	srv := start(t)
	fewRetries(t)
	dir := t.TempDir()
	pq := genParquet(t, dir, 3000, 250)
	put(t, srv, "in/a.parquet", pq)
	cfg := pipeline.Config{RowGroupsPerUnit: 4, Workers: 2, Format: columnar.FormatJSONL}
	want := gradeLocal(t, []string{pq}, cfg)
	cfg.Inputs, cfg.Out, cfg.Verifiers = []string{"s3://b/in/a.parquet"}, "s3://b/out/", crm.Verifiers()
	var faults []s3test.Fault
	for range 40 {
		faults = append(faults, s3test.Fault{Method: http.MethodPut, Path: "/b/out/rewards/part-00001", Status: 500})
	}
	srv.Inject(faults...)
	_, err := pipeline.Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rewards/part-00001") {
		t.Fatalf("Run: %v, want the failed upload", err)
	}
	srv.Clear()
	cfg.Resume = true
	res, err := pipeline.Run(context.Background(), cfg)
	if err != nil || !res.Complete {
		t.Fatalf("resume: %v", err)
	}
	sameParts(t, want, fetch(t, "s3://b/out/"), pq, "s3://b/in/a.parquet")

	// The object changes, keeping its size: a resume refuses it by its
	// ETag, naming it.
	data, _ := os.ReadFile(pq)
	data[len(data)/2] ^= 1
	other := filepath.Join(t.TempDir(), "a.parquet")
	os.WriteFile(other, data, 0o644)
	put(t, srv, "in/a.parquet", other)
	_, err = pipeline.Run(context.Background(), cfg)
	var ce *inputs.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "s3://b/in/a.parquet changed") {
		t.Fatalf("resume after a change: %v, want a ConfigError naming the object", err)
	}
}

func TestShardsAndCommit(t *testing.T) {
	srv := start(t)
	dir := t.TempDir()
	pq := genParquet(t, dir, 3000, 250)
	put(t, srv, "in/a.parquet", pq)
	cfg := pipeline.Config{RowGroupsPerUnit: 2, Workers: 1, Format: columnar.FormatJSONL}
	want := gradeLocal(t, []string{pq}, cfg)
	// An earlier run over more inputs left more parts in the output URL:
	// commit removes those the shards' run does not have.
	put(t, srv, "more/b.parquet", pq)
	earlier := cfg
	earlier.Inputs, earlier.Out, earlier.Verifiers = []string{"s3://b/in/", "s3://b/more/"}, "s3://b/out", crm.Verifiers()
	if _, err := pipeline.Run(context.Background(), earlier); err != nil {
		t.Fatalf("earlier run: %v", err)
	}
	for i := range 4 {
		c := cfg
		c.Inputs, c.Out, c.Verifiers, c.Shard = []string{"s3://b/in/"}, "s3://b/out", crm.Verifiers(), inputs.Shard{Index: i, Count: 4}
		if _, err := pipeline.Run(context.Background(), c); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	if _, err := results.Commit("s3://b/out"); err != nil {
		t.Fatal(err)
	}
	got := fetch(t, "s3://b/out")
	sameParts(t, want, got, pq, "s3://b/in/a.parquet")
	a, _ := os.ReadFile(filepath.Join(want, "summary.json"))
	b, _ := os.ReadFile(filepath.Join(got, "summary.json"))
	if strip(a) != strip(b) {
		t.Errorf("summary differs:\n%s\nwant\n%s", b, a)
	}
}

func strip(b []byte) string {
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "elapsed_seconds") && !strings.Contains(l, "rows_per_second") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestHTTPS reads an https:// input, with its presigned-looking query,
// from a TLS server answering range requests; the query is recorded
// nowhere.
func TestHTTPS(t *testing.T) {
	dir := t.TempDir()
	pq := genParquet(t, dir, 1000, 250)
	data, _ := os.ReadFile(pq)
	var ranged int
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("X-Amz-Signature") != "secret" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		if r.Header.Get("Range") != "" {
			ranged++
		}
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "a.parquet", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	old := store.HTTPClient
	store.HTTPClient = srv.Client()
	t.Cleanup(func() { store.HTTPClient = old })

	want := gradeLocal(t, []string{pq}, pipeline.Config{Workers: 2, Format: columnar.FormatJSONL})
	out := filepath.Join(dir, "out")
	url := srv.URL + "/data/a.parquet?X-Amz-Signature=secret"
	if _, err := pipeline.Run(context.Background(), pipeline.Config{Inputs: []string{url}, Out: out, Workers: 2, Format: columnar.FormatJSONL, Verifiers: crm.Verifiers()}); err != nil {
		t.Fatal(err)
	}
	sameParts(t, want, out, pq, srv.URL+"/data/a.parquet")
	if ranged == 0 {
		t.Error("no range request")
	}
	for _, f := range []string{"manifest.json", "summary.json"} {
		b, _ := os.ReadFile(filepath.Join(out, f))
		if strings.Contains(string(b), "secret") {
			t.Errorf("%s holds the URL's query:\n%s", f, b)
		}
	}
}
