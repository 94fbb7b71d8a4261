package verifiers

import (
	"sync"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// WorldMemo memoizes a function of an initial state per world. The rollouts
// of a task start from a handful of initial states, and what a verifier
// derives from the initial state alone (an expected total, the top rep) is
// the same for all of them. When the state is a shared document
// (jsonview.Doc.Share: the pipeline's cache of repeated initial states, a
// tasks table), its identity stands for its content and f runs once per
// world; otherwise f runs every time. f must be a pure function of the
// state, and its result must be safe to share between goroutines (it may
// hold Values of the shared state). A verifier using a WorldMemo sets
// Verifier.SharesWorlds.
//
// The zero WorldMemo is ready to use and safe for concurrent use.
type WorldMemo[T any] struct {
	mu sync.RWMutex
	m  map[jsonview.Value]T
}

// worldMemoSize bounds the worlds a WorldMemo keeps; when full, it starts
// over. Each entry keeps its world's shared document alive.
const worldMemoSize = 1024

// Get returns f(state), computed once per shared state.
func (w *WorldMemo[T]) Get(state jsonview.Value, f func(jsonview.Value) T) T {
	if !state.Shared() {
		return f(state)
	}
	w.mu.RLock()
	v, ok := w.m[state]
	w.mu.RUnlock()
	if ok {
		return v
	}
	v = f(state) // outside the lock: two goroutines may both compute it
	w.mu.Lock()
	if w.m == nil || len(w.m) >= worldMemoSize {
		w.m = make(map[jsonview.Value]T)
	}
	w.m[state] = v
	w.mu.Unlock()
	return v
}
