package cli

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The errors of azblob:// and gs:// requests refused by the service carry
// no credential: the servers here, on 127.0.0.1, speak just enough of the
// Azure Blob API and of Google's token endpoint to take gavel to a
// request, and refuse it with a body that echoes what real services echo
// (Azure's AuthenticationFailed names the request's signature) and more:
// the Authorization header, the query and the request body. The tests
// look for every secret in gavel's output and result files.

// secrets collects the credentials a scripted server saw.
type secrets struct {
	mu   sync.Mutex
	seen []string
	reqs int
}

// maxSecretRequests bounds the requests a scripted server answers.
const maxSecretRequests = 1000

// add records a request and its credentials, and reports whether the
// server still answers (it refuses past maxSecretRequests).
func (s *secrets) add(v ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs++
	for _, x := range v {
		if x != "" {
			s.seen = append(s.seen, x)
		}
	}
	return s.reqs <= maxSecretRequests
}

func (s *secrets) list() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...), s.reqs
}

// cleanEnv returns the environment of this process without the
// variables of any cloud's SDK, and with extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "AZURE_"), strings.HasPrefix(name, "GOOGLE_"), strings.HasPrefix(name, "GCE_"),
			strings.HasPrefix(name, "STORAGE_EMULATOR"), strings.HasPrefix(name, "AWS_"), strings.HasPrefix(name, "CLOUDSDK_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// fakeAzure answers as an Azure Blob account "acct" with the container
// "c": a listing of in/ holds in/a.jsonl and the blob's properties are
// served, but reading or writing a blob and listing denied/ are refused
// with AuthenticationFailed, echoing the request's credentials.
func fakeAzure(t *testing.T, sec *secrets) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		sig := r.URL.Query().Get("sig")
		_, mac, _ := strings.Cut(auth, ":")
		if !sec.add(mac, sig) {
			http.Error(w, "too many requests for a test", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		q := r.URL.Query()
		switch {
		case r.Method == http.MethodGet && q.Get("comp") == "list" && strings.HasPrefix(q.Get("prefix"), "in/"):
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ContainerName="c"><Prefix>%s</Prefix><Blobs><Blob><Name>in/a.jsonl</Name><Properties><Last-Modified>Wed, 02 Dec 2026 00:00:00 GMT</Last-Modified><Etag>0x8DD</Etag><Content-Length>100</Content-Length><Content-Type>application/octet-stream</Content-Type><BlobType>BlockBlob</BlobType></Properties></Blob></Blobs><NextMarker /></EnumerationResults>`, q.Get("prefix"))
		case r.Method == http.MethodGet && q.Get("comp") == "list" && strings.HasPrefix(q.Get("prefix"), "out/"):
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ContainerName="c"><Prefix>%s</Prefix><Blobs></Blobs><NextMarker /></EnumerationResults>`, q.Get("prefix"))
		case r.Method == http.MethodHead:
			w.Header().Set("Content-Length", "100")
			w.Header().Set("ETag", `"0x8DD"`)
			w.Header().Set("Last-Modified", "Wed, 02 Dec 2026 00:00:00 GMT")
			w.Header().Set("x-ms-creation-time", "Wed, 02 Dec 2026 00:00:00 GMT")
			w.Header().Set("x-ms-blob-type", "BlockBlob")
			w.Header().Set("Content-Type", "application/octet-stream")
			w.WriteHeader(http.StatusOK)
		default:
			w.Header().Set("Content-Type", "application/xml")
			w.Header().Set("x-ms-error-code", "AuthenticationFailed")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthenticationFailed</Code><Message>Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature. Authorization: %s Query: %s Body: %.200s</Message><AuthenticationErrorDetail>The MAC signature found in the HTTP request '%s' is not the same as any computed signature.</AuthenticationErrorDetail></Error>`,
				xmlText(auth), xmlText(r.URL.RawQuery), xmlText(string(body)), xmlText(mac))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func xmlText(s string) string {
	var b bytes.Buffer
	for _, c := range s {
		switch c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// runLeakCheck runs gavel with args and env in a new directory, bounded
// in time, and fails the test when its output or a file it wrote holds
// one of the secrets, or when it succeeded.
func runLeakCheck(t *testing.T, env []string, secrets []string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	cmd, stderr := gavelCmd(t, dir, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Env = env
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("gavel %s did not end within 2 minutes", strings.Join(args, " "))
	}
	if code := exitCodeOf(err); code == 0 {
		t.Fatalf("gavel %s: exit 0, want a failure\n%s", strings.Join(args, " "), stderr)
	}
	t.Logf("gavel %s: %v\n%s", strings.Join(args, " "), err, stderr)
	out := stdout.String() + stderr.String()
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			data, _ := os.ReadFile(path)
			out += string(data)
		}
		return nil
	})
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("gavel %s: its output holds the secret %q:\n%s", strings.Join(args, " "), s, out)
		}
	}
	return stderr.String()
}

// TestAzblobErrorsHoldNoSecret reads from and writes to a scripted Azure
// account that refuses the requests, with a shared key, a SAS token and
// a connection string: gavel's errors name the object and carry neither
// the key, nor the signatures of its requests, nor the SAS signature.
func TestAzblobErrorsHoldNoSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gavel")
	}
	key := base64.StdEncoding.EncodeToString([]byte("account-key-that-must-not-leak-0123456789"))
	const sasSig = "c2FzLXNpZ25hdHVyZS10aGF0LW11c3Qtbm90LWxlYWs="
	sas := "sv=2022-11-02&ss=b&srt=co&sp=rlw&se=2030-01-01T00:00:00Z&sig=" + url.QueryEscape(sasSig)
	input := filepath.Join(mustAbs(t, filepath.Join("..", "testdata", "badrows")), "input.jsonl")
	for _, cred := range []string{"shared key", "SAS token", "connection string"} {
		t.Run(cred, func(t *testing.T) {
			sec := &secrets{}
			srv := fakeAzure(t, sec)
			host := strings.TrimPrefix(srv.URL, "http://")
			query := ""
			var env []string
			switch cred {
			case "shared key":
				env = cleanEnv("AZURE_STORAGE_ACCOUNT=acct", "AZURE_STORAGE_KEY="+key)
				query = "?localemu=true&protocol=http&domain=" + host
			case "SAS token":
				env = cleanEnv("AZURE_STORAGE_ACCOUNT=acct", "AZURE_STORAGE_SAS_TOKEN="+sas,
					"AZURE_STORAGE_DOMAIN="+host, "AZURE_STORAGE_PROTOCOL=http", "AZURE_STORAGE_IS_LOCAL_EMULATOR=true")
			case "connection string":
				env = cleanEnv("AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=" + key + ";BlobEndpoint=" + srv.URL + "/acct;")
				query = "?localemu=true&protocol=http&domain=" + host
			}
			cases := []struct {
				name, want string
				args       []string
			}{
				{"read", "azblob://c/in/a.jsonl", []string{"grade", "--out", "out", "azblob://c/in/" + query}},
				{"list", "azblob://c/denied/", []string{"grade", "--out", "out", "azblob://c/denied/" + query}},
				{"write", "azblob://c/out/", []string{"grade", "--out", "azblob://c/out/" + query, input}},
			}
			for _, c := range cases {
				stderr := runLeakCheck(t, env, []string{key, sasSig, url.QueryEscape(sasSig)}, c.args...)
				seen, reqs := sec.list()
				if reqs == 0 {
					t.Fatalf("%s: the server got no request\n%s", c.name, stderr)
				}
				if !strings.Contains(stderr, c.want) {
					t.Errorf("%s: the error does not name %s:\n%s", c.name, c.want, stderr)
				}
				// The signatures the server was sent (shared key) must
				// not come back either.
				for _, s := range seen {
					if strings.Contains(stderr, s) {
						t.Errorf("%s: the error holds the request's signature %q:\n%s", c.name, s, stderr)
					}
				}
			}
		})
	}
}

// TestGCSErrorsHoldNoSecret points Google's default credentials at a
// user's refresh token whose token endpoint, on 127.0.0.1, refuses it
// with a body echoing the request (the client secret and the refresh
// token); the metadata server is the same scripted server, so nothing
// leaves the machine. gavel's error names the bucket URL and carries
// neither secret.
func TestGCSErrorsHoldNoSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gavel")
	}
	// Parallel: gavel waits out its retries (seconds) against the token
	// endpoint; the test's state is its own (server, directory, env).
	t.Parallel()
	const clientSecret = "gcs-client-secret-that-must-not-leak"
	const refresh = "1//refresh-token-that-must-not-leak"
	sec := &secrets{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if !sec.add() || r.URL.Path != "/token" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"Bad request: %s"}`, strings.ReplaceAll(string(body), `"`, `'`))
	}))
	defer srv.Close()
	creds := filepath.Join(t.TempDir(), "adc.json")
	os.WriteFile(creds, []byte(fmt.Sprintf(`{"type":"authorized_user","client_id":"id.apps.googleusercontent.com","client_secret":%q,"refresh_token":%q,"token_uri":%q}`,
		clientSecret, refresh, srv.URL+"/token")), 0o600)
	env := cleanEnv("GOOGLE_APPLICATION_CREDENTIALS="+creds, "GCE_METADATA_HOST="+strings.TrimPrefix(srv.URL, "http://"),
		"GOOGLE_CLOUD_PROJECT=test")
	input := filepath.Join(mustAbs(t, filepath.Join("..", "testdata", "badrows")), "input.jsonl")
	for _, c := range []struct {
		name, want string
		args       []string
	}{
		{"read", "gs://gavel/in/", []string{"grade", "--out", "out", "gs://gavel/in/"}},
		{"write", "gs://gavel/out/", []string{"grade", "--out", "gs://gavel/out/", input}},
	} {
		stderr := runLeakCheck(t, env, []string{clientSecret, refresh, url.QueryEscape(refresh)}, c.args...)
		if _, reqs := sec.list(); reqs == 0 {
			t.Fatalf("%s: the token endpoint got no request\n%s", c.name, stderr)
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%s: the error does not name %s:\n%s", c.name, c.want, stderr)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// An Azure answer to a HEAD without x-ms-creation-time makes the storage
// library panic: gavel turns it into the input's error, naming the object,
// asked once (not retried), and exits 1 instead of crashing.
func TestAzblobHeadWithoutCreationTime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gavel")
	}
	var heads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			http.Error(w, "not scripted", http.StatusBadRequest)
			return
		}
		heads.Add(1)
		w.Header().Set("Content-Length", "100")
		w.Header().Set("ETag", `"0x8DD"`)
		w.Header().Set("Last-Modified", "Wed, 02 Dec 2026 00:00:00 GMT")
		w.Header().Set("x-ms-blob-type", "BlockBlob")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	key := base64.StdEncoding.EncodeToString([]byte("account-key-0123456789"))
	host := strings.TrimPrefix(srv.URL, "http://")
	s := runLeakCheck(t, cleanEnv("AZURE_STORAGE_ACCOUNT=acct", "AZURE_STORAGE_KEY="+key), []string{key},
		"grade", "--out", "out", "azblob://c/in/a.jsonl?localemu=true&protocol=http&domain="+host)
	if !strings.Contains(s, "azblob://c/in/a.jsonl") || !strings.Contains(s, "the storage library failed on the server's answer") || strings.Contains(s, "goroutine ") {
		t.Errorf("stderr does not name the object and the library's failure, or holds a stack:\n%s", s)
	}
	if n := heads.Load(); n != 1 {
		t.Errorf("%d HEAD requests, want 1 (a library failure is not retried)", n)
	}
}
