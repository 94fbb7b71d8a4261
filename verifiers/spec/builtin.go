package spec

import (
	"embed"
	"io/fs"
	"sync"

	"github.com/gavelhq/gavel/verifiers"
)

// calendarSpec is the calendar reference environment: VER-C01, grading
// TASK-C01 (docs/verifiers.md, "Declarative verifiers (spec files)").
//
//go:embed calendar.yaml
var calendarSpec []byte

// CalendarSource is the name the built-in calendar spec is loaded under; it
// is the Source prefix of its verifiers.
const CalendarSource = "verifiers/spec/calendar.yaml"

// Builtin returns the spec verifiers built into gavel: the calendar
// reference environment. It loads them once; every call returns a new
// slice of the same verifiers, which callers must not modify.
func Builtin() []*verifiers.Verifier {
	return append([]*verifiers.Verifier(nil), builtin()...)
}

// calendarFixtures holds the calendar verifiers' fixtures, one directory
// per verifier id.
//
//go:embed testdata/fixtures
var calendarFixtures embed.FS

var builtin = sync.OnceValue(func() []*verifiers.Verifier {
	vs, err := Parse(CalendarSource, calendarSpec)
	if err != nil {
		panic("spec: built-in calendar spec: " + err.Error())
	}
	fixtures, err := fs.Sub(calendarFixtures, "testdata/fixtures")
	if err != nil {
		panic("spec: built-in calendar fixtures: " + err.Error())
	}
	for _, v := range vs {
		v.Fixtures = fixtures
	}
	return vs
})
