package cli

import (
	"flag"

	"github.com/gavelhq/gavel/pipeline"
)

// remoteFlags are the flags that configure remote verifiers (a spec's
// remote:), shared by grade and serve.
type remoteFlags struct {
	allowImpure bool
	cache       string
	maxRequests int64
	repeats     int
}

func newRemoteFlags(fs *flag.FlagSet, budget bool) *remoteFlags {
	f := &remoteFlags{}
	fs.BoolVar(&f.allowImpure, "allow-impure", false, "ask remote verifiers not declared stateless (a NeMo Gym server whose reverify_mode is not stateless, a service without pure: true); their answers are neither cached nor reused, and the run lists them as impure_verifiers")
	fs.IntVar(&f.repeats, "verify-repeats", 1, "ask each remote verifier `N` times per rollout, each under its own cache key; answers that disagree make the rollout an error (kind verifier), counted as flaky in summary.json")
	fs.StringVar(&f.cache, "remote-cache", "", "remote verifiers' answer cache `DIR`, or off (default: gavel/remote under the user cache directory)")
	if budget {
		fs.Int64Var(&f.maxRequests, "remote-max-requests", 0, "send at most `N` requests to remote verifiers, in input order (a batch is one); the rollouts beyond stay pending (0: no limit)")
	}
	return f
}

// config returns the remote verifiers' configuration of the flags.
func (f *remoteFlags) config(cmd string) (*pipeline.RemoteConfig, error) {
	if f.maxRequests < 0 {
		return nil, usagef(cmd+" --remote-max-requests 1000 ...", "--remote-max-requests %d: want 0 (no limit) or more", f.maxRequests)
	}
	if f.repeats < 1 {
		return nil, usagef(cmd+" --verify-repeats 3 ...", "--verify-repeats %d: want 1 or more", f.repeats)
	}
	rc := &pipeline.RemoteConfig{MaxRequests: f.maxRequests, Repeats: f.repeats}
	rc.AllowImpure = f.allowImpure
	rc.CacheDir = f.cache
	return rc, nil
}
