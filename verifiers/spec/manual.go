package spec

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// The manual functions: Go functions that `manual` checks call by name,
// their result checked by the check's asserts. Like Go verifiers, a
// function is not callable from a spec until manualRegistry names it.
func manualRegistry() []*ManualFunc {
	return []*ManualFunc{
		findEventsOnDay,
		// New manual functions are added above this line.
	}
}

// ManualFunc is a Go function that a manual check calls; its result is the
// check's _result.
type ManualFunc struct {
	// Name is what a spec's function field names.
	Name string
	// Usage shows a correct call, as a hint in load problems.
	Usage string
	// CheckArgs validates the literal function_args at load; nil accepts any.
	CheckArgs func(args []jsonview.Value) error
	// Call appends the function's result rows for rollout r to dst. An
	// error makes the check's status error. Like Grade, it must not keep
	// any of r.
	Call func(r *verifiers.Rollout, args []jsonview.Value, dst []jsonview.Value) ([]jsonview.Value, error)
}

func (f *ManualFunc) checkArgs(args []jsonview.Value) error {
	if f.CheckArgs == nil {
		return nil
	}
	return f.CheckArgs(args)
}

func lookupManual(name string) *ManualFunc {
	for _, f := range manualRegistry() {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func manualNames() []string {
	var names []string
	for _, f := range manualRegistry() {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// findEventsOnDay returns the final state's events (the rows of its
// "events" table) whose startTime, an RFC 3339 time, falls on the UTC date
// given as "YYYY-MM-DD". Events without a readable startTime are not on any
// day.
var findEventsOnDay = &ManualFunc{
	Name:  "find_events_on_day",
	Usage: `function: find_events_on_day, function_args: ["2024-11-20"]`,
	CheckArgs: func(args []jsonview.Value) error {
		if len(args) != 1 {
			return fmt.Errorf("takes 1 argument (a date), got %d", len(args))
		}
		_, err := dateArg(args[0])
		return err
	},
	Call: func(r *verifiers.Rollout, args []jsonview.Value, dst []jsonview.Value) ([]jsonview.Value, error) {
		day, err := dateArg(args[0])
		if err != nil {
			return dst, err
		}
		events, err := table(r.Final, eventsTable, "final")
		if err != nil {
			return dst, err
		}
		for e := events.First(); e.Exists(); e = e.Next() {
			s, ok := e.Get("startTime").Str()
			if !ok {
				continue
			}
			t, err := time.Parse(time.RFC3339Nano, string(s))
			if err != nil {
				continue
			}
			if y, m, d := t.UTC().Date(); y == day.Year() && m == day.Month() && d == day.Day() {
				dst = append(dst, e)
			}
		}
		return dst, nil
	},
}

var eventsTable = []string{"events"}

// dateArg reads a "YYYY-MM-DD" argument.
func dateArg(v jsonview.Value) (time.Time, error) {
	s, ok := v.Str()
	if !ok {
		return time.Time{}, errors.New("the date must be a string such as \"2024-11-20\"")
	}
	t, err := time.Parse(time.DateOnly, string(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("date %q is not YYYY-MM-DD", s)
	}
	return t, nil
}
