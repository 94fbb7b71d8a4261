package remote

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gavelhq/gavel/judge/call"
	"github.com/gavelhq/gavel/verifiers"
)

func TestParseConnectTo(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    map[string]string
	}{
		{"", "", map[string]string{}},
		{"fn.gavel.invalid:80=127.0.0.1:43123", "", map[string]string{"fn.gavel.invalid:80": "127.0.0.1:43123"}},
		{" A.Invalid:80=127.0.0.1:1 , [::1]:8080=[::1]:9 ,", "", map[string]string{"a.invalid:80": "127.0.0.1:1", "[::1]:8080": "[::1]:9"}},
		{"a.invalid:80", "want HOST:PORT=ADDR:PORT", nil},
		{"a.invalid=127.0.0.1:1", `"a.invalid" is not HOST:PORT`, nil},
		{"a.invalid:80=127.0.0.1:0", `port "0" is not a number from 1 to 65535`, nil},
		{"a.invalid:80=:99", `":99" is not HOST:PORT`, nil},
	} {
		got, err := ParseConnectTo(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseConnectTo(%q) = %v, %v; want an error holding %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("ParseConnectTo(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("ParseConnectTo(%q)[%q] = %q, want %q", tc.in, k, got[k], v)
			}
		}
	}
}

// TestConnectTo: a URL named in ConnectTo (read from the environment) is
// asked at the address given, never through a proxy, with its own Host;
// the cache key is the URL's, wherever the service listens.
func TestConnectTo(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host+" "+r.URL.Path)
		mu.Unlock()
		io.WriteString(w, `[0.25, {"error": "ValueError: no answer"}]`)
	}))
	defer srv.Close()
	// A proxy that cannot be reached: a request sent through it fails.
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv(ConnectToEnv, "functions.gavel.invalid:80="+strings.TrimPrefix(srv.URL, "http://"))
	c, err := New(Config{CacheDir: "off", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	v := &verifiers.Verifier{ID: "exact", Remote: &verifiers.RemoteSettings{URL: "http://functions.gavel.invalid/exact",
		Protocol: ProtocolGavel, Version: "1", Pure: true, Batch: 2}}
	cl, err := c.For(v)
	if err != nil {
		t.Fatal(err)
	}
	as, err := cl.Ask(context.Background(), [][]byte{[]byte(`{"rollout_id":"a"}`), []byte(`{"rollout_id":"b"}`)}, make([]call.Key, 2))
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if len(as) != 2 || as[0].Reward == nil || *as[0].Reward != 0.25 || as[0].Err != "" {
		t.Errorf("answers %+v, want 0.25 then an error", as)
	}
	want := `remote verifier exact at http://functions.gavel.invalid/exact: could not grade the rollout: "ValueError: no answer"`
	if len(as) == 2 && as[1].Err != want {
		t.Errorf("second answer's error %q, want %q", as[1].Err, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) != 1 || hosts[0] != "functions.gavel.invalid /exact" {
		t.Errorf("requests %q, want one with Host functions.gavel.invalid", hosts)
	}
	// The same verifier behind another port has the same cache keys.
	t.Setenv(ConnectToEnv, "functions.gavel.invalid:80=127.0.0.1:9")
	c2, err := New(Config{CacheDir: "off"})
	if err != nil {
		t.Fatal(err)
	}
	cl2, err := c2.For(v)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"rollout_id":"a"}`)
	if cl.Key(body) != cl2.Key(body) {
		t.Error("the cache key changed with the address connected to")
	}

	t.Setenv(ConnectToEnv, "functions.gavel.invalid")
	if _, err := New(Config{CacheDir: "off"}); err == nil || !strings.Contains(err.Error(), "$"+ConnectToEnv) {
		t.Errorf("New with a malformed $%s: %v, want an error naming it", ConnectToEnv, err)
	}
}
