package spec

// CEL expressions (`expr` checks, `detail`, and `{expr: ...}` values)
// read the rollout through lazy wrappers over jsonview values, not
// through maps built from whole states:
//
//   - An object is a *celObj, a CEL map (traits.Mapper) whose field access
//     and `in` call jsonview's Get on the state bytes where they lie, and
//     whose iteration (all, exists, filter, map) yields its keys in
//     document order. An array is a *celList (traits.Lister). Scalars are
//     converted only when read: strings to types.String (a view of the
//     state bytes, not a copy, valid during the evaluation), numbers to
//     types.Double (so numbers compare by value: 1 == 1.0), booleans, null.
//   - The wrappers live in a per-Grade arena (celScratch), so that walking
//     into an object allocates nothing; it is reset after each evaluation,
//     whose result is converted to Go or JSON text before it is.
//   - A missing state, task or meta reads as an empty map, a missing log as
//     an empty list, so `has(final.events)` is false for a missing state.
//
// Rejected: converting states to map[string]any (or structpb) per rollout,
// which parses and allocates the whole state for expressions that usually
// read a few fields.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unsafe"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// celScratch is the per-Grade memory of CEL evaluations: the activation and
// an arena of wrappers.
type celScratch struct {
	act   activation
	objs  []celObj
	lists []celList
	lets  *letValues // the let values of the rollout being graded, if any
	// turn is the turn a turn check is grading (missing elsewhere).
	turn jsonview.Value
}

// arenaChunk is how many wrappers of a kind one arena block holds.
const arenaChunk = 256

func (c *celScratch) bind(r *verifiers.Rollout) *activation {
	c.act = activation{s: c}
	c.act.final = c.obj(r.Final)
	c.act.initial = c.obj(r.Initial)
	c.act.output = types.String(r.Output)
	c.act.log = c.list(r.Log)
	c.act.task = c.obj(r.Task)
	c.act.meta = c.obj(r.Meta)
	c.act.turns = c.list(r.Turns)
	if c.turn.Exists() {
		c.act.turn = c.obj(c.turn)
	}
	return &c.act
}

// reset forgets the wrappers of the last evaluation. Blocks that filled up
// were replaced by new ones and are left to the collector, since values of
// the evaluation could still point into them until it returned.
func (c *celScratch) reset() {
	c.objs = c.objs[:0]
	c.lists = c.lists[:0]
	c.act = activation{}
}

func (c *celScratch) obj(v jsonview.Value) *celObj {
	if len(c.objs) == cap(c.objs) {
		c.objs = make([]celObj, 0, arenaChunk)
	}
	c.objs = append(c.objs, celObj{v: v, s: c})
	return &c.objs[len(c.objs)-1]
}

func (c *celScratch) list(v jsonview.Value) *celList {
	if len(c.lists) == cap(c.lists) {
		c.lists = make([]celList, 0, arenaChunk)
	}
	c.lists = append(c.lists, celList{v: v, s: c})
	return &c.lists[len(c.lists)-1]
}

// wrap converts a state value to a CEL value.
func (c *celScratch) wrap(v jsonview.Value) ref.Val {
	switch v.Kind() {
	case jsonview.Missing, jsonview.Null:
		return types.NullValue
	case jsonview.True:
		return types.True
	case jsonview.False:
		return types.False
	case jsonview.Number:
		f, _ := v.Float()
		return types.Double(f)
	case jsonview.String:
		b, _ := v.Str()
		return types.String(unsafe.String(unsafe.SliceData(b), len(b)))
	case jsonview.Array:
		return c.list(v)
	}
	return c.obj(v)
}

// activation resolves the CEL variables of one rollout.
type activation struct {
	s                          *celScratch
	final, initial, task, meta *celObj
	log, turns                 *celList
	turn                       *celObj // a turn check's turn; nil elsewhere
	output                     types.String
	change                     *celObj // an allow filter's change; nil elsewhere
}

// resolveLet resolves a let name of the verifier being graded.
func (a *activation) resolveLet(name string) (any, bool) {
	lv := a.s.lets
	if lv == nil {
		return nil, false
	}
	for i, n := range lv.set.names {
		if n == name {
			if lv.err != nil {
				return types.NewErr("%v", lv.err), true
			}
			return a.s.wrap(lv.vals[i]), true
		}
	}
	return nil, false
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "final":
		return a.final, true
	case "initial":
		return a.initial, true
	case "output":
		return a.output, true
	case "log":
		return a.log, true
	case "task":
		return a.task, true
	case "meta":
		return a.meta, true
	case "turns":
		return a.turns, true
	case "turn":
		if a.turn != nil {
			return a.turn, true
		}
	case "change":
		if a.change != nil {
			return a.change, true
		}
	}
	return a.resolveLet(name)
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// celObj is a JSON object (or a missing value, read as an empty object) as
// a CEL map.
type celObj struct {
	v jsonview.Value
	s *celScratch
}

var (
	_ traits.Mapper   = (*celObj)(nil)
	_ traits.Lister   = (*celList)(nil)
	_ traits.Foldable = (*celObj)(nil)
	_ traits.Foldable = (*celList)(nil)
)

func (o *celObj) ConvertToNative(t reflect.Type) (any, error) { return convertNative(o.v, t) }

func (o *celObj) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return o
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t)
}

func (o *celObj) Equal(other ref.Val) ref.Val {
	if x, ok := other.(*celObj); ok {
		return types.Bool(jsonview.Equal(o.object(), x.object()))
	}
	m, ok := other.(traits.Mapper)
	if !ok {
		return types.False
	}
	if m.Size() != o.Size() {
		return types.False
	}
	it := m.Iterator()
	for it.HasNext() == types.True {
		k := it.Next()
		mine, found := o.Find(k)
		if !found || types.Equal(mine, m.Get(k)) != types.True {
			return types.False
		}
	}
	return types.True
}

// object returns the object, or an empty object for a missing value, so
// that two missing states compare equal as two empty objects do.
func (o *celObj) object() jsonview.Value {
	if !o.v.Exists() {
		return emptyObject
	}
	return o.v
}

var emptyObject = constant([]byte("{}"))

func (o *celObj) Type() ref.Type { return types.MapType }
func (o *celObj) Value() any     { return o.v }

func (o *celObj) Contains(key ref.Val) ref.Val {
	_, found := o.Find(key)
	return types.Bool(found)
}

func (o *celObj) Get(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if !found {
		if types.IsError(v) {
			return v
		}
		return types.NewErr("no such key: %v", key)
	}
	return v
}

func (o *celObj) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false // JSON objects have only string keys
	}
	v := o.v.Get(string(k))
	if !v.Exists() {
		return nil, false
	}
	return o.s.wrap(v), true
}

func (o *celObj) Size() ref.Val { return types.Int(o.v.Len()) }

// Fold implements traits.Foldable: comprehensions visit the members in
// document order without looking each key up again.
func (o *celObj) Fold(f traits.Folder) {
	keyOnly := false
	if kf, ok := f.(interface{ FoldKeyOnly() bool }); ok {
		keyOnly = kf.FoldKeyOnly()
	}
	for m := o.v.First(); m.Exists(); m = m.Next() {
		k := m.Key()
		key := types.String(unsafe.String(unsafe.SliceData(k), len(k)))
		var val ref.Val
		if !keyOnly {
			val = o.s.wrap(m)
		}
		if !f.FoldEntry(key, val) {
			return
		}
	}
}

func (o *celObj) Iterator() traits.Iterator {
	return &celIter{next: o.v.First(), keys: true, s: o.s}
}

// celList is a JSON array (or a missing value, read as an empty list) as a
// CEL list.
type celList struct {
	v jsonview.Value
	s *celScratch
}

func (l *celList) ConvertToNative(t reflect.Type) (any, error) { return convertNative(l.v, t) }

func (l *celList) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.ListType:
		return l
	case types.TypeType:
		return types.ListType
	}
	return types.NewErr("type conversion error from list to '%s'", t)
}

func (l *celList) Equal(other ref.Val) ref.Val {
	if x, ok := other.(*celList); ok {
		if l.v.Len() == 0 && x.v.Len() == 0 {
			return types.True
		}
		return types.Bool(jsonview.Equal(l.v, x.v))
	}
	o, ok := other.(traits.Lister)
	if !ok || o.Size() != l.Size() {
		return types.False
	}
	i := 0
	for e := l.v.First(); e.Exists(); e = e.Next() {
		if types.Equal(l.s.wrap(e), o.Get(types.Int(i))) != types.True {
			return types.False
		}
		i++
	}
	return types.True
}

func (l *celList) Type() ref.Type { return types.ListType }
func (l *celList) Value() any     { return l.v }

func (l *celList) Add(other ref.Val) ref.Val {
	elems := make([]ref.Val, 0, l.v.Len())
	for e := l.v.First(); e.Exists(); e = e.Next() {
		elems = append(elems, l.s.wrap(e))
	}
	return types.NewRefValList(types.DefaultTypeAdapter, elems).Add(other)
}

func (l *celList) Contains(elem ref.Val) ref.Val {
	for e := l.v.First(); e.Exists(); e = e.Next() {
		if types.Equal(l.s.wrap(e), elem) == types.True {
			return types.True
		}
	}
	return types.False
}

func (l *celList) Get(index ref.Val) ref.Val {
	var i int64
	switch x := index.(type) {
	case types.Int:
		i = int64(x)
	case types.Uint:
		i = int64(x)
	case types.Double:
		if float64(x) != math.Trunc(float64(x)) {
			return types.NewErr("unsupported index value %v in list", x)
		}
		i = int64(x)
	default:
		return types.MaybeNoSuchOverloadErr(index)
	}
	if i < 0 || i >= int64(l.v.Len()) {
		return types.NewErr("index out of bounds: %d", i)
	}
	return l.s.wrap(l.v.Index(int(i)))
}

func (l *celList) Size() ref.Val { return types.Int(l.v.Len()) }

// Fold implements traits.Foldable over (index, element) pairs.
func (l *celList) Fold(f traits.Folder) {
	i := 0
	for e := l.v.First(); e.Exists(); e = e.Next() {
		if !f.FoldEntry(types.Int(i), l.s.wrap(e)) {
			return
		}
		i++
	}
}

func (l *celList) Iterator() traits.Iterator {
	return &celIter{next: l.v.First(), s: l.s}
}

// celIter iterates the keys of an object or the elements of an array.
type celIter struct {
	next jsonview.Value
	keys bool
	s    *celScratch
}

func (it *celIter) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("iterator cannot be converted")
}
func (it *celIter) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("iterator cannot be converted")
}
func (it *celIter) Equal(ref.Val) ref.Val { return types.NewErr("iterators cannot be compared") }
func (it *celIter) Type() ref.Type        { return types.IteratorType }
func (it *celIter) Value() any            { return nil }

func (it *celIter) HasNext() ref.Val { return types.Bool(it.next.Exists()) }

func (it *celIter) Next() ref.Val {
	v := it.next
	if !v.Exists() {
		return types.NewErr("iterator exhausted")
	}
	it.next = v.Next()
	if it.keys {
		k := v.Key()
		return types.String(unsafe.String(unsafe.SliceData(k), len(k)))
	}
	return it.s.wrap(v)
}

// convertNative decodes a state value into a Go value of type t.
func convertNative(v jsonview.Value, t reflect.Type) (any, error) {
	raw := v.Raw()
	if raw == nil {
		raw = []byte("null")
	}
	p := reflect.New(t)
	if err := json.Unmarshal(raw, p.Interface()); err != nil {
		return nil, fmt.Errorf("convert to %s: %w", t, err)
	}
	return p.Elem().Interface(), nil
}

// appendCEL appends a CEL value as JSON text.
func appendCEL(b []byte, v ref.Val) ([]byte, error) {
	switch x := v.(type) {
	case *celObj:
		if !x.v.Exists() {
			return append(b, "{}"...), nil
		}
		return appendCompact(b, x.v.Raw()), nil
	case *celList:
		if !x.v.Exists() {
			return append(b, "[]"...), nil
		}
		return appendCompact(b, x.v.Raw()), nil
	case types.Bool:
		return strconv.AppendBool(b, bool(x)), nil
	case types.Int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case types.Uint:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case types.Double:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return b, fmt.Errorf("%v is not a JSON number", f)
		}
		if math.Abs(f) < 1e21 {
			return strconv.AppendFloat(b, f, 'f', -1, 64), nil
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64), nil
	case types.String:
		return jsonview.AppendJSONString(b, string(x)), nil
	case types.Null:
		return append(b, "null"...), nil
	case traits.Lister:
		b = append(b, '[')
		n := int64(x.Size().(types.Int))
		for i := int64(0); i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCEL(b, x.Get(types.Int(i))); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case traits.Mapper:
		// Keys are sorted: a CEL map's iteration order is not fixed, and
		// outputs must be byte-identical from run to run.
		var keys []string
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return b, fmt.Errorf("map key %v is not a string", k)
			}
			keys = append(keys, string(ks))
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(jsonview.AppendJSONString(b, k), ':')
			var err error
			if b, err = appendCEL(b, x.Get(types.String(k))); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	if types.IsError(v) {
		return b, fmt.Errorf("%v", v)
	}
	return b, fmt.Errorf("a %s value cannot be written as JSON", v.Type().TypeName())
}
