package jsonview

import (
	"bytes"
	"slices"
)

// Equal reports whether a and b are equal as JSON values: numbers by exact
// value (1 equals 1.0), strings, booleans and null by identity, arrays by
// length and element, objects by key set and value, key order ignored.
// Missing equals only Missing.
//
// An object is read as Get reads it: where a key repeats, its first
// occurrence is its value and the others are ignored, so {"a":1,"a":2}
// equals {"a":1}. The values may come from different Docs. Equal does not
// allocate, except to sort the members of large objects whose keys are not
// in the same order (or not the same); it recurses once per nesting level.
func Equal(a, b Value) bool {
	ka, kb := a.Kind(), b.Kind()
	if ka != kb {
		return false
	}
	if a == b {
		return true
	}
	switch ka {
	case Number:
		ra, rb := a.Raw(), b.Raw()
		return bytes.Equal(ra, rb) || parseDecimal(ra).compare(parseDecimal(rb)) == 0
	case String:
		pa, pb := &a.d.nodes[a.i], &b.d.nodes[b.i]
		return compareBodies(a.d.data[pa.start+1:pa.end-1], pa.flags&flagStrEsc != 0,
			b.d.data[pb.start+1:pb.end-1], pb.flags&flagStrEsc != 0) == 0
	case Array:
		if a.Len() != b.Len() {
			return false
		}
		for x, y := a.First(), b.First(); x.Exists(); x, y = x.Next(), y.Next() {
			if !Equal(x, y) {
				return false
			}
		}
		return true
	case Object:
		return equalObjects(a, b)
	}
	return true // Missing, Null, False, True
}

// equalObjects compares two objects. It first walks them side by side,
// which decides the common case (same keys in the same order) in one pass,
// and falls back to lookups only when the key sequences differ.
func equalObjects(a, b Value) bool {
	na, nb := a.Len(), b.Len()
	if na == nb {
		if eq, decided := equalInOrder(a, b); decided {
			return eq
		}
	}
	if na*nb <= 32*32 {
		return equalByLookup(a, b)
	}
	return equalBySorting(a, b)
}

// equalInOrder compares two objects with as many members whose keys may be
// in the same order. decided is false if the key sequences differ.
func equalInOrder(a, b Value) (eq, decided bool) {
	for x, y := a.First(), b.First(); x.Exists(); x, y = x.Next(), y.Next() {
		if compareKeys(x, y) != 0 {
			return false, false
		}
		// A repeated key's later values do not count. The keys before x
		// and y are the same, so x is a first occurrence if and only if
		// y is.
		if !Equal(x, y) && firstOf(a, x) == x {
			return false, true
		}
	}
	return true, true
}

// equalByLookup compares two objects by looking each key up in the other:
// quadratic, for small objects.
func equalByLookup(a, b Value) bool {
	for x := a.First(); x.Exists(); x = x.Next() {
		if firstOf(a, x) != x {
			continue
		}
		if y := firstOf(b, x); !y.Exists() || !Equal(x, y) {
			return false
		}
	}
	for y := b.First(); y.Exists(); y = y.Next() {
		if !firstOf(a, y).Exists() {
			return false
		}
	}
	return true
}

// equalBySorting compares two large objects by sorting their members by
// key (stably, so that a repeated key's first occurrence leads its run) and
// merging.
func equalBySorting(a, b Value) bool {
	na, nb := a.Len(), b.Len()
	idx := make([]int32, 0, na+nb)
	for x := a.First(); x.Exists(); x = x.Next() {
		idx = append(idx, x.i)
	}
	for y := b.First(); y.Exists(); y = y.Next() {
		idx = append(idx, y.i)
	}
	ia, ib := idx[:na], idx[na:]
	slices.SortStableFunc(ia, func(p, q int32) int { return compareKeys(Value{a.d, p}, Value{a.d, q}) })
	slices.SortStableFunc(ib, func(p, q int32) int { return compareKeys(Value{b.d, p}, Value{b.d, q}) })
	i, j := 0, 0
	for i < len(ia) && j < len(ib) {
		x, y := Value{a.d, ia[i]}, Value{b.d, ib[j]}
		if compareKeys(x, y) != 0 || !Equal(x, y) {
			return false
		}
		for i++; i < len(ia) && compareKeys(x, Value{a.d, ia[i]}) == 0; i++ {
		}
		for j++; j < len(ib) && compareKeys(y, Value{b.d, ib[j]}) == 0; j++ {
		}
	}
	return i == len(ia) && j == len(ib)
}

// firstOf returns the first member of object obj whose key is m's key, or
// Missing.
func firstOf(obj, m Value) Value {
	for x := obj.First(); x.Exists(); x = x.Next() {
		if compareKeys(x, m) == 0 {
			return x
		}
	}
	return Value{}
}

// compareKeys compares the unescaped keys of two object members.
func compareKeys(x, y Value) int {
	px, py := &x.d.nodes[x.i], &y.d.nodes[y.i]
	return compareBodies(x.d.data[px.keyStart:px.keyEnd], px.flags&flagKeyEsc != 0,
		y.d.data[py.keyStart:py.keyEnd], py.flags&flagKeyEsc != 0)
}
