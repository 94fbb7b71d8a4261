package spec

// Hoisting: the work an expression does on the initial state alone.
//
// Expressions derive expectations from the initial state ("the deals the
// departed rep owned"), usually with a comprehension, and read the final
// state against them. Every rollout of a world has the same initial state,
// so that part of the work has the same result for all of them. At load,
// each expression's maximal subexpressions that read only `initial` and
// `task` and contain a comprehension are compiled into programs of their
// own, and the expression is rewritten to read their values as variables:
//
//	size(initial.deals.filter(d, d.owner == "A")) == size(final.deals)
//	  becomes  size(__gavel_h0) == size(final.deals)
//	  with     __gavel_h0 = initial.deals.filter(d, d.owner == "A")
//
// A hoisted value is computed when the expression first reads it, at most
// once per evaluation. When the rollout's initial state and task row are
// shared documents (jsonview.Doc.Share: the pipeline's cache of repeated
// initial states, a tasks table), their identity stands for their content
// and the value is memoized per world, so each world computes it once.
//
// Results are unchanged: CEL is pure, a hoisted value is evaluated with
// the same variables it would have seen in place, a short-circuit that
// skipped the work in place skips it here too (values are computed when
// read), an error value stays an error value where it is read, and a
// hoisted evaluation that exceeds the cost limit fails the whole
// expression. What changes is the cost accounting: each hoisted part has a
// cost limit of its own and is charged once per evaluation (or world), not
// every time the work would have run in place, so an expression just over
// the limit without hoisting may stay under it with hoisting. The limit
// exists to stop runaway expressions, and every evaluation stays bounded:
// at most CostLimit for the rest of the expression and for each hoisted
// part.
//
// The rewrite goes through CEL's own unparser and compiler: the rewritten
// text is compiled in the verifier's environment extended with the hoisted
// variables, typed as the subexpressions were, so that overloads resolve as
// before. If any step fails, the expression is compiled as written.

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/gavelhq/gavel/verifiers"
)

// hoistPrefix names the hoisted variables. User expressions cannot name
// them: they are compiled in an environment that does not declare them.
const hoistPrefix = "__gavel_h"

// hoisted is the hoisted part of one program.
type hoisted struct {
	progs []*program // compiled over initial and task
	memo  verifiers.WorldMemo[*hoistMemo]
}

// hoistMemo holds the hoisted values of one world, each computed once,
// when first read.
type hoistMemo struct {
	once []sync.Once
	vals []hoistVal
}

// hoistVal is one hoisted value. Its wrappers live in a frozen scratch of
// their own, so rollouts of the world may read it concurrently.
type hoistVal struct {
	v            ref.Val
	costExceeded bool
}

// hoistExpr rewrites the checked expression a, compiled in env, to read its
// initial-only subexpressions from hoisted variables, and plans it. It
// returns a nil program when there is nothing to hoist or a step fails;
// touched reports whether a was changed on the way.
func hoistExpr(env *cel.Env, a *cel.Ast) (prg cel.Program, h *hoisted, touched bool) {
	native := a.NativeRep()
	info := native.SourceInfo()
	facts := map[int64]exprFacts{}
	if root := analyze(native.Expr(), nil, facts); slices.Contains(root.other, "?") {
		return nil, nil, touched // a name the rewrite could capture
	}
	var picks []ast.Expr
	pickHoists(native, native.Expr(), facts, &picks)
	if len(picks) == 0 {
		return nil, nil, touched
	}
	lenv, err := letEnv()
	if err != nil {
		return nil, nil, touched
	}
	h = &hoisted{}
	vars := make([]cel.EnvOption, len(picks))
	for i, e := range picks {
		text, err := cel.ExprToString(e, info)
		if err != nil {
			return nil, nil, touched
		}
		sub, iss := lenv.Compile(text)
		if iss.Err() != nil {
			return nil, nil, touched
		}
		subPrg, err := lenv.Program(sub, celProgramOptions...)
		if err != nil {
			return nil, nil, touched
		}
		h.progs = append(h.progs, &program{prg: subPrg, src: text})
		t := native.GetType(e.ID())
		if t == nil {
			t = types.DynType
		}
		vars[i] = cel.Variable(hoistPrefix+strconv.Itoa(i), t)
	}
	// The rewrite mutates a, which the caller discards.
	touched = true
	fac := ast.NewExprFactory()
	for i, e := range picks {
		id, name := e.ID(), hoistPrefix+strconv.Itoa(i)
		e.SetKindCase(fac.NewIdent(id, name))
		info.ClearMacroCall(id)
		for _, call := range info.MacroCalls() {
			replaceID(call, id, name, fac)
		}
	}
	text, err := cel.ExprToString(native.Expr(), info)
	if err != nil {
		return nil, nil, touched
	}
	for i := range picks {
		if !containsIdent(text, hoistPrefix+strconv.Itoa(i)) {
			return nil, nil, touched
		}
	}
	henv, err := env.Extend(vars...)
	if err != nil {
		return nil, nil, touched
	}
	out, iss := henv.Compile(text)
	if iss.Err() != nil {
		return nil, nil, touched
	}
	if prg, err = henv.Program(out, celProgramOptions...); err != nil {
		return nil, nil, touched
	}
	return prg, h, touched
}

// exprFacts is what one subexpression reads.
type exprFacts struct {
	world bool     // reads initial or task
	other []string // reads these other free variables
	comp  bool     // holds a comprehension
}

// analyze records the facts of e and every subexpression in facts. scope
// holds the comprehension variables bound around e: an identifier named
// initial or task that one of them binds is that variable, not the state.
func analyze(e ast.Expr, scope []string, facts map[int64]exprFacts) exprFacts {
	var f exprFacts
	add := func(c exprFacts) {
		f.world = f.world || c.world
		f.comp = f.comp || c.comp
		f.other = append(f.other, c.other...)
	}
	switch e.Kind() {
	case ast.IdentKind:
		name := e.AsIdent()
		switch {
		case strings.HasPrefix(name, hoistPrefix):
			f.other = []string{"?"} // would be captured by the rewrite
		case (name == "initial" || name == "task") && !slices.Contains(scope, name):
			f.world = true
		default:
			f.other = []string{name}
		}
	case ast.SelectKind, ast.CallKind, ast.ListKind, ast.MapKind, ast.StructKind:
		for _, c := range children(e) {
			add(analyze(c, scope, facts))
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		f.comp = true
		add(analyze(c.IterRange(), scope, facts))
		add(analyze(c.AccuInit(), scope, facts))
		bound := []string{c.IterVar(), c.AccuVar()}
		if c.HasIterVar2() {
			bound = append(bound, c.IterVar2())
		}
		for _, name := range bound {
			if strings.HasPrefix(name, hoistPrefix) {
				f.other = append(f.other, "?") // would capture a hoisted name
			}
		}
		inner := append(slices.Clip(scope), bound...)
		for _, part := range []ast.Expr{c.LoopCondition(), c.LoopStep(), c.Result()} {
			pf := analyze(part, inner, facts)
			f.world = f.world || pf.world
			f.comp = f.comp || pf.comp
			for _, name := range pf.other {
				if !slices.Contains(bound, name) {
					f.other = append(f.other, name)
				}
			}
		}
	case ast.LiteralKind:
	default:
		f.other = []string{"?"} // an expression kind this analysis does not know
	}
	facts[e.ID()] = f
	return f
}

// pickHoists collects the maximal subexpressions of e that read initial or
// task, nothing else, and hold a comprehension.
// A subexpression whose value is a type (type(x)) is not picked: a
// variable of type `type` would read as a type name.
func pickHoists(a *ast.AST, e ast.Expr, facts map[int64]exprFacts, picks *[]ast.Expr) {
	if f := facts[e.ID()]; f.world && f.comp && len(f.other) == 0 {
		if t := a.GetType(e.ID()); t == nil || t.Kind() != types.TypeKind {
			*picks = append(*picks, e)
			return
		}
	}
	for _, c := range children(e) {
		pickHoists(a, c, facts, picks)
	}
}

// children returns the direct subexpressions of e.
func children(e ast.Expr) []ast.Expr {
	var out []ast.Expr
	switch e.Kind() {
	case ast.SelectKind:
		out = append(out, e.AsSelect().Operand())
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			out = append(out, c.Target())
		}
		out = append(out, c.Args()...)
	case ast.ListKind:
		out = append(out, e.AsList().Elements()...)
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			m := en.AsMapEntry()
			out = append(out, m.Key(), m.Value())
		}
	case ast.StructKind:
		for _, en := range e.AsStruct().Fields() {
			out = append(out, en.AsStructField().Value())
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		out = append(out, c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result())
	}
	return out
}

// replaceID replaces the subexpression of e with the given id (a copy of
// it in a macro call's record, or a reference to a nested macro) by the
// identifier name.
func replaceID(e ast.Expr, id int64, name string, fac ast.ExprFactory) {
	if e == nil {
		return
	}
	if e.ID() == id {
		e.SetKindCase(fac.NewIdent(id, name))
		return
	}
	for _, c := range children(e) {
		replaceID(c, id, name, fac)
	}
}

// resolve returns hoisted value i for the activation's rollout.
func (h *hoisted) resolve(a *activation, i int) ref.Val {
	p := h.progs[i]
	hv, done := a.s.hoisted(p)
	if !done {
		if w := (verifiers.World{Initial: a.initial.v, Task: a.task.v}); w.Shared() {
			hv = h.memoized(w, i)
		} else {
			sub := &a.s.sub
			*sub = activation{s: a.s, initial: a.initial, task: a.task}
			hv = evalHoist(p, sub)
		}
		a.s.hoistDone = append(a.s.hoistDone, hoistDone{p: p, val: hv})
	}
	if hv.costExceeded {
		a.costExceeded = true
	}
	return hv.v
}

// memoized returns hoisted value i of a shared world, computing it once.
func (h *hoisted) memoized(w verifiers.World, i int) hoistVal {
	m := h.memo.Get(w, func(verifiers.World) *hoistMemo {
		return &hoistMemo{once: make([]sync.Once, len(h.progs)), vals: make([]hoistVal, len(h.progs))}
	})
	m.once[i].Do(func() {
		frozen := &celScratch{frozen: true} // no arena: values outlive it
		act := &activation{s: frozen, initial: frozen.obj(w.Initial), task: frozen.obj(w.Task)}
		m.vals[i] = evalHoist(h.progs[i], act)
	})
	return m.vals[i]
}

// hoisted returns the value of p when this evaluation has read it already.
func (c *celScratch) hoisted(p *program) (hoistVal, bool) {
	for _, done := range c.hoistDone {
		if done.p == p {
			return done.val, true
		}
	}
	return hoistVal{}, false
}

// hoistDone is a hoisted value computed during the current evaluation.
type hoistDone struct {
	p   *program
	val hoistVal
}

// evalHoist evaluates a hoisted program. An error is the value read in
// place of the subexpression, as an error value would have been.
func evalHoist(p *program, act *activation) hoistVal {
	out, _, err := p.prg.Eval(act)
	if err != nil {
		if costExceeded(err) {
			return hoistVal{v: types.NewErr("expression exceeded the cost limit (%d)", CostLimit), costExceeded: true}
		}
		if out != nil && types.IsError(out) {
			return hoistVal{v: out}
		}
		return hoistVal{v: types.NewErr("%v", err)}
	}
	return hoistVal{v: out}
}

// hoistIndex parses the index of a hoisted variable's name.
func hoistIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, hoistPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false // not a name hoistExpr writes
	}
	return n, true
}

// containsIdent reports whether text holds name as a whole identifier, not
// as the start of a longer one (__gavel_h1 in __gavel_h10).
func containsIdent(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		if end == len(text) || !isIdentByte(text[end]) {
			return true
		}
		i = end
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
