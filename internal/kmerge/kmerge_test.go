package kmerge

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

type run struct {
	id   int
	vals []int
	cur  int
}

func next(r *run) (bool, error) {
	if len(r.vals) == 0 {
		return false, nil
	}
	r.cur, r.vals = r.vals[0], r.vals[1:]
	return true, nil
}

func less(a, b *run) bool { return a.cur < b.cur }

func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var runs []*run
		var want []int
		for i := range rng.IntN(9) {
			vals := make([]int, rng.IntN(20))
			for j := range vals {
				vals[j] = rng.IntN(15)
			}
			slices.Sort(vals)
			want = append(want, vals...)
			runs = append(runs, &run{id: i, vals: vals})
		}
		slices.Sort(want)
		var got []int
		var ids []int
		err := Merge(runs, next, less, func(r *run) error {
			got = append(got, r.cur)
			ids = append(ids, r.id)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: got %v, want %v", trial, got, want)
		}
		// Ties go to the earlier run.
		for i := 1; i < len(got); i++ {
			if got[i] == got[i-1] && ids[i] < ids[i-1] {
				t.Fatalf("trial %d: equal records %d from run %d after run %d", trial, got[i], ids[i], ids[i-1])
			}
		}
	}
}

func TestMergeErrors(t *testing.T) {
	boom := errors.New("boom")
	runs := []*run{{vals: []int{1, 2}}, {vals: []int{3}}}
	calls := 0
	err := Merge(runs, func(r *run) (bool, error) {
		calls++
		if calls == 3 {
			return false, boom
		}
		return next(r)
	}, less, func(*run) error { return nil })
	if !errors.Is(err, boom) {
		t.Fatalf("next error: got %v, want %v", err, boom)
	}
	runs = []*run{{vals: []int{1, 2}}}
	err = Merge(runs, next, less, func(*run) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("emit error: got %v, want %v", err, boom)
	}
}
