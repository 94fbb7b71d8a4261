// Package verifiertest tests Go verifiers from their own package's tests:
// Fixtures runs each verifier on the rollouts kept beside it, and Versions
// keeps each verifier's Version moving with its code. A module made by
// `gavel verifier init` calls both from one test; gavel's own reference
// environment (verifiers/crm) does the same.
//
// Fixtures of a verifier with id ID live in its Fixtures file system as
//
//	ID/pass/*.json    rollouts whose verdict must be passed
//	ID/fail/*.json    rollouts whose verdict must be failed
//	ID/error/*.json   rollouts whose verdict must be error
//
// Each file is one rollout as a JSON object with the fields of a JSON
// Lines row (task_id, initial_state, final_state, output, log, optionally
// rollout_id and metadata), read as `gavel grade` reads such a row: a
// state may be a JSON value or JSON text in a string. A fail fixture may
// add "expect_failed": a list of check ids that must have status fail, so
// that it fails for the reason it was written for.
//
// This package is public API (with cli, verifiers and columnar/jsonview).
package verifiertest

import (
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/selftest"
)

// Fixtures runs each verifier on its fixtures (v.Fixtures), twice (a
// verifier must give the same checks to the same rollout), and on a no-op
// rollout per task it binds (the final state equal to the initial one,
// empty output and log), which it must not pass. A case that ends other
// than expected fails t. A required check that passes on the no-op
// (vacuous: it passes whatever the agent does) and a verifier without
// fixtures are logged, as `gavel verifier test` reports them; pass
// `gavel verifier test --strict` to fail on them.
func Fixtures(t testing.TB, vs []*verifiers.Verifier) {
	t.Helper()
	dec, err := pipeline.NewRowDecoder(columnar.FieldNames{}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		var fx []selftest.Fixture
		if v.Fixtures != nil && selftest.HasFixtures(v.Fixtures, v.ID) {
			if fx, err = selftest.LoadFixtures(v.Fixtures, v.ID); err != nil {
				t.Errorf("%s: %v", v.ID, err)
				continue
			}
		} else {
			t.Logf("%s has no fixtures", v.ID)
		}
		for _, o := range selftest.Test(v, fx, dec.Decode) {
			if !o.OK {
				t.Errorf("%s %s: want %s, got %s: %s", o.Verifier, o.Case, o.Want, o.Got, o.Problem)
			}
			for _, c := range o.Vacuous {
				t.Logf("%s %s: required check %q passes on a no-op rollout", o.Verifier, o.Case, c)
			}
		}
	}
}
