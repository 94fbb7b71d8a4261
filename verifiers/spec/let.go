package spec

// Let bindings: a verifier's `let` maps names to CEL expressions over the
// initial state and the task only, such as the set of deals a task is
// about. Their values are variables of the verifier's other expressions
// (expr, detail and {expr: ...} values). Because they cannot read anything
// else, a value computed for one initial state (and task row) holds for
// every rollout that starts from it: values are memoized by the exact bytes
// of both, so a task whose rollouts share a world computes them once.
//
//	verifiers:
//	  - id: VER-002
//	    task: TASK-002
//	    let:
//	      S: 'initial.opportunities.transformList(k, v, v.ownerId == "USR-004", k)'
//	    checks:
//	      - {id: moved, type: expr, expr: 'S.all(k, final.opportunities[k].ownerId == "USR-003")'}
//
// `let` is gavel's own addition to the gym check objects, which have no
// way to share work between expressions (docs/verifiers.md lists it with
// the check types).
//
// Lets are the engine's one per-world memo. Rejected: hoisting, which
// rewrote every expression at load so that its parts reading only initial
// and task became programs of their own, memoized per shared world. On
// BenchmarkVER002 the same checks cost 239 allocations per rollout with
// hoisting (848 without) and 131 with lets, which were also the fastest
// (docs/verifiers.md, "Declarative verifiers"). Also rejected: keying the memo by the
// identity of shared jsonview Docs (verifiers.WorldMemo), which recomputes for
// every rollout whose initial state was indexed on its own, such as the
// first of each world in jsonview.Cache (192 allocations per rollout on the
// same benchmark).

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"regexp"
	"slices"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types/ref"
	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// letCacheSize bounds the memoized worlds of one verifier; when full, the
// cache starts over.
const letCacheSize = 4096

// letSet is a verifier's compiled lets and their memo.
type letSet struct {
	names []string
	progs []*program

	mu    sync.RWMutex
	cache map[uint64]*letValues
}

// letValues are the let values for one initial state and task row.
type letValues struct {
	set           *letSet
	initial, task []byte // copies: the world these values hold for
	vals          []jsonview.Value
	err           error // the first let that failed, for every rollout of the world
}

var (
	letName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	reserved = []string{"final", "initial", "output", "log", "task", "meta", "turns", "turn", "cel",
		"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
		"function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
	letSeed = maphash.MakeSeed()
)

// lets compiles a verifier's let mapping and sets the loader's CEL
// environment for the verifier's other expressions.
func (l *loader) lets(n *yaml.Node, what string) *letSet {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		l.problem(n, "let: {NAME: CEL expression over initial and task}", "let of %s must be a non-empty object, not %s", what, kindName(n))
		return nil
	}
	env, err := letEnv()
	if err != nil {
		l.problem(n, "", "CEL environment: %v", err)
		return nil
	}
	ls := &letSet{cache: map[uint64]*letValues{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		switch {
		case !letName.MatchString(k.Value):
			l.problem(k, "a name is letters, digits and _, not starting with a digit", "let name %q is not an identifier", k.Value)
			continue
		case slices.Contains(reserved, k.Value):
			l.problem(k, "choose another name", "let name %q is reserved", k.Value)
			continue
		case slices.Contains(ls.names, k.Value):
			l.problem(k, "remove one of them", "duplicate let name %q", k.Value)
			continue
		case !isString(v) || v.Value == "":
			l.problem(v, "", "let %s must be a CEL expression string, not %s", k.Value, kindName(v))
			continue
		}
		before := len(l.problems)
		p := l.compileIn(env, v, v.Value, false)
		if len(l.problems) > before {
			l.problems[len(l.problems)-1].Hint = "let expressions read only initial and task"
			continue
		}
		ls.names = append(ls.names, k.Value)
		ls.progs = append(ls.progs, p)
	}
	if len(ls.names) == 0 {
		return nil
	}
	base, err := celEnv()
	if err == nil {
		opts := make([]cel.EnvOption, len(ls.names))
		for i, name := range ls.names {
			opts[i] = cel.Variable(name, cel.DynType)
		}
		l.env, err = base.Extend(opts...)
	}
	if err != nil {
		l.problem(n, "", "let: %v", err)
		return nil
	}
	return ls
}

// values returns the let values for r's initial state and task, computing
// them on the first rollout of that world.
func (ls *letSet) values(r *verifiers.Rollout, s *scratch) *letValues {
	initial, task := r.Initial.Raw(), r.Task.Raw()
	var h maphash.Hash
	h.SetSeed(letSeed)
	h.Write(initial)
	h.WriteByte(0)
	h.Write(task)
	key := h.Sum64()
	ls.mu.RLock()
	lv := ls.cache[key]
	ls.mu.RUnlock()
	if lv != nil && bytes.Equal(lv.initial, initial) && bytes.Equal(lv.task, task) {
		return lv
	}
	lv = ls.compute(r, s)
	ls.mu.Lock()
	if len(ls.cache) >= letCacheSize {
		clear(ls.cache)
	}
	ls.cache[key] = lv
	ls.mu.Unlock()
	return lv
}

// compute evaluates every let for r. The values are kept as JSON in a
// document of their own, which rollouts of the world read concurrently.
func (ls *letSet) compute(r *verifiers.Rollout, s *scratch) *letValues {
	lv := &letValues{set: ls, initial: bytes.Clone(r.Initial.Raw()), task: bytes.Clone(r.Task.Raw())}
	text := []byte{'['}
	for i, p := range ls.progs {
		if i > 0 {
			text = append(text, ',')
		}
		err := p.eval(r, s, func(v ref.Val) error {
			var err error
			text, err = appendCEL(text, v)
			return err
		})
		if err != nil {
			lv.err = fmt.Errorf("let %s: %w", ls.names[i], err)
			return lv
		}
	}
	text = append(text, ']')
	root, err := new(jsonview.Doc).Parse(text)
	if err != nil {
		lv.err = fmt.Errorf("let values are not JSON: %w", err)
		return lv
	}
	for v := root.First(); v.Exists(); v = v.Next() {
		lv.vals = append(lv.vals, v)
	}
	return lv
}
