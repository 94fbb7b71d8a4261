package spec

// Collateral-damage checks: the `unchanged` check type and the CEL
// function changes(initial, final), both over verifiers.Changes.
//
//	- id: nothing-else-changed
//	  type: unchanged
//	  keys: {events: id}               # optional: the key of an array table
//	  allow:
//	    - events                       # any change in events is allowed,
//	    - table: contacts              # or only the changes in contacts
//	      where: change.kind == "updated" && change.before.email == change.after.email
//
// A change is a record {"table", "kind", "key", "before", "after"}: kind
// is "added", "removed" or "updated", key the row's member name or key
// value (null when it has none), before and after the row (null when
// absent). Allow filters see it as `change`, beside the variables of
// every expression. The check passes when every change is allowed by an
// item whose table is the change's table or an ancestor of it; its detail
// and actual list the unexpected changes, at most maxMatches of them.

import (
	"fmt"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// allowItem is one item of an unchanged check's allow list.
type allowItem struct {
	table string   // the dotted table path
	where *program // nil: every change in the table is allowed
}

// unchangedFields reads an unchanged check's keys and allow fields.
func (l *loader) unchangedFields(c *check, m map[string]*yaml.Node, what string) {
	if kn := m["keys"]; kn != nil {
		if kn.Kind != yaml.MappingNode {
			l.problem(kn, "keys: {TABLE: FIELD}, e.g. keys: {events: uid}", "keys of %s must be an object, not %s", what, kindName(kn))
		} else {
			c.changeOpts.Keys = map[string]string{}
			for i := 0; i+1 < len(kn.Content); i += 2 {
				k, v := resolve(kn.Content[i]), resolve(kn.Content[i+1])
				if _, err := parseFields(k.Value); err != nil || !isString(k) {
					l.problem(k, "a table is a dotted path such as crm.deals", "keys of %s: bad table %q", what, k.Value)
					continue
				}
				if !isString(v) || v.Value == "" {
					l.problem(v, "the name of the field that identifies a row, e.g. id", "the key of table %s must be a non-empty string, not %s", k.Value, kindName(v))
					continue
				}
				c.changeOpts.Keys[k.Value] = v.Value
			}
		}
	}
	an := m["allow"]
	if an == nil {
		return
	}
	if an.Kind != yaml.SequenceNode {
		l.problem(an, "allow: [TABLE, {table: TABLE, where: CEL}, ...]", "allow of %s must be a list, not %s", what, kindName(an))
		return
	}
	for _, n := range an.Content {
		n = resolve(n)
		var it allowItem
		tn := n
		if n.Kind == yaml.MappingNode {
			fm, ok := l.fields(n, "an allow item of "+what, "table", "where")
			if !ok {
				continue
			}
			_, tn = l.str(fm, n, "table", "an allow item of "+what, true)
			if tn == nil {
				continue
			}
			if src, wn := l.str(fm, n, "where", "an allow item of "+what, false); wn != nil {
				it.where = l.compileAllow(wn, src)
			}
		} else if !isString(n) {
			l.problem(n, "a table path, or {table: TABLE, where: CEL}", "an allow item of %s must be a table path or an object, not %s", what, kindName(n))
			continue
		}
		if _, err := parseFields(tn.Value); err != nil {
			l.problem(tn, "a table is a dotted path such as crm.deals", "allow table %q: %v", tn.Value, err)
			continue
		}
		it.table = tn.Value
		c.allow = append(c.allow, it)
		c.changeOpts.Tables = append(c.changeOpts.Tables, it.table)
	}
}

// compileAllow compiles an allow filter: a bool CEL expression that sees
// `change` besides the verifier's variables.
func (l *loader) compileAllow(n *yaml.Node, src string) *program {
	base := l.env
	if base == nil {
		var err error
		if base, err = celEnv(); err != nil {
			l.problem(n, "", "CEL environment: %v", err)
			return nil
		}
	}
	env, err := base.Extend(cel.Variable("change", cel.DynType))
	if err != nil {
		l.problem(n, "a let named change hides the change being filtered; rename it", "CEL environment: %v", err)
		return nil
	}
	return l.compileIn(env, n, src, true)
}

// gradeUnchanged runs an unchanged check.
func (c *check) gradeUnchanged(r *verifiers.Rollout, s *scratch, out verifiers.Check) verifiers.Check {
	changes, err := verifiers.Changes(r.Initial, r.Final, c.changeOpts)
	if err != nil {
		out.Status, out.Detail = verifiers.Error, err.Error()
		return out
	}
	unexpected, allowed := 0, 0
	var listed []byte // the actual: the first maxMatches unexpected changes
	var details []string
	for i := range changes {
		ch := &changes[i]
		ok, err := c.allowed(r, s, ch)
		if err != nil {
			out.Status, out.Detail = verifiers.Error, err.Error()
			return out
		}
		if ok {
			allowed++
			continue
		}
		if unexpected < maxMatches {
			if unexpected > 0 {
				listed = append(listed, ',')
			}
			listed = appendChange(listed, ch)
			details = append(details, describeChange(ch))
		}
		unexpected++
	}
	out.Actual = "[" + string(listed) + "]"
	out.Expected = "[]"
	if unexpected == 0 {
		out.Status = verifiers.Pass
		out.Detail = "no unexpected change (" + plural(allowed, "allowed change") + ")"
		return out
	}
	out.Status = verifiers.Fail
	out.Detail = plural(unexpected, "unexpected change") + ": " + strings.Join(details, "; ")
	if unexpected > maxMatches {
		out.Detail += "; and " + strconv.Itoa(unexpected-maxMatches) + " more"
	}
	return out
}

func plural(n int, what string) string {
	s := strconv.Itoa(n) + " " + what
	if n != 1 {
		s += "s"
	}
	return s
}

// describeChange says in a few words what changed: `removed events "EVT-2"`,
// `updated events "EVT-3" (title, startTime)`.
func describeChange(ch *verifiers.Change) string {
	s := ch.Kind.String() + " " + ch.Table
	if ch.Key != "" {
		s += " " + ch.Key
	}
	if fields := ch.ChangedFields(); len(fields) > 0 {
		s += " (" + strings.Join(fields, ", ") + ")"
	}
	return s
}

// allowed reports whether an allow item allows the change.
func (c *check) allowed(r *verifiers.Rollout, s *scratch, ch *verifiers.Change) (bool, error) {
	var record jsonview.Value
	for _, it := range c.allow {
		if !ch.InTable(it.table) {
			continue
		}
		if it.where == nil {
			return true, nil
		}
		if !record.Exists() {
			s.buf = appendChange(s.buf[:0], ch)
			v, err := s.changeDoc.Parse(s.buf)
			if err != nil {
				return false, fmt.Errorf("change record: %w", err)
			}
			record = v
		}
		var ok bool
		err := it.where.evalChange(r, s, record, func(v ref.Val) error {
			b, isBool := v.(types.Bool)
			if !isBool {
				return fmt.Errorf("evaluated to %s, not a bool", v.Type().TypeName())
			}
			ok = bool(b)
			return nil
		})
		if err != nil {
			return false, fmt.Errorf("allow %s where: %w", it.table, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// evalChange evaluates an allow filter with `change` bound to record.
func (p *program) evalChange(r *verifiers.Rollout, s *scratch, record jsonview.Value, use func(ref.Val) error) error {
	act := s.cel.bind(r)
	act.change = s.cel.obj(record)
	defer s.cel.reset()
	return p.run(act, use)
}

// appendChange appends a change record as JSON text.
func appendChange(b []byte, ch *verifiers.Change) []byte {
	b = append(b, `{"table":`...)
	b = jsonview.AppendJSONString(b, ch.Table)
	b = append(b, `,"kind":"`...)
	b = append(b, ch.Kind.String()...)
	b = append(b, `","key":`...)
	if ch.Key == "" {
		b = append(b, "null"...)
	} else {
		b = appendCompact(b, []byte(ch.Key))
	}
	b = append(b, `,"before":`...)
	b = appendRow(b, ch.Before)
	b = append(b, `,"after":`...)
	b = appendRow(b, ch.After)
	return append(b, '}')
}

func appendRow(b []byte, v jsonview.Value) []byte {
	if !v.Exists() {
		return append(b, "null"...)
	}
	return appendCompact(b, v.Raw())
}

// appendChangesByTable appends the changes as the value of changes():
// {TABLE: {"added": [...], "removed": [...], "updated": [...]}}, tables in
// the order of their first change.
func appendChangesByTable(b []byte, changes []verifiers.Change) []byte {
	b = append(b, '{')
	for i := 0; i < len(changes); {
		table := changes[i].Table
		j := i
		for j < len(changes) && changes[j].Table == table {
			j++
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonview.AppendJSONString(b, table)
		b = append(b, ':', '{')
		for k, kind := range []verifiers.ChangeKind{verifiers.Added, verifiers.Removed, verifiers.Updated} {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, kind.String()...)
			b = append(b, `":[`...)
			first := true
			for x := i; x < j; x++ {
				if changes[x].Kind != kind {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				b = appendChange(b, &changes[x])
			}
			b = append(b, ']')
		}
		b = append(b, '}')
		i = j
	}
	return append(b, '}')
}

// celChanges implements changes(initial, final[, keys]): the changes by
// table (see appendChangesByTable). keys maps table paths to key fields,
// as an unchanged check's keys do.
func celChanges(args ...ref.Val) ref.Val {
	var s *celScratch
	states := [2]jsonview.Value{}
	for i, a := range args[:2] {
		switch x := a.(type) {
		case *celObj:
			states[i], s = x.v, x.s
		case types.Null:
		default:
			v, err := celView(a)
			if err != nil {
				return types.NewErr("changes: %v", err)
			}
			states[i] = v
		}
	}
	var opts verifiers.ChangeOptions
	if len(args) == 3 {
		m, ok := args[2].(traits.Mapper)
		if !ok {
			return types.NewErr("changes: keys must be a map of table paths to key fields, not %s", args[2].Type().TypeName())
		}
		opts.Keys = map[string]string{}
		it := m.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, kok := k.(types.String)
			vs, vok := m.Get(k).(types.String)
			if !kok || !vok || vs == "" {
				return types.NewErr("changes: keys must map table paths to key field names")
			}
			opts.Keys[string(ks)] = string(vs)
		}
	}
	changes, err := verifiers.Changes(states[0], states[1], opts)
	if err != nil {
		return types.NewErr("changes: %v", err)
	}
	text := appendChangesByTable(nil, changes)
	d := new(jsonview.Doc)
	v, err := d.Parse(text)
	if err != nil {
		return types.NewErr("changes: %v", err)
	}
	if s == nil {
		s = new(celScratch)
	}
	return s.obj(v)
}

// celView converts a CEL value to a state value, through its JSON text.
func celView(v ref.Val) (jsonview.Value, error) {
	b, err := appendCEL(nil, v)
	if err != nil {
		return jsonview.Value{}, err
	}
	d := new(jsonview.Doc)
	return d.Parse(b)
}
