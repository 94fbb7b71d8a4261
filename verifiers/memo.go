package verifiers

import (
	"sync"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// World is where rollouts start: an initial state and a task row (either
// may be missing). The rollouts of a task start from a handful of worlds,
// and what a verifier derives from the world alone (an expected total, the
// top rep, a spec expression's set of deals) is the same for all of them.
type World struct{ Initial, Task jsonview.Value }

// Shared reports whether the world's documents are shared
// (jsonview.Doc.Share: the pipeline's cache of repeated initial states, a
// tasks table) or missing, so that the World's identity stands for its
// content.
func (w World) Shared() bool {
	return (!w.Initial.Exists() || w.Initial.Shared()) && (!w.Task.Exists() || w.Task.Shared())
}

// WorldMemo memoizes a function of a world. For a shared world f runs once
// (or, when goroutines race on a new world, once each); otherwise it runs
// every time. f must be a pure function of the world, and its result must
// be safe to share between goroutines (it may hold Values of the world's
// documents).
//
// The zero WorldMemo is ready to use and safe for concurrent use.
type WorldMemo[T any] struct {
	mu sync.RWMutex
	m  map[World]T
}

// worldMemoSize bounds the worlds a WorldMemo keeps; when full, it starts
// over. Each entry keeps its world's shared jsonview Docs alive.
const worldMemoSize = 1024

// Get returns f(w), computed once per shared world.
func (m *WorldMemo[T]) Get(w World, f func(World) T) T {
	if !w.Shared() {
		return f(w)
	}
	m.mu.RLock()
	v, ok := m.m[w]
	m.mu.RUnlock()
	if ok {
		return v
	}
	v = f(w) // outside the lock: two goroutines may both compute it
	m.mu.Lock()
	if m.m == nil || len(m.m) >= worldMemoSize {
		m.m = make(map[World]T)
	}
	m.m[w] = v
	m.mu.Unlock()
	return v
}
