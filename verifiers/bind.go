package verifiers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A verifier's Tasks are task patterns (docs/verifiers.md, "Binding
// tasks"): a task id, bound as written; a prefix ending in "*"
// ("airline/*"), binding every task id that starts with the text before
// the star; or AllTasks. A rollout's task is
// bound by the verifier whose pattern is most specific: its id, else the
// longest prefix it starts with, else AllTasks.

// AllTasks is the task pattern that binds every task (`tasks: all` in a
// spec file).
const AllTasks = "*"

// CheckTaskPattern reports why p is not a task pattern: an empty id, a
// "*" anywhere but at the end, or more than one.
func CheckTaskPattern(p string) error {
	switch i := strings.IndexByte(p, '*'); {
	case p == "":
		return errors.New("a task id must not be empty")
	case i >= 0 && i != len(p)-1:
		return fmt.Errorf("task pattern %q: * may only end a pattern (airline/*), or stand alone for all tasks", p)
	}
	return nil
}

// MatchTask reports whether the task pattern p matches the task id task,
// whatever other verifiers bind.
func MatchTask(p, task string) bool {
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return strings.HasPrefix(task, prefix)
	}
	return p == task
}

// Binds reports whether one of v's task patterns matches task. Which
// verifier a run binds to the task is Bindings.Lookup's answer: a more
// specific pattern of another verifier wins.
func (v *Verifier) Binds(task string) bool {
	return slices.ContainsFunc(v.Tasks, func(p string) bool { return MatchTask(p, task) })
}

// Bindings maps task ids to the verifiers that bind them. It is built
// once and then read by every grading worker at once, without locks.
//
// A lookup is a map lookup for task ids bound as written; else one map
// lookup per distinct prefix length, longest first, of the task id's
// prefix of that length (so a lookup costs no allocation, and as many
// lookups as there are prefix lengths, however many prefixes); else the
// verifier of AllTasks. A cache of answers per task id was rejected: the
// lookups are already cheap, and a cache would need a lock or grow with
// every distinct task id of a run.
type Bindings struct {
	literal map[string]*Verifier
	prefix  map[string]*Verifier // by the prefix, without its "*"
	lengths []int                // the distinct prefix lengths, longest first
	all     *Verifier
}

// Bind returns the bindings of vs. A verifier id given twice, a task
// pattern that CheckTaskPattern refuses, or two verifiers with an equal
// pattern (the same task id, the same prefix, or both AllTasks) is an
// error naming both, with their sources.
func Bind(vs []*Verifier) (*Bindings, error) {
	ids := map[string]*Verifier{}
	b := &Bindings{literal: map[string]*Verifier{}, prefix: map[string]*Verifier{}}
	for _, v := range vs {
		if prev := ids[v.ID]; prev != nil {
			return nil, fmt.Errorf("verifier id %s is defined twice (%s and %s)", v.ID, prev.Source, v.Source)
		}
		ids[v.ID] = v
		for _, t := range v.Tasks {
			if err := CheckTaskPattern(t); err != nil {
				return nil, fmt.Errorf("verifier %s (%s): %w", v.ID, v.Source, err)
			}
			var prev *Verifier
			var what string
			switch prefix, ok := strings.CutSuffix(t, "*"); {
			case t == AllTasks:
				prev, what = b.all, "all tasks are"
				b.all = v
			case ok:
				prev, what = b.prefix[prefix], "task pattern "+t+" is"
				b.prefix[prefix] = v
				if prev == nil {
					b.lengths = append(b.lengths, len(prefix))
				}
			default:
				prev, what = b.literal[t], "task "+t+" is"
				b.literal[t] = v
			}
			if prev != nil {
				return nil, fmt.Errorf("%s bound by two verifiers: %s (%s) and %s (%s)", what, prev.ID, prev.Source, v.ID, v.Source)
			}
		}
	}
	slices.Sort(b.lengths)
	b.lengths = slices.Compact(b.lengths)
	slices.Reverse(b.lengths)
	return b, nil
}

// Lookup returns the verifier bound to task, or nil when none binds it
// (an empty task id, a missing task, has none; a nil Bindings binds
// nothing).
func (b *Bindings) Lookup(task string) *Verifier {
	if b == nil {
		return nil
	}
	if v := b.literal[task]; v != nil || task == "" {
		return v
	}
	for _, n := range b.lengths {
		if n <= len(task) {
			if v := b.prefix[task[:n]]; v != nil {
				return v
			}
		}
	}
	return b.all
}
