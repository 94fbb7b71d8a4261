package verifiers

// Collateral damage: the rows an agent added, removed or updated anywhere
// in the state, not only where its task sent it (the CEL function `changes`
// and the spec check type `unchanged`; docs/verifiers.md).

import (
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// ChangeKind says how a row differs between the initial and the final
// state.
type ChangeKind uint8

// Change kinds.
const (
	Added ChangeKind = iota + 1
	Removed
	Updated
)

// String returns "added", "removed" or "updated".
func (k ChangeKind) String() string {
	switch k {
	case Added:
		return "added"
	case Removed:
		return "removed"
	case Updated:
		return "updated"
	}
	return "unknown"
}

// Change is one row that differs between the initial and the final state.
// Its values point into the states, like the Rollout they come from.
type Change struct {
	// Table is the table's dotted path in the state ("events",
	// "crm.deals").
	Table string
	// Kind says whether the row was added, removed or updated.
	Kind ChangeKind
	// Key identifies the row, as JSON text: the member name of a row of an
	// object table, the value of the key field of a row of an array
	// table; "" for a row that has none (an array row without the key
	// field, and a member of the state that is not a table).
	Key string
	// Before and After are the row in the initial and the final state;
	// Before is missing for an added row, After for a removed one.
	Before, After jsonview.Value
}

// ChangeOptions say where the tables of a state are. The zero value
// reads the state's own members as its tables, array rows keyed by "id".
type ChangeOptions struct {
	// Tables are the dotted paths of nested tables ("crm.deals"). The
	// objects on the way to one are not tables themselves: each of their
	// members is.
	Tables []string
	// Keys maps a table's dotted path to the field that identifies the
	// rows of an array table ("id" when the table is not named). A nested
	// path names a table as Tables does.
	Keys map[string]string
}

// DefaultKey is the field that identifies the rows of an array table when
// ChangeOptions.Keys does not name one.
const DefaultKey = "id"

// Changes lists the rows added, removed and updated between the initial
// and the final state, table by table, with values compared as JSON values
// (jsonview.Equal).
//
// A table is a member of the state (or, for the paths of opts, a nested
// member) whose value is an object, its rows being its members matched by
// member name (where a name repeats, its first member, as lookups read
// it), or an array of objects, its rows matched by their key field, rows
// with equal keys in order of appearance, rows without a key by value. A
// missing or null table has no rows; a row's position is not part of it.
// Any other member (a number, an array of scalars, a table that changed
// from object to array) is compared whole, as one row without a key.
//
// Changes come in a fixed order: tables in the initial state's member
// order, then the final state's new members; within a table, removed and
// updated rows in the initial state's order, then added rows in the final
// state's. A missing or null state has no tables; a state that is
// neither, nor an object, is an error.
func Changes(initial, final jsonview.Value, opts ChangeOptions) ([]Change, error) {
	for _, s := range []struct {
		v    jsonview.Value
		name string
	}{{initial, "initial"}, {final, "final"}} {
		switch s.v.Kind() {
		case jsonview.Missing, jsonview.Null, jsonview.Object:
		default:
			return nil, &stateKindError{s.name, s.v.Kind()}
		}
	}
	c := changer{keys: opts.Keys}
	for _, p := range opts.Tables {
		c.addContainers(p)
	}
	for p := range opts.Keys {
		c.addContainers(p)
	}
	c.walk("", initial, final)
	return c.out, nil
}

type stateKindError struct {
	state string
	kind  jsonview.Kind
}

func (e *stateKindError) Error() string {
	return e.state + " state is " + e.kind.String() + ", not an object"
}

// changer collects the changes of one comparison.
type changer struct {
	keys       map[string]string
	containers map[string]bool // strict prefixes of the nested tables' paths
	out        []Change
}

func (c *changer) addContainers(path string) {
	for i := 0; i < len(path); i++ {
		if path[i] == '.' {
			if c.containers == nil {
				c.containers = map[string]bool{}
			}
			c.containers[path[:i]] = true
		}
	}
}

// walk compares the members of two objects (either may be missing or
// null) as tables.
func (c *changer) walk(prefix string, a, b jsonview.Value) {
	la, lb := newLookup(a), newLookup(b)
	for m := a.First(); m.Exists(); m = m.Next() {
		k := m.Key()
		if la.isFirst(m, k) {
			c.member(join(prefix, k), m, lb.get(k))
		}
	}
	for m := b.First(); m.Exists(); m = m.Next() {
		k := m.Key()
		if lb.isFirst(m, k) && !la.get(k).Exists() {
			c.member(join(prefix, k), jsonview.Value{}, m)
		}
	}
}

// lookup finds the members of an object by name as Get does (the first
// member of a name), through a map for large objects, so that comparing
// two tables of n rows takes O(n), not O(n²).
type lookup struct {
	obj     jsonview.Value
	members map[string]jsonview.Value
}

// lookupMap is the size from which a lookup builds a map.
const lookupMap = 32

func newLookup(obj jsonview.Value) lookup {
	l := lookup{obj: obj}
	if n := obj.Len(); n > lookupMap {
		l.members = make(map[string]jsonview.Value, n)
		for m := obj.First(); m.Exists(); m = m.Next() {
			k := m.Key()
			if _, dup := l.members[string(k)]; !dup {
				l.members[string(k)] = m
			}
		}
	}
	return l
}

func (l lookup) get(k []byte) jsonview.Value {
	if l.members != nil {
		return l.members[string(k)]
	}
	return l.obj.GetBytes(k)
}

// isFirst reports whether m, a member named k, is the member lookups find.
func (l lookup) isFirst(m jsonview.Value, k []byte) bool {
	return l.get(k).Offset() == m.Offset()
}

func join(prefix string, k []byte) string {
	if prefix == "" {
		return string(k)
	}
	return prefix + "." + string(k)
}

// tableKind classifies a member: no rows, an object table, an array table,
// or a value compared whole.
type tableKind uint8

const (
	noRows tableKind = iota
	objectTable
	arrayTable
	wholeValue
)

func kindOf(v jsonview.Value) tableKind {
	switch v.Kind() {
	case jsonview.Missing, jsonview.Null:
		return noRows
	case jsonview.Object:
		return objectTable
	case jsonview.Array:
		for e := v.First(); e.Exists(); e = e.Next() {
			if e.Kind() != jsonview.Object {
				return wholeValue
			}
		}
		return arrayTable
	}
	return wholeValue
}

// both reports whether two members are tables of kind t, or one of them
// has no rows.
func both(ka, kb, t tableKind) bool {
	return (ka == t || ka == noRows) && (kb == t || kb == noRows)
}

// member compares the member at path of the two states.
func (c *changer) member(path string, a, b jsonview.Value) {
	ka, kb := kindOf(a), kindOf(b)
	if c.containers[path] && ka <= objectTable && kb <= objectTable {
		c.walk(path, a, b)
		return
	}
	if jsonview.Equal(a, b) {
		return
	}
	switch {
	case ka == noRows && kb == noRows:
		// null and missing: neither has rows.
	case both(ka, kb, objectTable):
		c.objectRows(path, a, b)
	case both(ka, kb, arrayTable):
		key := c.keys[path]
		if key == "" {
			key = DefaultKey
		}
		c.arrayRows(path, key, a, b)
	default:
		ch := Change{Table: path, Kind: Updated, Before: a, After: b}
		switch {
		case !a.Exists():
			ch.Kind = Added
		case !b.Exists():
			ch.Kind = Removed
		}
		c.out = append(c.out, ch)
	}
}

// objectRows compares two object tables, rows matched by member name.
func (c *changer) objectRows(path string, a, b jsonview.Value) {
	la, lb := newLookup(a), newLookup(b)
	for m := a.First(); m.Exists(); m = m.Next() {
		k := m.Key()
		if !la.isFirst(m, k) {
			continue
		}
		switch after := lb.get(k); {
		case !after.Exists():
			c.out = append(c.out, Change{Table: path, Kind: Removed, Key: keyJSON(k), Before: m})
		case !jsonview.Equal(m, after):
			c.out = append(c.out, Change{Table: path, Kind: Updated, Key: keyJSON(k), Before: m, After: after})
		}
	}
	for m := b.First(); m.Exists(); m = m.Next() {
		k := m.Key()
		if lb.isFirst(m, k) && !la.get(k).Exists() {
			c.out = append(c.out, Change{Table: path, Kind: Added, Key: keyJSON(k), After: m})
		}
	}
}

func keyJSON(k []byte) string { return string(jsonview.AppendJSONString(nil, k)) }

// arrayRows compares two array tables, rows matched by the key field:
// rows with equal keys (jsonview.Equal) in order of appearance, rows without a
// string or number key by value.
func (c *changer) arrayRows(path, key string, a, b jsonview.Value) {
	before := rowsOf(a, key)
	after := rowsOf(b, key)
	match := make([]int, len(before)) // index in after + 1; 0: unmatched
	taken := make([]bool, len(after))
	queues := map[string][]int{}
	for i, r := range before {
		if r.key != "" {
			queues[r.key] = append(queues[r.key], i)
		}
	}
	for j, r := range after {
		if r.key == "" {
			continue
		}
		if q := queues[r.key]; len(q) > 0 {
			match[q[0]], taken[j] = j+1, true
			queues[r.key] = q[1:]
		}
	}
	for i, r := range before {
		if r.key != "" {
			continue
		}
		for j, s := range after {
			if !taken[j] && s.key == "" && jsonview.Equal(r.v, s.v) {
				match[i], taken[j] = j+1, true
				break
			}
		}
	}
	for i, r := range before {
		if match[i] == 0 {
			c.out = append(c.out, Change{Table: path, Kind: Removed, Key: r.text, Before: r.v})
		} else if s := after[match[i]-1]; !jsonview.Equal(r.v, s.v) {
			c.out = append(c.out, Change{Table: path, Kind: Updated, Key: r.text, Before: r.v, After: s.v})
		}
	}
	for j, s := range after {
		if !taken[j] {
			c.out = append(c.out, Change{Table: path, Kind: Added, Key: s.text, After: s.v})
		}
	}
}

// arrayRow is a row of an array table with its key: key is a canonical
// form for matching ("" for none), text the key as written.
type arrayRow struct {
	v         jsonview.Value
	key, text string
}

func rowsOf(t jsonview.Value, key string) []arrayRow {
	rows := make([]arrayRow, 0, t.Len())
	for e := t.First(); e.Exists(); e = e.Next() {
		r := arrayRow{v: e}
		k := e.Get(key)
		switch k.Kind() {
		case jsonview.String:
			s, _ := k.Str()
			r.key, r.text = "s"+string(s), string(k.Raw())
		case jsonview.Number:
			// Integers however written (7, 7.0, 0.7e1) share one form;
			// other numbers go through float64.
			if n, ok := k.Int(); ok {
				r.key = "n" + strconv.FormatInt(n, 10)
			} else {
				f, _ := k.Float()
				r.key = "f" + strconv.FormatFloat(f, 'g', -1, 64)
			}
			r.text = string(k.Raw())
		}
		rows = append(rows, r)
	}
	return rows
}

// ChangedFields returns the members of an updated row whose values differ
// (added, removed or changed), in the initial row's order then the final
// row's; nil when either side is not an object.
func (ch Change) ChangedFields() []string {
	a, b := ch.Before, ch.After
	if a.Kind() != jsonview.Object || b.Kind() != jsonview.Object {
		return nil
	}
	la, lb := newLookup(a), newLookup(b)
	var fields []string
	for m := a.First(); m.Exists(); m = m.Next() {
		k := m.Key()
		if la.isFirst(m, k) && !jsonview.Equal(m, lb.get(k)) {
			fields = append(fields, string(k))
		}
	}
	for m := b.First(); m.Exists(); m = m.Next() {
		k := m.Key()
		if lb.isFirst(m, k) && !la.get(k).Exists() {
			fields = append(fields, string(k))
		}
	}
	return fields
}

// InTable reports whether the change is in the table at path or in a
// table nested below it.
func (ch Change) InTable(path string) bool {
	return ch.Table == path || strings.HasPrefix(ch.Table, path) && len(ch.Table) > len(path) && ch.Table[len(path)] == '.'
}
