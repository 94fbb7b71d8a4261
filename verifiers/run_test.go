package verifiers

import (
	"errors"
	"strings"
	"testing"
)

// TestRun grades through Run: a verifier's error and its panic both give a
// verdict with status error and no checks, not a crash.
func TestRun(t *testing.T) {
	tests := []struct {
		name   string
		grade  func(r *Rollout, c *Checks) error
		want   Outcome
		err    string
		checks int
	}{
		{"passes", func(r *Rollout, c *Checks) error { c.Require("ok", true, ""); return nil }, Passed, "", 1},
		{"returns an error", func(r *Rollout, c *Checks) error {
			c.Require("ok", true, "")
			return errors.New("no world")
		}, Errored, "verifier V: no world", 0},
		{"panics", func(r *Rollout, c *Checks) error {
			c.Require("ok", true, "")
			var m map[string]int
			m["x"] = 1
			return nil
		}, Errored, "verifier V panicked: assignment to entry in nil map\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Checks
			c.Require("left over from the last rollout", false, "")
			got := Run(&Verifier{ID: "V", Grade: tt.grade}, &Rollout{}, &c)
			if got.Outcome != tt.want || !strings.HasPrefix(got.Error, tt.err) || len(c.List()) != tt.checks {
				t.Errorf("Run = %v %q with %d checks, want %v %q with %d", got.Outcome, got.Error, len(c.List()), tt.want, tt.err, tt.checks)
			}
			if got.Outcome == Errored && got.ErrorKind != KindVerifier {
				t.Errorf("Run error kind = %q, want %q", got.ErrorKind, KindVerifier)
			}
		})
	}
}
