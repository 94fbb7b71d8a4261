package spec

// The functions spec expressions call besides CEL's own: object_contains,
// count, numbers_in and states_number.

import (
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/gavelhq/gavel/verifiers"
)

// celObjectContains implements object_contains(x, pattern): when x is a
// list, true when some element contains the pattern; otherwise whether x
// contains it (as contains: every key of an object pattern present with a
// containing value, anything else equal).
func celObjectContains(x, pattern ref.Val) ref.Val {
	if l, ok := x.(traits.Lister); ok {
		if cl, ok := l.(*celList); ok {
			if cp, ok := pattern.(*celObj); ok {
				for e := cl.v.First(); e.Exists(); e = e.Next() {
					if contains(e, cp.v) {
						return types.True
					}
				}
				return types.False
			}
		}
		it := l.Iterator()
		for it.HasNext() == types.True {
			if celContains(it.Next(), pattern) {
				return types.True
			}
		}
		return types.False
	}
	return types.Bool(celContains(x, pattern))
}

// celContains is containment over CEL values.
func celContains(v, pattern ref.Val) bool {
	if a, ok := v.(*celObj); ok {
		if b, ok := pattern.(*celObj); ok {
			return contains(a.v, b.v)
		}
	}
	pm, ok := pattern.(traits.Mapper)
	if !ok {
		return types.Equal(v, pattern) == types.True
	}
	vm, ok := v.(traits.Mapper)
	if !ok {
		return false
	}
	it := pm.Iterator()
	for it.HasNext() == types.True {
		k := it.Next()
		x, found := vm.Find(k)
		if !found || !celContains(x, pm.Get(k)) {
			return false
		}
	}
	return true
}

// celCount implements count(x): the size of a list or map, 0 for null.
func celCount(x ref.Val) ref.Val {
	if x == types.NullValue {
		return types.Int(0)
	}
	if s, ok := x.(traits.Sizer); ok {
		if _, isStr := x.(types.String); !isStr {
			return s.Size()
		}
	}
	return types.NewErr("count needs a list or a map, not %s", x.Type().TypeName())
}

// celNumbersIn implements numbers_in(text) with verifiers.NumbersIn.
func celNumbersIn(text ref.Val) ref.Val {
	s, ok := text.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(text)
	}
	nums := verifiers.NumbersIn(string(s))
	elems := make([]ref.Val, len(nums))
	for i, f := range nums {
		elems[i] = types.Double(f)
	}
	return types.NewRefValList(types.DefaultTypeAdapter, elems)
}

// celStatesNumber implements states_number(text, value[, tol]) with
// verifiers.StatesNumber.
func celStatesNumber(text, value, tol ref.Val) ref.Val {
	s, ok := text.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(text)
	}
	v, ok := celNumber(value)
	if !ok {
		return types.NewErr("states_number needs a number, not %s", value.Type().TypeName())
	}
	t, ok := celNumber(tol)
	if !ok {
		return types.NewErr("states_number needs a number tolerance, not %s", tol.Type().TypeName())
	}
	return types.Bool(verifiers.StatesNumber(string(s), v, t))
}

func celNumber(v ref.Val) (float64, bool) {
	switch x := v.(type) {
	case types.Double:
		return float64(x), true
	case types.Int:
		return float64(x), true
	case types.Uint:
		return float64(x), true
	}
	return 0, false
}
