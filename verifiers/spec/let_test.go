package spec

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/verifiers"
)

// Rollouts of one world read its memoized let values from many goroutines.
func TestLetMemoConcurrent(t *testing.T) {
	v := loadSpec(t, "testdata/ver002_let.yaml")
	rs := ver002Rollouts(t, 400, 4)
	want := make([][]verifiers.Check, len(rs))
	for i, r := range rs {
		var c verifiers.Checks
		if err := v.Grade(r, &c); err != nil {
			t.Fatal(err)
		}
		want[i] = append([]verifiers.Check(nil), c.List()...)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			var c verifiers.Checks
			for i := range rs {
				i := (i + w*7) % len(rs)
				c.Reset()
				if err := v.Grade(rs[i], &c); err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want[i], c.List()); diff != "" {
					t.Errorf("rollout %d: %s", i, diff)
					return
				}
			}
		})
	}
	wg.Wait()
}
