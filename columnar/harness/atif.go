package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// atif reads ATIF trajectories (Harbor's Agent Trajectory Interchange
// Format, schema versions ATIF-v1.0 to v1.7: the RFC 0001 of
// laude-institute/harbor and its Pydantic models, Trajectory, Step,
// ToolCall, Observation): one JSON document per file,
// as Harbor writes trajectory.json (indented), or JSON Lines of them. The
// two are told apart by the file's first object: a newline right after
// its opening brace starts an indented document, read value by value
// (several documents one after another are read in turn); otherwise each
// line is a document.
type atif struct {
	name    string
	dirTask string // the task id the file's directory gives, or ""
	br      *bufio.Reader
	decided bool
	lines   *messages // JSON Lines
	s       *stream   // documents
	n       int       // index of the next trajectory
}

func newATIF(name string, in io.Reader) *atif {
	br, _ := skipBOM(in)
	return &atif{name: name, dirTask: atifDirTask(name), br: br}
}

// harborTrialSuffix is the length of the random suffix Harbor gives a
// trial's directory, <task name>__<7 characters>.
const harborTrialSuffix = 7

// atifDirTask returns the task id a trajectory file's directory gives:
// the directory's name; in Harbor's layout, <trial>/agent/trajectory.json,
// the trial directory's name without its random suffix (__ and 7
// characters), which is the task's name (shortened, when long). Standard
// input, and a file in the current directory, give none.
func atifDirTask(name string) string {
	if name == "-" {
		return ""
	}
	dir := filepath.Dir(name)
	base := filepath.Base(dir)
	if base == "agent" {
		trial := filepath.Base(filepath.Dir(dir))
		if i := strings.LastIndex(trial, "__"); i > 0 && len(trial)-i-2 == harborTrialSuffix {
			trial = trial[:i]
		}
		base = trial
	}
	switch base {
	case ".", "..", "/", "":
		return ""
	}
	return base
}

// maxDecide bounds the first bytes decide looks at.
const maxDecide = 64 << 10

// decide tells JSON Lines from indented documents by the first bytes,
// read no further than needed (a stream's first line is not waited for).
func (x *atif) decide() {
	x.decided = true
	doc := false
	for n := 64; ; n *= 2 {
		p, err := x.br.Peek(min(n, maxDecide))
		found := false
		if doc, found = docStart(p); found || err != nil || n >= maxDecide {
			break
		}
	}
	if doc {
		x.s = newStream(x.name, x.br)
		return
	}
	x.lines = &messages{br: x.br, maxLine: defaultMaxLine}
}

// docStart reports, from the first bytes p of a file, whether it starts
// an indented document (or a value that is not an object, read as one);
// found is false when p ends before that is known.
func docStart(p []byte) (doc, found bool) {
	i := 0
	for i < len(p) && isSpace(p[i]) {
		i++
	}
	if i == len(p) {
		return false, false
	}
	if p[i] != '{' {
		return true, true
	}
	for j := i + 1; j < len(p); j++ {
		if p[j] == ' ' || p[j] == '\t' {
			continue
		}
		return p[j] == '\n' || p[j] == '\r', true
	}
	return false, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (x *atif) next(r *Reader) (Item, error) {
	if !x.decided {
		x.decide()
	}
	if x.lines != nil {
		return x.nextLine(r)
	}
	return x.nextDoc(r)
}

func (x *atif) nextLine(r *Reader) (Item, error) {
	root, where, err := x.lines.object(r)
	index := x.n
	if err != nil {
		var le *lineError
		if !errors.As(err, &le) {
			return Item{}, err
		}
		x.n++
		if index == 0 {
			if ferr := x.lines.firstLineHint(ATIF, fmt.Errorf("read %s: %s: %w", r.name, where, le.err)); ferr != nil {
				return Item{}, ferr
			}
		}
		return Item{Rollout: r.defaultID(index), Err: le.err, Where: where}, nil
	}
	x.n++
	if err := x.firstHint(r, root, index, where); err != nil {
		return Item{}, err
	}
	return r.atifTrajectory(x, root, index, where), nil
}

func (x *atif) nextDoc(r *Reader) (Item, error) {
	s := x.s
	c, ok := s.peek()
	if !ok {
		if s.err != nil {
			return Item{}, s.truncated("trajectory")
		}
		return Item{}, io.EOF
	}
	index := x.n
	x.n++
	start := s.offset()
	where := fmt.Sprintf("trajectory %d (byte %d)", index+1, start)
	if index == 0 && c != '{' {
		if looks, desc := guess(ATIF, s, nil); looks != "" {
			return Item{}, &FormatError{Err: fmt.Errorf("read %s: %s: not a JSON object", r.name, where), Looks: looks, Desc: desc}
		}
	}
	if err := s.value("trajectory"); err != nil {
		return Item{}, err
	}
	root, err := r.doc.Parse(s.raw)
	if err != nil {
		var se *jsonview.SyntaxError
		if errors.As(err, &se) {
			err = fmt.Errorf("invalid JSON at byte %d of the trajectory: %s", se.Offset, se.Msg)
		}
		return Item{Rollout: r.defaultID(index), Err: err, Where: where}, nil
	}
	if root.Kind() != jsonview.Object {
		return Item{Rollout: r.defaultID(index), Err: fmt.Errorf("%s, not a JSON object", root.Kind()), Where: where}, nil
	}
	if err := x.firstHint(r, root, index, where); err != nil {
		return Item{}, err
	}
	return r.atifTrajectory(x, root, index, where), nil
}

// firstHint returns a FormatError when root, trajectory index, is the
// file's first, has neither steps nor schema_version, and looks like
// another format's.
func (x *atif) firstHint(r *Reader, root jsonview.Value, index int, where string) error {
	if index != 0 || root.Get("steps").Exists() || root.Get("schema_version").Exists() {
		return nil
	}
	if looks, desc := otherFormat(ATIF, root); looks != "" {
		return &FormatError{Err: fmt.Errorf("read %s: %s: no steps or schema_version", r.name, where), Looks: looks, Desc: desc}
	}
	return nil
}

// atifTrajectory maps one trajectory:
//
//	rollout_id  session_id, else trajectory_id (v1.7), else <name>#<index>
//	task_id     extra.task_id, else the directory's (atifDirTask)
//	output      the text of the last agent step whose message has any
//	log         each step's tool_calls and observation results
//	model       agent.model_name
//	final_metrics, as it is
//	turns       (Reader.SetTurns) a turn per step whose source is agent
func (r *Reader) atifTrajectory(x *atif, t jsonview.Value, index int, where string) Item {
	var o object
	o.begin(r.out[:0])
	switch sid, tid := t.Get("session_id"), t.Get("trajectory_id"); {
	case sid.Kind() == jsonview.String && len(sid.Raw()) > 2:
		o.raw("rollout_id", sid)
	case tid.Kind() == jsonview.String && len(tid.Raw()) > 2:
		o.raw("rollout_id", tid)
	default:
		r.appendDefaultID(&o, index)
	}
	fail := func(err error) Item {
		r.out = o.end()
		return Item{Rollout: r.out, Err: err, Where: where}
	}
	if _, _, ok := o.id("task_id", t.Get("extra").Get("task_id")); !ok {
		if x.dirTask == "" {
			return fail(errors.New("no task id: extra.task_id is absent, and the file is not in a directory named after its task"))
		}
		o.str("task_id", x.dirTask)
	}
	steps := t.Get("steps")
	if steps.Kind() != jsonview.Array {
		return fail(fmt.Errorf("steps is %s, not an array", steps.Kind()))
	}

	var last jsonview.Value
	for st := steps.First(); st.Exists(); st = st.Next() {
		if st.Get("source").StrIs("agent") {
			var wrote bool
			if r.buf, wrote = appendText(r.buf[:0], st.Get("message"), ""); wrote {
				last = st
			}
		}
	}
	o.key("output")
	o.b = append(o.b, '"')
	o.b, _ = appendText(o.b, last.Get("message"), "")
	o.b = append(o.b, '"')

	// Turns: a step whose source is agent is one, with its tool calls;
	// results, the steps' observations, go to the turns of their calls.
	r.log.reset()
	r.turns.reset()
	var none jsonview.Value
	i := 0
	for st := steps.First(); st.Exists(); st, i = st.Next(), i+1 {
		if st.Get("source").StrIs("agent") {
			r.turns.agent(i, st.Get("message"))
		} else {
			r.turns.other()
		}
		for c := elems(st.Get("tool_calls")); c.Exists(); c = c.Next() {
			r.log.call(c.Get("function_name"), c.Get("tool_call_id"), c.Get("arguments"), none, none)
			r.turns.call()
		}
		for res := elems(st.Get("observation").Get("results")); res.Exists(); res = res.Next() {
			id := res.Get("source_call_id")
			r.log.result(none, id, res.Get("content"), false, none, res.Get("subagent_trajectory_ref"))
			r.turns.result(id)
		}
	}
	o.key("log")
	o.b = append(o.b, r.log.done()...)

	if m := t.Get("agent").Get("model_name"); m.Kind() == jsonview.String {
		o.raw("model", m)
	}
	o.rawIf("final_metrics", t.Get("final_metrics"))
	r.appendTurns(&o)
	r.out = o.end()
	return Item{Rollout: r.out, Where: where}
}
