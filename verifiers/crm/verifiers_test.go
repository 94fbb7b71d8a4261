package crm

import (
	"flag"
	"testing"

	"github.com/gavelhq/gavel/verifiers/selftest"
	"github.com/gavelhq/gavel/verifiers/verifiertest"
)

var update = flag.Bool("update", false, "record the code of verifiers whose Version was raised")

// TestVersions fails when a verifier's code changed and its Version did
// not; -update records the code of verifiers whose Version was raised.
func TestVersions(t *testing.T) {
	verifiertest.Versions(t, Verifiers(), "testdata/versions.golden", *update, "go test ./verifiers/crm -run TestVersions -update")
}

// TestFixtures runs every CRM verifier on its fixtures, each of which has
// both pass and fail fixtures.
func TestFixtures(t *testing.T) {
	vs := Verifiers()
	for _, v := range vs {
		fx, err := selftest.LoadFixtures(v.Fixtures, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, f := range fx {
			kinds[f.Expect]++
		}
		if kinds[selftest.ExpectPass] == 0 || kinds[selftest.ExpectFail] == 0 {
			t.Errorf("%s has %d pass and %d fail fixtures, want both", v.ID, kinds[selftest.ExpectPass], kinds[selftest.ExpectFail])
		}
	}
	verifiertest.Fixtures(t, vs)
}
