package spec

import (
	"errors"
	"net/url"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/verifiers"
)

// errNotAsked is what a remote verifier's Grade returns: only a run that
// asks remote verifiers (gavel grade, gavel serve) grades them.
var errNotAsked = errors.New("a remote verifier is graded by its service, which only gavel grade and gavel serve ask")

func remoteGrade(*verifiers.Rollout, *verifiers.Checks) error { return errNotAsked }

// remote reads a verifier's remote: {url, protocol, version, timeout,
// concurrency, batch, token_env, pure, threshold, flags}; nil when it has
// problems.
func (l *loader) remote(n *yaml.Node, verifier string) *verifiers.RemoteSettings {
	before := len(l.problems)
	what := "remote of " + verifier
	m, ok := l.fields(n, what, "url", "protocol", "version", "timeout", "concurrency", "batch", "token_env", "pure", "threshold", "flags")
	if !ok {
		return nil
	}
	s := &verifiers.RemoteSettings{Protocol: "gavel"}
	var un *yaml.Node
	s.URL, un = l.str(m, n, "url", what, true)
	if un != nil {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.problem(un, "url: http://127.0.0.1:8123/", "url of %s must be an http:// or https:// URL", what)
		} else if u.User != nil {
			l.problem(un, "put the secret in an environment variable and name it with token_env", "url of %s holds credentials", what)
		}
	}
	if p, pn := l.str(m, n, "protocol", what, false); pn != nil {
		if p != "gavel" && p != "nemo-gym" {
			l.problem(pn, "protocol: gavel or protocol: nemo-gym", "protocol of %s must be gavel or nemo-gym, not %q", what, p)
		}
		s.Protocol = p
	}
	if vn := m["version"]; vn == nil {
		l.problem(n, "add version: 1 (raise it whenever the service's answers may change)", "%s has no version", what)
	} else if vn.Kind != yaml.ScalarNode || vn.Value == "" || vn.ShortTag() == "!!null" {
		l.problem(vn, "version: 1", "version of %s must be a number or a string", what)
	} else {
		s.Version = vn.Value
	}
	if tn := m["timeout"]; tn != nil {
		d, err := time.ParseDuration(tn.Value)
		if sec, serr := strconv.ParseFloat(tn.Value, 64); serr == nil {
			d, err = time.Duration(sec*float64(time.Second)), nil
		}
		if err != nil || d <= 0 || tn.Kind != yaml.ScalarNode {
			l.problem(tn, "timeout: 30s", "timeout of %s must be a positive duration, not %s", what, tn.Value)
		}
		s.Timeout = d
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"concurrency", &s.Concurrency}, {"batch", &s.Batch}} {
		if fn := m[f.key]; fn != nil {
			if fn.Kind != yaml.ScalarNode || fn.ShortTag() != "!!int" || fn.Decode(f.dst) != nil || *f.dst < 1 {
				l.problem(fn, f.key+": 8", "%s of %s must be a positive integer, not %s", f.key, what, fn.Value)
			}
		}
	}
	s.TokenEnv, _ = l.str(m, n, "token_env", what, false)
	for _, f := range []struct {
		key string
		dst *bool
	}{{"pure", &s.Pure}, {"flags", &s.Flags}} {
		if bn := m[f.key]; bn != nil {
			if bn.Kind != yaml.ScalarNode || bn.ShortTag() != "!!bool" || bn.Decode(f.dst) != nil {
				l.problem(bn, f.key+": true", "%s of %s must be true or false, not %s", f.key, what, bn.Value)
			}
		}
	}
	if tn := m["threshold"]; tn != nil {
		if tn.Kind != yaml.ScalarNode || (tn.ShortTag() != "!!float" && tn.ShortTag() != "!!int") || tn.Decode(&s.Threshold) != nil ||
			!(s.Threshold > 0 && s.Threshold <= 1) {
			l.problem(tn, "threshold: 0.5", "threshold of %s must be a number in (0, 1], not %s", what, tn.Value)
		}
	}
	if s.Protocol == "nemo-gym" {
		if bn := m["batch"]; bn != nil && s.Batch > 1 {
			l.problem(bn, "remove batch: a NeMo Gym resources server verifies one rollout per request", "batch of %s: the nemo-gym protocol sends one rollout per request", what)
		}
		if pn := m["pure"]; pn != nil {
			l.problem(pn, "remove pure: gavel asks the server's GET /reverify_mode", "pure of %s: a NeMo Gym server says itself whether it is stateless", what)
		}
		if fn := m["flags"]; fn != nil && s.Flags {
			l.problem(fn, "remove flags: a NeMo Gym verify response has a reward and its components, no flags", "flags of %s: the nemo-gym protocol answers no flags", what)
		}
	}
	if len(l.problems) > before {
		return nil
	}
	return s
}
