package spec

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func remoteSpec(remote string) string {
	return "verifiers:\n  - id: V\n    task: T\n    name: n\n    remote: " + remote + "\n"
}

func TestLoadRemote(t *testing.T) {
	vs, err := Parse("r.yaml", []byte(remoteSpec(`{url: "http://127.0.0.1:9/grade", version: 2, timeout: 30s, concurrency: 8, batch: 4, token_env: TOK, pure: true, threshold: 0.5}`)))
	if err != nil {
		t.Fatal(err)
	}
	r := vs[0].Remote
	if r == nil || r.URL != "http://127.0.0.1:9/grade" || r.Protocol != "gavel" || r.Version != "2" || r.Timeout != 30*time.Second ||
		r.Concurrency != 8 || r.Batch != 4 || r.TokenEnv != "TOK" || !r.Pure || r.Threshold != 0.5 || r.RewardSet {
		t.Errorf("settings %+v", r)
	}
	// Its Grade fails loudly where no run asks the service.
	if err := vs[0].Grade(nil, nil); err == nil || !errors.Is(err, errNotAsked) {
		t.Errorf("Grade = %v", err)
	}
	// The remote settings are part of the canonical text, so of the
	// fingerprint: a new version is another verifier.
	vs2, _ := Parse("r.yaml", []byte(remoteSpec(`{url: "http://127.0.0.1:9/grade", version: 3, timeout: 30s, concurrency: 8, batch: 4, token_env: TOK, pure: true, threshold: 0.5}`)))
	if vs2[0].Definition == vs[0].Definition {
		t.Error("a new version has the same definition")
	}

	for _, tc := range []struct{ spec, want string }{
		{remoteSpec(`{url: "http://h/", version: 1}`) + "    checks: [{id: c, type: rubric, rubric: r}]\n", "has both remote and checks"},
		{remoteSpec(`{version: 1}`), "has no url"},
		{remoteSpec(`{url: "ftp://h/", version: 1}`), "must be an http:// or https:// URL"},
		{remoteSpec(`{url: "http://user:pw@h/", version: 1}`), "holds credentials"},
		{remoteSpec(`{url: "http://h/"}`), "has no version"},
		{remoteSpec(`{url: "http://h/", version: 1, protocol: grpc}`), "must be gavel or nemo-gym"},
		{remoteSpec(`{url: "http://h/", version: 1, timeout: soon}`), "positive duration"},
		{remoteSpec(`{url: "http://h/", version: 1, batch: 0}`), "positive integer"},
		{remoteSpec(`{url: "http://h/", version: 1, pure: yes please}`), "true or false"},
		{remoteSpec(`{url: "http://h/", version: 1, threshold: 2}`), "(0, 1]"},
		{remoteSpec(`{url: "http://h/", version: 1, protocol: nemo-gym, batch: 2}`), "one rollout per request"},
		{remoteSpec(`{url: "http://h/", version: 1, protocol: nemo-gym, pure: true}`), "says itself whether it is stateless"},
		{remoteSpec(`{url: "http://h/", version: 1, verion: 2}`), "verion"},
	} {
		_, err := Parse("r.yaml", []byte(tc.spec))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a problem holding %q", tc.spec, err, tc.want)
		}
	}
}
