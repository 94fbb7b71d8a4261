package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/gavelhq/gavel/internal/store"
)

// The azblob:// and gs:// drivers against their emulators, Azurite (npm:
// azurite) and fake-gcs-server (Go: github.com/fsouza/fake-gcs-server),
// run as processes on 127.0.0.1 for the length of a test and stopped by
// process id. Each test finds its emulator on PATH or in an environment
// variable (AZURITE_BLOB, FAKE_GCS_SERVER; `make test-emulators` installs
// both) and skips, saying so, when it is not there or does not start
// (fails instead with GAVEL_REQUIRE_EMULATORS=1).

// noEmulator skips the test, saying why, or fails it when
// GAVEL_REQUIRE_EMULATORS=1 (make test-emulators, which installs them).
func noEmulator(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("GAVEL_REQUIRE_EMULATORS") == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// emulatorTimeout bounds the life of an emulator a test starts.
const emulatorTimeout = 5 * time.Minute

// findEmulator returns the program named by the variable env, or found
// on PATH as name; it skips the test when there is none.
func findEmulator(t *testing.T, env, name, install string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	p, err := exec.LookPath(name)
	if err != nil {
		noEmulator(t, "%s not found: set %s or put it on PATH (%s)", name, env, install)
	}
	return p
}

// startEmulator starts the program with args, its output into a log that
// a failing test prints, and stops it by process id when the test ends.
func startEmulator(t *testing.T, name string, args ...string) (stdout io.Reader, log *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), emulatorTimeout)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	log = &bytes.Buffer{}
	cmd.Stderr = log
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		cancel()
		noEmulator(t, "%s does not start: %v", name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		pw.Close() // the reader sees the end of the output
		close(exited)
	}()
	var lines bytes.Buffer
	r := io.TeeReader(pr, &lines)
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		cancel()
		if t.Failed() {
			t.Logf("%s output:\n%s%s", filepath.Base(name), lines.String(), log)
		}
	})
	return r, log
}

// sameBucketRun generates a Parquet and a JSON Lines dataset, uploads
// them under in/ of the bucket URL base (query holds the bucket's
// options), grades them from there into out/ with the gavel binary, and
// checks that the parts equal those of a run on the local files (their
// paths replaced by the URLs) and that secret appears in no result file
// and no output of gavel.
func sameBucketRun(t *testing.T, base, query, secret string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.MkdirAll(in, 0o755)
	files := []string{"a.parquet", "b.jsonl.zst"}
	genData(t, filepath.Join(in, files[0]), 3000, 3, 0.02, 250)
	genData(t, filepath.Join(in, files[1]), 700, 4, 0.02, 0)

	loc, err := store.Open(ctx, base+"/in/"+query)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for _, f := range files {
		r, err := os.Open(filepath.Join(in, f))
		if err != nil {
			t.Fatal(err)
		}
		err = loc.Upload(ctx, "in/"+f, r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, filepath.Join(in, f), base+"/in/"+f)
	}
	loc.Close()

	local := []string{"grade", "--quiet", "--format", "jsonl", "--out", filepath.Join(dir, "ref")}
	cmd, stderr := gavelCmd(t, dir, append(local, filepath.Join(in, files[0]), filepath.Join(in, files[1]))...)
	if code := exitCodeOf(cmd.Run()); code != 3 {
		t.Fatalf("local run: exit %d, want 3 (the data has bad rows)\n%s", code, stderr)
	}
	remote := []string{"grade", "--format", "jsonl", "--out", base + "/out" + query, base + "/in/" + query}
	cmd, stderr = gavelCmd(t, dir, remote...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if code := exitCodeOf(cmd.Run()); code != 3 {
		t.Fatalf("run on %s: exit %d, want 3\n%s", base, code, stderr)
	}
	got := downloadAll(t, base+"/out"+query)
	repl := strings.NewReplacer(pairs...)
	for _, sub := range []string{"rewards", "checks"} {
		want, _ := filepath.Glob(filepath.Join(dir, "ref", sub, "part-*"))
		have, _ := filepath.Glob(filepath.Join(got, sub, "part-*"))
		if len(want) == 0 || len(have) != len(want) {
			t.Fatalf("%s: %d parts, want %d", sub, len(have), len(want))
		}
		for i := range want {
			a, _ := os.ReadFile(want[i])
			b, _ := os.ReadFile(have[i])
			if filepath.Base(want[i]) != filepath.Base(have[i]) || repl.Replace(string(a)) != string(b) {
				t.Errorf("%s/%s differs from the local run's", sub, filepath.Base(have[i]))
			}
		}
	}
	for _, f := range []string{"_SUCCESS", "summary.json", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(got, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	m, _ := os.ReadFile(filepath.Join(got, "manifest.json"))
	if !strings.Contains(string(m), `"path": "`+base+`/in/a.parquet"`) {
		t.Errorf("the manifest does not name %s/in/a.parquet:\n%s", base, m)
	}
	leaks := []string{secret, strings.TrimPrefix(query, "?")}
	filepath.Walk(got, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			data, _ := os.ReadFile(path)
			for _, s := range leaks {
				if s != "" && bytes.Contains(data, []byte(s)) {
					t.Errorf("%s holds %q", path, s)
				}
			}
		}
		return nil
	})
	for _, s := range leaks {
		if s != "" && (strings.Contains(stderr.String(), s) || strings.Contains(stdout.String(), s)) {
			t.Errorf("gavel's output holds %q:\n%s%s", s, &stdout, stderr)
		}
	}
}

// azuriteKey is the emulator's documented account key: public, and the
// same in every Azurite.
const azuriteKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// TestAzblobOnAzurite grades azblob:// inputs into an azblob:// output on
// Azurite, with the driver's local emulator options (localemu, protocol,
// domain) and the account key from the environment.
func TestAzblobOnAzurite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Azurite")
	}
	bin := findEmulator(t, "AZURITE_BLOB", "azurite-blob", "npm install azurite")
	stdout, log := startEmulator(t, bin, "--blobHost", "127.0.0.1", "--blobPort", "0",
		"--location", t.TempDir(), "--skipApiVersionCheck", "--disableTelemetry", "--silent")
	listening := regexp.MustCompile(`listens on http://(127\.0\.0\.1:[0-9]+)`)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		close(addr)
		io.Copy(io.Discard, stdout)
	}()
	var host string
	select {
	case host = <-addr:
	case <-time.After(60 * time.Second):
	}
	if host == "" {
		noEmulator(t, "Azurite did not start listening within 60s:\n%s", log)
	}

	const account = "devstoreaccount1"
	t.Setenv("AZURE_STORAGE_ACCOUNT", account)
	t.Setenv("AZURE_STORAGE_KEY", azuriteKey)
	cred, err := azblob.NewSharedKeyCredential(account, azuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential("http://"+host+"/"+account+"/", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateContainer(context.Background(), "gavel", nil); err != nil {
		t.Fatalf("create container: %v", err)
	}
	sameBucketRun(t, "azblob://gavel", "?localemu=true&protocol=http&domain="+host, azuriteKey)
}

// TestGCSOnFakeGCSServer grades gs:// inputs into a gs:// output on
// fake-gcs-server, which the GCS client reaches through
// STORAGE_EMULATOR_HOST.
func TestGCSOnFakeGCSServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts fake-gcs-server")
	}
	bin := findEmulator(t, "FAKE_GCS_SERVER", "fake-gcs-server", "go install github.com/fsouza/fake-gcs-server@v1.56.1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close()
	_, log := startEmulator(t, bin, "-scheme", "http", "-host", "127.0.0.1", "-port", strings.TrimPrefix(host, "127.0.0.1:"),
		"-backend", "memory", "-external-url", "http://"+host, "-public-host", host, "-log-level", "error")
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + host + "/storage/v1/b")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			noEmulator(t, "fake-gcs-server did not answer on %s within 60s: %v\n%s", host, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := http.Post("http://"+host+"/storage/v1/b?project=test", "application/json", strings.NewReader(`{"name":"gavel"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create bucket: %s", resp.Status)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", host)
	sameBucketRun(t, "gs://gavel", "", "")
}
