package verifiers

import (
	"strings"
	"testing"
)

// TestFingerprint: a fingerprint changes with the id, the Version, the
// definition and the judge settings, and with nothing else of the verifier.
func TestFingerprint(t *testing.T) {
	base := Verifier{ID: "VER-1", Name: "n", Tasks: []string{"T"}, Version: 1, Source: "a.go:1", Definition: "def"}
	want := Fingerprint(&base, "model=m")
	if !strings.HasPrefix(want, "sha256:") || len(want) != len("sha256:")+64 {
		t.Fatalf("Fingerprint = %q, want sha256: and 64 hex digits", want)
	}
	tests := []struct {
		name  string
		edit  func(v *Verifier)
		judge string
		same  bool
	}{
		{"unchanged", func(v *Verifier) {}, "model=m", true},
		{"name, tasks, source and grade", func(v *Verifier) {
			v.Name, v.Tasks, v.Source = "other", []string{"U"}, "b.go:9"
			v.Grade = func(*Rollout, *Checks) error { return nil }
		}, "model=m", true},
		{"id", func(v *Verifier) { v.ID = "VER-2" }, "model=m", false},
		{"version", func(v *Verifier) { v.Version = 2 }, "model=m", false},
		{"definition", func(v *Verifier) { v.Definition = "def2" }, "model=m", false},
		{"judge", func(v *Verifier) {}, "model=n", false},
		{"no judge", func(v *Verifier) {}, "", false},
		{"text moved from definition to judge", func(v *Verifier) { v.Definition = "de" }, "fmodel=m", false},
	}
	for _, tt := range tests {
		v := base
		tt.edit(&v)
		if got := Fingerprint(&v, tt.judge); (got == want) != tt.same {
			t.Errorf("%s: Fingerprint = %s, base %s: same = %v, want %v", tt.name, got, want, got == want, tt.same)
		}
	}
}
