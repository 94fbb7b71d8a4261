package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// checkKind is a check's type.
type checkKind uint8

const (
	kindState checkKind = iota
	kindLog
	kindSequential
	kindManual
	kindRubric
	kindExpr
	kindUnchanged
	kindMath
)

var checkKinds = map[string]checkKind{
	"state": kindState, "log": kindLog, "sequential": kindSequential,
	"manual": kindManual, "rubric": kindRubric, "expr": kindExpr,
	"unchanged": kindUnchanged, "math": kindMath,
}

// comparator is an assert's comparator.
type comparator uint8

const (
	cmpEq comparator = iota
	cmpNeq
	cmpGt
	cmpGte
	cmpLt
	cmpLte
	cmpIn
	cmpContains
	cmpRegex
	cmpDeepEqual
)

var comparators = map[string]comparator{
	"eq": cmpEq, "neq": cmpNeq, "gt": cmpGt, "gte": cmpGte, "lt": cmpLt, "lte": cmpLte,
	"in": cmpIn, "contains": cmpContains, "regex": cmpRegex, "deep_equal": cmpDeepEqual,
}

// function is an assert's function.
type function uint8

const (
	fnNone function = iota
	fnObjectContains
	fnCount
	fnSum
	fnMin
	fnMax
	fnExists
	fnGet
)

var functions = map[string]function{
	"object_contains": fnObjectContains, "count": fnCount, "sum": fnSum,
	"min": fnMin, "max": fnMax, "exists": fnExists, "get": fnGet,
}

// check is one compiled check.
type check struct {
	id, label string
	required  bool
	kind      checkKind

	table   []string // state: the dotted table path
	initial bool     // state: read the initial state

	manual *ManualFunc // manual
	args   []jsonview.Value

	steps     []jsonview.Value // sequential
	stepsText string

	rubric    string        // rubric
	query     string        // rubric: the instruction as text
	queryExpr *program      // rubric: or as a CEL expression
	context   []contextItem // rubric: named values shown to the judge

	expr, detail *program // expr

	allow      []allowItem             // unchanged
	changeOpts verifiers.ChangeOptions // unchanged: the tables the allow items and keys name

	gold, answer *program // math: the gold answer and the text to find the answer in
	precision    int      // math: decimal places for numbers

	asserts []*assert

	flag bool // a flag (flags:), not a check: an expr that raises it

	when   *program // a turn check: the turns it applies to (nil: all)
	turnOf *program // a trajectory check: the turn it is credited to (turn:)
}

// contextItem is one named CEL expression of a rubric's context.
type contextItem struct {
	name string
	prog *program
}

// assert is one compiled assert.
type assert struct {
	cmp     comparator
	cmpName string
	fn      function
	path    Path
	pattern jsonview.Value // object_contains

	value     jsonview.Value // a literal value
	valueText string         // its compact JSON text
	valueExpr *program       // or {expr: ...}
	re        *regexp.Regexp // regex with a literal pattern

	call string // the compared expression for details: "count(_result)"
}

// loader collects the problems of one file.
type loader struct {
	file     string
	data     []byte // the file's text
	problems Problems
	env      *cel.Env // the verifier's CEL environment (with its lets); nil: celEnv
	inTurn   bool     // compiling a turn check: turn is in scope
}

func (l *loader) problem(n *yaml.Node, hint, format string, args ...any) {
	p := Problem{File: l.file, Msg: fmt.Sprintf(format, args...), Hint: hint}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	l.problems = append(l.problems, p)
}

// fields checks that n is a mapping with known keys and returns its
// members by key. Unknown keys and repeated keys are problems.
func (l *loader) fields(n *yaml.Node, what string, known ...string) (map[string]*yaml.Node, bool) {
	if n.Kind != yaml.MappingNode {
		l.problem(n, "", "%s must be an object, not %s", what, kindName(n))
		return nil, false
	}
	m := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if _, dup := m[k.Value]; dup {
			l.problem(k, "remove one of them", "duplicate key %q in %s", k.Value, what)
			continue
		}
		if !slices.Contains(known, k.Value) {
			l.problem(k, "known fields: "+strings.Join(known, ", "), "unknown field %q in %s", k.Value, what)
			continue
		}
		m[k.Value] = v
	}
	return m, true
}

// str reads a required (or optional) string field.
func (l *loader) str(m map[string]*yaml.Node, parent *yaml.Node, key, what string, required bool) (string, *yaml.Node) {
	n := m[key]
	if n == nil {
		if required {
			l.problem(parent, "add "+key+": ...", "%s has no %s", what, key)
		}
		return "", nil
	}
	if !isString(n) || (required && n.Value == "") {
		l.problem(n, "", "%s of %s must be a non-empty string, not %s", key, what, kindName(n))
		return "", nil
	}
	return n.Value, n
}

// Parse reads one spec file's text and returns its verifiers; name is the
// file's path, used in Source and in problems. An invalid spec returns nil
// and a Problems.
func Parse(name string, data []byte) ([]*verifiers.Verifier, error) {
	vs, _, err := parse(name, data)
	return vs, err
}

// position is where a node starts in a spec file.
type position struct{ line, column int }

// parse is Parse, also returning where each verifier starts.
func parse(name string, data []byte) ([]*verifiers.Verifier, []position, error) {
	l := &loader{file: name, data: data}
	root, err := parseYAML(data)
	if err != nil {
		line, col, msg := syntaxError(data, err)
		l.problems = append(l.problems, Problem{File: name, Line: line, Column: col, Msg: "not valid YAML or JSON: " + msg})
		return nil, nil, l.problems
	}
	if root == nil {
		l.problems = append(l.problems, Problem{File: name, Msg: "empty spec file", Hint: "a spec file holds verifiers: [...]"})
		return nil, nil, l.problems
	}
	if root.Kind == yaml.SequenceNode {
		l.problem(root, `wrap the checks: {"verifiers": [{"id": ..., "task": ..., "name": ..., "checks": [...]}]}`, "the spec file must be an object holding verifiers, not a list")
		return nil, nil, l.problems
	}
	top, ok := l.fields(root, "the spec file", "verifiers")
	if !ok {
		return nil, nil, l.problems
	}
	list := top["verifiers"]
	if list == nil {
		l.problem(root, "a spec file holds verifiers: [...]", "the spec file has no verifiers")
		return nil, nil, l.problems
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		l.problem(list, "", "verifiers must be a non-empty list, not %s", kindName(list))
		return nil, nil, l.problems
	}
	var out []*verifiers.Verifier
	var at []position
	ids := map[string]*yaml.Node{}
	for _, vn := range list.Content {
		v := l.verifier(resolve(vn))
		if v == nil {
			continue
		}
		if prev := ids[v.ID]; prev != nil {
			l.problem(vn, "give each verifier its own id", "duplicate verifier id %q (also at line %d)", v.ID, prev.Line)
			continue
		}
		ids[v.ID] = vn
		out = append(out, v)
		at = append(at, position{vn.Line, vn.Column})
	}
	if len(l.problems) > 0 {
		return nil, nil, l.problems
	}
	return out, at, nil
}

// verifier compiles one verifier node; nil when it has problems.
func (l *loader) verifier(n *yaml.Node) *verifiers.Verifier {
	before := len(l.problems)
	m, ok := l.fields(n, "a verifier", "id", "name", "task", "tasks", "let", "checks", "flags", "description", "judge", "reward", "remote",
		"turn_checks", "turn_reward", "credit")
	if !ok {
		return nil
	}
	id, _ := l.str(m, n, "id", "a verifier", true)
	what := "verifier " + strconv.Quote(id)
	lets := l.lets(m["let"], what)
	defer func() { l.env = nil }()
	name, _ := l.str(m, n, "name", what, true)
	var tasks []string
	switch t, ts := m["task"], m["tasks"]; {
	case t != nil && ts != nil:
		l.problem(ts, "use task: for one task, tasks: for several", "%s has both task and tasks", what)
	case t != nil:
		tasks = l.taskPatterns([]*yaml.Node{t}, "task", what)
	case ts != nil && isString(ts) && (ts.Value == "all" || ts.Value == "*"):
		tasks = []string{verifiers.AllTasks}
	case ts != nil:
		if ts.Kind != yaml.SequenceNode || len(ts.Content) == 0 {
			l.problem(ts, "tasks: [A, B], tasks: [airline/*] or tasks: all", "tasks of %s must be a non-empty list of task ids or patterns, or all", what)
			break
		}
		tasks = l.taskPatterns(ts.Content, "tasks", what)
	default:
		l.problem(n, "add task: TASK-ID", "%s binds no task", what)
	}
	var checks []*check
	cn := m["checks"]
	var rs *verifiers.RemoteSettings
	if rn := m["remote"]; rn != nil {
		if cn != nil {
			l.problem(cn, "a remote verifier's checks are its service's answer: remove checks:", "%s has both remote and checks", what)
		}
		rs = l.remote(rn, what)
		if rs != nil {
			rs.RewardSet = m["reward"] != nil
		}
	} else if cn == nil && m["turn_checks"] == nil {
		l.problem(n, "add checks: [...]", "%s has no checks", what)
	} else if cn == nil {
	} else if cn.Kind != yaml.SequenceNode || len(cn.Content) == 0 {
		l.problem(cn, "", "checks of %s must be a non-empty list, not %s", what, kindName(cn))
	} else {
		checks = l.checkList(cn, what)
	}
	var flags []*check
	if fn := m["flags"]; fn != nil {
		if rs != nil {
			l.problem(fn, "a remote verifier's flags are its service's answer: remove flags: and set flags: true under remote:", "%s has both remote and flags", what)
		} else {
			flags = l.flagList(fn, what, checks)
		}
	}
	var turnChecks []*check
	if tn := m["turn_checks"]; tn != nil {
		switch {
		case rs != nil:
			l.problem(tn, "a remote verifier's checks are its service's answer: remove turn_checks:", "%s has both remote and turn_checks", what)
		case tn.Kind != yaml.SequenceNode || len(tn.Content) == 0:
			l.problem(tn, "", "turn_checks of %s must be a non-empty list, not %s", what, kindName(tn))
		default:
			l.inTurn = true
			turnChecks = l.checkList(tn, what+" (turn checks)")
			l.inTurn = false
			for _, tc := range turnChecks {
				if slices.ContainsFunc(checks, func(c *check) bool { return c.id == tc.id }) {
					l.problem(tn, "give each check of a verifier its own id", "turn check id %q of %s is also a check's id", tc.id, what)
				}
			}
		}
	}
	credit, turns := l.credit(m["credit"], what, checks, turnChecks)
	js, templateSum := l.judge(m["judge"], what)
	reward := l.reward(m["reward"], what, append(slices.Clip(checks), turnChecks...), rs != nil)
	var turnReward verifiers.Formula
	if trn := m["turn_reward"]; trn != nil {
		if !turns {
			l.problem(trn, "add turn_checks: [...], or turn: to a check", "%s has turn_reward but no turn is scored", what)
		}
		turnReward = l.reward(trn, what, append(slices.Clip(checks), turnChecks...), false)
	}
	if len(l.problems) > before {
		return nil
	}
	def, _, err := jsonText(n, true)
	if err != nil {
		l.problem(n, "", "%s: %v", what, err)
		return nil
	}
	judged := false
	for _, ch := range slices.Concat(checks, flags, turnChecks) {
		judged = judged || ch.kind == kindRubric
	}
	if templateSum != "" {
		// The template file's content is part of the verifier's behaviour.
		def = append(def, "\njudge template sha256:"+templateSum...)
	}
	grade := newGrader(append(checks, flags...), turnChecks, lets)
	if rs != nil {
		grade = remoteGrade
	}
	return &verifiers.Verifier{
		Remote:     rs,
		ID:         id,
		Name:       name,
		Tasks:      tasks,
		Grade:      grade,
		Source:     l.file + ":" + strconv.Itoa(n.Line),
		Definition: string(def),
		Judged:     judged,
		Flagged:    len(flags) > 0 || rs != nil && rs.Flags,
		Judge:      js,
		Reward:     reward,
		Turns:      turns,
		TurnReward: turnReward,
		Credit:     credit,
	}
}

// credit reads a verifier's credit: (attributed, last or none; absent:
// attributed) and reports whether the verifier scores turns: it has turn
// checks, a check with turn:, or credit: last.
func (l *loader) credit(n *yaml.Node, what string, checks, turnChecks []*check) (string, bool) {
	credited := slices.ContainsFunc(checks, func(c *check) bool { return c.turnOf != nil })
	credit := verifiers.CreditAttributed
	if n != nil {
		switch {
		case !isString(n):
			l.problem(n, "credit: attributed, credit: last or credit: none", "credit of %s must be a string, not %s", what, kindName(n))
		case n.Value == verifiers.CreditAttributed, n.Value == verifiers.CreditLast, n.Value == verifiers.CreditNone:
			credit = n.Value
		default:
			l.problem(n, "credit: attributed, credit: last or credit: none", "unknown credit %q of %s", n.Value, what)
		}
	}
	turns := len(turnChecks) > 0 || credited || credit == verifiers.CreditLast
	switch {
	case n != nil && !turns:
		l.problem(n, "add turn_checks: [...], or turn: to a check", "%s has credit but no turn is scored", what)
	case credit == verifiers.CreditNone && credited:
		l.problem(n, "remove turn: from the checks, or credit: none", "%s credits checks to turns with turn:, but credit is none", what)
	case credit == verifiers.CreditLast && credited:
		l.problem(n, "remove turn: from the checks, or credit: last", "%s credits checks to turns with turn:, but credit last puts every check on the last turn", what)
	}
	if credit == verifiers.CreditAttributed {
		credit = "" // the default, as Verifier.Credit writes it
	}
	return credit, turns
}

// turnFields reads a check's when: (turn checks: the turns it applies to)
// or turn: (trajectory checks: the turn it is credited to), and checks
// that a turn check's type applies to a turn.
func (l *loader) turnFields(c *check, m map[string]*yaml.Node, typ, what string) {
	if l.inTurn {
		switch c.kind {
		case kindExpr, kindRubric, kindMath:
		default:
			if m["type"] != nil {
				l.problem(m["type"], "a turn check is expr, rubric or math", "%s checks do not apply to a turn", typ)
			}
		}
		if tn := m["turn"]; tn != nil {
			l.problem(tn, "remove it: a turn check is credited to its own turn", "turn is not a field of turn checks")
		}
		if src, wn := l.str(m, nil, "when", what, false); wn != nil {
			c.when = l.compile(wn, src, true)
		}
		return
	}
	if wn := m["when"]; wn != nil {
		l.problem(wn, "when: limits a turn check (turn_checks:) to some turns", "when is not a field of checks")
	}
	if src, tn := l.str(m, nil, "turn", what, false); tn != nil {
		c.turnOf = l.compile(tn, src, false)
	}
}

// taskPatterns reads the task patterns of a verifier's field key (task or
// tasks): task ids, prefixes ending in "*", and "*" or all for every task
// (verifiers.CheckTaskPattern), all is stored as "*".
func (l *loader) taskPatterns(ns []*yaml.Node, key, verifier string) []string {
	var out []string
	for _, c := range ns {
		c = resolve(c)
		if !isString(c) || c.Value == "" {
			l.problem(c, "", "%s of %s: a task id must be a non-empty string, not %s", key, verifier, kindName(c))
			continue
		}
		p := c.Value
		if p == "all" {
			p = verifiers.AllTasks
		}
		if err := verifiers.CheckTaskPattern(p); err != nil {
			l.problem(c, "a task id, a prefix ending in * (airline/*), or all", "%s of %s: %v", key, verifier, err)
			continue
		}
		out = append(out, p)
	}
	return out
}

// reward reads a verifier's reward formula (absent: fraction); the checks
// a weighted formula names must be the verifier's. The formula is part of
// the verifier's node, and so of its canonical text and fingerprint.
func (l *loader) reward(n *yaml.Node, verifier string, checks []*check, remote bool) verifiers.Formula {
	if n == nil {
		return verifiers.Formula{}
	}
	const hint = `reward: fraction, reward: all, reward: {weighted: {check-id: 2, ...}} or reward: {expr: "..."}`
	text, bad, err := jsonText(n, false)
	if err != nil {
		l.problem(bad, hint, "reward of %s: %v", verifier, err)
		return verifiers.Formula{}
	}
	f, err := verifiers.ParseFormula(text)
	if err != nil {
		at := n
		if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
			// {weighted: ...} or {expr: ...}: point into it, at the first
			// weight that is not a number.
			at = resolve(n.Content[1])
			if at.Kind == yaml.MappingNode {
				for i := 1; i < len(at.Content); i += 2 {
					if w := resolve(at.Content[i]); w.ShortTag() != "!!int" && w.ShortTag() != "!!float" {
						at = w
						break
					}
				}
			}
		}
		l.problem(at, hint, "reward of %s: %v", verifier, err)
		return verifiers.Formula{}
	}
	if remote {
		return f // its checks are the service's: the names cannot be checked here
	}
	ids := make([]string, len(checks))
	for i, c := range checks {
		ids[i] = c.id
	}
	for _, id := range f.WeightedChecks() {
		if !slices.Contains(ids, id) {
			l.problem(weightKey(n, id), "its checks: "+strings.Join(ids, ", "), "reward of %s weighs unknown check %q", verifier, id)
		}
	}
	return f
}

// weightKey returns the key node of check id in a weighted reward formula
// node n, else n.
func weightKey(n *yaml.Node, id string) *yaml.Node {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return n
	}
	w := resolve(n.Content[1])
	for i := 0; i+1 < len(w.Content) && w.Kind == yaml.MappingNode; i += 2 {
		if k := resolve(w.Content[i]); k.Value == id {
			return k
		}
	}
	return n
}

// judge reads a verifier's judge settings: {model, threshold, template},
// the template a file path relative to the spec file. It returns the
// settings and the hex sha256 of the template file ("" when none).
func (l *loader) judge(n *yaml.Node, verifier string) (verifiers.JudgeSettings, string) {
	var js verifiers.JudgeSettings
	if n == nil {
		return js, ""
	}
	what := "judge of " + verifier
	m, ok := l.fields(n, what, "model", "threshold", "template")
	if !ok {
		return js, ""
	}
	if mn := m["model"]; mn != nil && mn.Kind == yaml.SequenceNode {
		// A list of models: each judges every rubric check.
		seen := map[string]bool{}
		for _, e := range mn.Content {
			if !isString(e) || e.Value == "" || seen[e.Value] {
				l.problem(e, "model: [gpt-4o-mini, qwen2.5-7b-instruct]", "each model of %s must be a distinct non-empty string, not %s", what, kindName(e))
				continue
			}
			seen[e.Value] = true
			js.Models = append(js.Models, e.Value)
		}
		if len(js.Models) == 0 {
			l.problem(mn, "model: [gpt-4o-mini, qwen2.5-7b-instruct]", "model of %s is an empty list", what)
		} else {
			js.Model = js.Models[0]
		}
		if len(js.Models) == 1 {
			js.Models = nil
		}
	} else {
		js.Model, _ = l.str(m, n, "model", what, false)
	}
	if tn := m["threshold"]; tn != nil {
		if tn.Kind != yaml.ScalarNode || (tn.ShortTag() != "!!float" && tn.ShortTag() != "!!int") || tn.Decode(&js.Threshold) != nil ||
			!(js.Threshold > 0 && js.Threshold <= 1) {
			l.problem(tn, "a score in (0, 1], e.g. threshold: 0.8", "threshold of %s must be a number in (0, 1], not %s", what, tn.Value)
		}
	}
	path, pn := l.str(m, n, "template", what, false)
	if pn == nil {
		return js, ""
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(l.file), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		l.problem(pn, "a template path is relative to the spec file", "template of %s: %v", what, err)
		return js, ""
	}
	js.Template = path
	sum := sha256.Sum256(data)
	return js, hex.EncodeToString(sum[:])
}

var checkFields = []string{"id", "type", "label", "optional", "asserts", "table", "state",
	"function", "function_args", "steps", "rubric", "query", "context", "expr", "detail", "allow", "keys", "gold", "answer", "precision", "description",
	"when", "turn"}

// check compiles one check node; nil when it has problems.
func (l *loader) check(n *yaml.Node, verifier string) *check {
	before := len(l.problems)
	m, ok := l.fields(n, "a check of "+verifier, checkFields...)
	if !ok {
		return nil
	}
	c := &check{required: true}
	c.id, _ = l.str(m, n, "id", "a check of "+verifier, true)
	what := "check " + strconv.Quote(c.id)
	typ, tn := l.str(m, n, "type", what, true)
	if tn != nil {
		k, ok := checkKinds[typ]
		if !ok {
			l.problem(tn, "one of state, log, sequential, manual, rubric, expr, unchanged, math", "unknown check type %q", typ)
			return nil
		}
		c.kind = k
	}
	c.label = c.id
	if s, _ := l.str(m, n, "label", what, false); s != "" {
		c.label = s
	}
	if on := m["optional"]; on != nil {
		var opt bool
		if on.Kind != yaml.ScalarNode || on.ShortTag() != "!!bool" || on.Decode(&opt) != nil {
			l.problem(on, "optional: true or optional: false", "optional of %s must be a boolean, not %s", what, kindName(on))
		}
		c.required = !opt
	}
	// Fields that belong to other types are problems: they would be ignored.
	allowed := map[checkKind][]string{
		kindState:      {"table", "state"},
		kindManual:     {"function", "function_args"},
		kindSequential: {"steps"},
		kindRubric:     {"rubric", "query", "context"},
		kindExpr:       {"expr", "detail"},
		kindUnchanged:  {"allow", "keys"},
		kindMath:       {"gold", "answer", "precision"},
	}
	for _, f := range []string{"table", "state", "function", "function_args", "steps", "rubric", "query", "context", "expr", "detail", "allow", "keys", "gold", "answer", "precision"} {
		if fn := m[f]; fn != nil && !slices.Contains(allowed[c.kind], f) {
			l.problem(fn, "remove it, or change the check's type", "%s is not a field of %s checks", f, typ)
		}
	}
	switch c.kind {
	case kindState:
		table, tn := l.str(m, n, "table", what, true)
		if tn != nil {
			fields, err := parseFields(table)
			if err != nil {
				l.problem(tn, "a table is a dotted path such as crm.deals", "table %q: %v", table, err)
			}
			c.table = fields
		}
		if s, sn := l.str(m, n, "state", what, false); sn != nil {
			switch s {
			case "initial":
				c.initial = true
			case "final":
			default:
				l.problem(sn, "state: initial or state: final", "state of %s must be initial or final, not %q", what, s)
			}
		}
	case kindManual:
		name, fnode := l.str(m, n, "function", what, true)
		if fnode != nil {
			f := lookupManual(name)
			if f == nil {
				l.problem(fnode, "known manual functions: "+strings.Join(manualNames(), ", "), "unknown manual function %q", name)
			} else {
				c.manual = f
			}
		}
		if an := m["function_args"]; an != nil {
			if an.Kind != yaml.SequenceNode {
				l.problem(an, "", "function_args of %s must be a list, not %s", what, kindName(an))
			} else {
				for _, a := range an.Content {
					text, bad, err := jsonText(a, false)
					if err != nil {
						l.problem(bad, "", "%v", err)
						continue
					}
					c.args = append(c.args, constant(text))
				}
			}
		}
		if c.manual != nil && len(l.problems) == before {
			if err := c.manual.checkArgs(c.args); err != nil {
				at := fnode
				if an := m["function_args"]; an != nil {
					at = an
				}
				l.problem(at, c.manual.Usage, "%s: %v", c.manual.Name, err)
			}
		}
	case kindSequential:
		sn := m["steps"]
		if sn == nil {
			l.problem(n, `add steps: [{"eventType": "click", ...}, ...]`, "%s has no steps", what)
		} else if sn.Kind != yaml.SequenceNode || len(sn.Content) == 0 {
			l.problem(sn, "", "steps of %s must be a non-empty list of patterns", what)
		} else {
			for _, s := range sn.Content {
				text, bad, err := jsonText(s, false)
				if err != nil {
					l.problem(bad, "", "%v", err)
					continue
				}
				c.steps = append(c.steps, constant(text))
			}
			text, _, _ := jsonText(sn, false)
			c.stepsText = string(text)
		}
	case kindRubric:
		c.rubric, _ = l.str(m, n, "rubric", what, true)
		l.rubricQuery(c, m["query"], what)
		l.rubricContext(c, m["context"], what)
	case kindExpr:
		src, en := l.str(m, n, "expr", what, true)
		if en != nil {
			c.expr = l.compile(en, src, true)
		}
		if src, dn := l.str(m, n, "detail", what, false); dn != nil {
			c.detail = l.compile(dn, src, false)
		}
	case kindUnchanged:
		l.unchangedFields(c, m, what)
	case kindMath:
		l.mathFields(c, m, n, what)
	}
	l.turnFields(c, m, typ, what)
	an := m["asserts"]
	switch {
	case an == nil:
		switch c.kind {
		case kindSequential, kindRubric, kindExpr, kindUnchanged, kindMath:
		default:
			l.problem(n, "add asserts: [{comparator: eq, value: ...}]", "%s has no asserts", what)
		}
	case an.Kind != yaml.SequenceNode:
		l.problem(an, "", "asserts of %s must be a list, not %s", what, kindName(an))
	case len(an.Content) == 0:
		l.problem(an, "add an assert, or remove asserts", "%s has an empty asserts list", what)
	default:
		if c.kind == kindRubric || c.kind == kindExpr || c.kind == kindUnchanged || c.kind == kindMath {
			l.problem(an, "remove asserts", "%s checks take no asserts", typ)
			break
		}
		for _, a := range an.Content {
			if as := l.assert(resolve(a), what); as != nil {
				c.asserts = append(c.asserts, as)
			}
		}
	}
	if len(l.problems) > before {
		return nil
	}
	return c
}

// rubricQuery reads a rubric's query: text, or {expr: CEL}.
func (l *loader) rubricQuery(c *check, n *yaml.Node, what string) {
	switch {
	case n == nil:
	case isString(n) && n.Value != "":
		c.query = n.Value
	case n.Kind == yaml.MappingNode && len(n.Content) == 2 && resolve(n.Content[0]).Value == "expr":
		src := resolve(n.Content[1])
		if !isString(src) || src.Value == "" {
			l.problem(src, "", "expr must be a non-empty string")
			return
		}
		c.queryExpr = l.compile(src, src.Value, false)
	default:
		l.problem(n, "query: TEXT or query: {expr: CEL}", "query of %s must be a non-empty string or {expr: ...}, not %s", what, kindName(n))
	}
}

// rubricContext reads a rubric's context: an object, or a list of
// one-member objects, of name: CEL expression.
func (l *loader) rubricContext(c *check, n *yaml.Node, what string) {
	if n == nil {
		return
	}
	const hint = "context: {NAME: CEL expression, ...}"
	var pairs []*yaml.Node
	switch {
	case n.Kind == yaml.MappingNode && len(n.Content) > 0:
		pairs = n.Content
	case n.Kind == yaml.SequenceNode && len(n.Content) > 0:
		for _, e := range n.Content {
			e = resolve(e)
			if e.Kind != yaml.MappingNode || len(e.Content) != 2 {
				l.problem(e, hint, "an item of the context of %s must be one NAME: expression, not %s", what, kindName(e))
				continue
			}
			pairs = append(pairs, e.Content...)
		}
	default:
		l.problem(n, hint, "context of %s must be a non-empty object or list, not %s", what, kindName(n))
		return
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		k, v := resolve(pairs[i]), resolve(pairs[i+1])
		switch {
		case !isString(k) || k.Value == "":
			l.problem(k, hint, "a context name of %s must be a non-empty string", what)
			continue
		case slices.ContainsFunc(c.context, func(ci contextItem) bool { return ci.name == k.Value }):
			l.problem(k, "remove one of them", "duplicate context name %q in %s", k.Value, what)
			continue
		case !isString(v) || v.Value == "":
			l.problem(v, hint, "context %s of %s must be a CEL expression string, not %s", k.Value, what, kindName(v))
			continue
		}
		if p := l.compile(v, v.Value, false); p != nil {
			c.context = append(c.context, contextItem{name: k.Value, prog: p})
		}
	}
}

// assert compiles one assert node; nil when it has problems.
func (l *loader) assert(n *yaml.Node, check string) *assert {
	before := len(l.problems)
	what := "an assert of " + check
	m, ok := l.fields(n, what, "comparator", "value", "function", "function_args")
	if !ok {
		return nil
	}
	a := &assert{}
	name, cn := l.str(m, n, "comparator", what, true)
	if cn != nil {
		c, ok := comparators[name]
		if !ok {
			l.problem(cn, "one of eq, neq, gt, gte, lt, lte, in, contains, regex, deep_equal", "unknown comparator %q", name)
		}
		a.cmp, a.cmpName = c, name
	}
	vn := m["value"]
	if vn == nil {
		l.problem(n, "add value: ...", "%s has no value", what)
	} else if vn.Kind == yaml.MappingNode && len(vn.Content) == 2 && resolve(vn.Content[0]).Value == "expr" {
		src := resolve(vn.Content[1])
		if !isString(src) || src.Value == "" {
			l.problem(src, "", "expr must be a non-empty string")
		} else {
			a.valueExpr = l.compile(src, src.Value, false)
			a.valueText = "{expr: " + strconv.Quote(src.Value) + "}"
		}
	} else {
		text, bad, err := jsonText(vn, false)
		if err != nil {
			l.problem(bad, "", "%v", err)
		} else {
			a.value, a.valueText = constant(text), string(text)
			switch {
			case a.cmp == cmpIn && a.value.Kind() != jsonview.Array:
				l.problem(vn, "in needs a list value: value: [a, b]", "in compares with a list, not %s", kindName(vn))
			case a.cmp == cmpRegex && a.value.Kind() != jsonview.String:
				l.problem(vn, "", "regex needs a string pattern, not %s", kindName(vn))
			case a.cmp == cmpRegex:
				s, _ := a.value.Str()
				re, err := regexp.Compile(string(s))
				if err != nil {
					l.problem(vn, "patterns are RE2 syntax", "bad regex: %v", err)
				}
				a.re = re
			}
		}
	}
	if fname, fnode := l.str(m, n, "function", what, false); fnode != nil {
		f, ok := functions[fname]
		if !ok {
			l.problem(fnode, "one of object_contains, count, sum, min, max, exists, get", "unknown function %q", fname)
			return nil
		}
		a.fn = f
		want := 1
		usage := fname + `(path): function_args: ["_result[*]"]`
		if f == fnObjectContains {
			want = 2
			usage = `object_contains(path, pattern): function_args: ["_result[*]", {"title": "Team Meeting"}]`
		}
		args := m["function_args"]
		if args == nil || args.Kind != yaml.SequenceNode || len(args.Content) != want {
			at := fnode
			if args != nil {
				at = args
			}
			l.problem(at, usage, "%s takes %d function_args", fname, want)
			return nil
		}
		pn := resolve(args.Content[0])
		if !isString(pn) {
			l.problem(pn, `a path such as "_result[*]"`, "the path of %s must be a string, not %s", fname, kindName(pn))
			return nil
		}
		p, err := ParsePath(pn.Value)
		if err != nil {
			l.problem(pn, `paths: _result, _result[*], _result[*].a.b, _result[N], _result[N].a.b`, "malformed path %q: %v", pn.Value, err)
			return nil
		}
		a.path = p
		a.call = fname + "(" + p.text + ")"
		if f == fnObjectContains {
			text, bad, err := jsonText(args.Content[1], false)
			if err != nil {
				l.problem(bad, "", "%v", err)
				return nil
			}
			a.pattern = constant(text)
			a.call = fname + "(" + p.text + ", " + string(text) + ")"
		}
	} else if an := m["function_args"]; an != nil {
		l.problem(an, "add function: ..., or remove function_args", "function_args without a function")
	} else {
		a.call = "_result"
	}
	if len(l.problems) > before {
		return nil
	}
	return a
}

// checkList compiles the checks of the sequence node cn, of a verifier
// named what in problems: each check once by id, and at least one required.
func (l *loader) checkList(cn *yaml.Node, what string) []*check {
	var checks []*check
	seen := map[string]int{}
	for _, c := range cn.Content {
		c = resolve(c)
		ch := l.check(c, what)
		if ch == nil {
			continue
		}
		if line, dup := seen[ch.id]; dup {
			l.problem(c, "give each check of a verifier its own id", "duplicate check id %q in %s (also at line %d)", ch.id, what, line)
			continue
		}
		seen[ch.id] = c.Line
		checks = append(checks, ch)
	}
	required := false
	for _, ch := range checks {
		required = required || ch.required
	}
	if len(checks) > 0 && !required && !l.inTurn { // turn checks may all be optional
		l.problem(cn, "a verifier needs a check without optional: true", "%s has no required check", what)
	}
	return checks
}

// flagFields are the fields of a flag.
var flagFields = []string{"id", "label", "expr", "detail", "rubric", "query", "context", "description"}

// flagList compiles the flags of the sequence node fn, of a verifier named
// what in problems whose checks are checks: each flag once by id, an id
// no check of the verifier has. A flag is raised when its expr is true;
// detail, a CEL expression, is its evidence.
func (l *loader) flagList(fn *yaml.Node, what string, checks []*check) []*check {
	if fn.Kind != yaml.SequenceNode || len(fn.Content) == 0 {
		l.problem(fn, "", "flags of %s must be a non-empty list, not %s", what, kindName(fn))
		return nil
	}
	seen := map[string]int{}
	var flags []*check
	for _, n := range fn.Content {
		n = resolve(n)
		before := len(l.problems)
		m, ok := l.fields(n, "a flag of "+what, flagFields...)
		if !ok {
			continue
		}
		c := &check{kind: kindExpr, flag: true}
		c.id, _ = l.str(m, n, "id", "a flag of "+what, true)
		fwhat := "flag " + strconv.Quote(c.id)
		c.label = c.id
		if s, _ := l.str(m, n, "label", fwhat, false); s != "" {
			c.label = s
		}
		switch en, rn := m["expr"], m["rubric"]; {
		case en != nil && rn != nil:
			l.problem(rn, "a flag is raised by an expr or by a judge's verdict on a rubric, not both", "%s has both expr and rubric", fwhat)
		case rn != nil:
			// Judged: raised when the judge's verdict passes.
			c.kind = kindRubric
			c.rubric, _ = l.str(m, n, "rubric", fwhat, true)
			l.rubricQuery(c, m["query"], fwhat)
			l.rubricContext(c, m["context"], fwhat)
			for _, f := range []string{"detail"} {
				if fn := m[f]; fn != nil {
					l.problem(fn, "remove it: a judged flag's detail is the judge's", "%s is not a field of rubric flags", f)
				}
			}
		case en == nil:
			l.problem(n, "add expr: (a CEL condition) or rubric: (judged)", "%s has no expr or rubric", fwhat)
		default:
			src, _ := l.str(m, n, "expr", fwhat, true)
			c.expr = l.compile(en, src, true)
			for _, f := range []string{"query", "context"} {
				if fn := m[f]; fn != nil {
					l.problem(fn, "query and context go with rubric:", "%s is not a field of expr flags", f)
				}
			}
			if src, dn := l.str(m, n, "detail", fwhat, false); dn != nil {
				c.detail = l.compile(dn, src, false)
			}
		}
		if len(l.problems) > before {
			continue
		}
		if line, dup := seen[c.id]; dup {
			l.problem(n, "give each flag of a verifier its own id", "duplicate flag id %q in %s (also at line %d)", c.id, what, line)
			continue
		}
		if strings.HasPrefix(c.id, verifiers.HealthPrefix) {
			l.problem(n, "choose another id", "flag id %q: ids starting %s are gavel's health flags", c.id, verifiers.HealthPrefix)
			continue
		}
		if slices.ContainsFunc(checks, func(ch *check) bool { return ch.id == c.id }) {
			l.problem(n, "a flag's id names it beside the checks: give it one no check has", "flag id %q of %s is also a check's id", c.id, what)
			continue
		}
		seen[c.id] = n.Line
		flags = append(flags, c)
	}
	return flags
}
