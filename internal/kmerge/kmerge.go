// Package kmerge merges sorted runs, the last step of every spill to disk
// in gavel: the rollout-id hashes of the parts of a run (duplicate ids)
// and the reward deltas of a partitioned diff (sums in base order).
package kmerge

// Merge merges the sorted runs of runs, each a cursor over its records.
// It advances every run once with next (false: the run is spent), then
// repeatedly calls emit with the run whose current record is least by
// less, ties going to the earlier run, and advances that run, until every
// run is spent. It holds nothing but runs, reordered in place; the first
// error of next or emit ends the merge.
func Merge[R any](runs []R, next func(R) (bool, error), less func(a, b R) bool, emit func(R) error) error {
	h := heap[R]{less: less}
	for i, r := range runs {
		ok, err := next(r)
		if err != nil {
			return err
		}
		if ok {
			h.items = append(h.items, item[R]{r, i})
		}
	}
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	for len(h.items) > 0 {
		top := h.items[0].run
		if err := emit(top); err != nil {
			return err
		}
		ok, err := next(top)
		if err != nil {
			return err
		}
		if !ok {
			last := len(h.items) - 1
			h.items[0] = h.items[last]
			h.items = h.items[:last]
		}
		h.down(0)
	}
	return nil
}

// item is a run in the heap with its place in the caller's list, which
// breaks ties so that a merge is the same whatever the heap's shape.
type item[R any] struct {
	run R
	pos int
}

type heap[R any] struct {
	items []item[R]
	less  func(a, b R) bool
}

func (h *heap[R]) before(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if h.less(a.run, b.run) {
		return true
	}
	if h.less(b.run, a.run) {
		return false
	}
	return a.pos < b.pos
}

// down moves the item at i down until neither child comes before it.
func (h *heap[R]) down(i int) {
	n := len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h.before(c+1, c) {
			c++
		}
		if !h.before(c, i) {
			return
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
}
