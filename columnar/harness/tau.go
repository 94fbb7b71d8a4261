package harness

import (
	"bytes"
	"fmt"
	"io"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// tauBench streams a tau-bench result file: a JSON array of
// {task_id, trial, reward, info, traj}.
type tauBench struct {
	s       *stream
	stem    string
	started bool
	n       int
}

func (x *tauBench) next(r *Reader) (Item, error) {
	s := x.s
	if !x.started {
		x.started = true
		if err := s.delim("results", '['); err != nil {
			return Item{}, hint(err, TauBench, s, nil)
		}
	}
	ok, err := s.element("results")
	if err != nil {
		return Item{}, err
	}
	if !ok {
		if err := s.end(); err != nil {
			return Item{}, err
		}
		return Item{}, io.EOF
	}
	where := fmt.Sprintf("element %d", x.n)
	x.n++
	root, err := r.doc.Parse(s.raw)
	if err != nil {
		return Item{Err: err, Where: where}, nil
	}
	return r.tauBenchResult(x.stem, root, where), nil
}

// tauBenchResult maps one EnvRunResult.
func (r *Reader) tauBenchResult(stem string, res jsonview.Value, where string) Item {
	if res.Kind() != jsonview.Object {
		return Item{Err: fmt.Errorf("result is %s, not an object", res.Kind()), Where: where}
	}
	taskID, trial, info := res.Get("task_id"), res.Get("trial"), res.Get("info")
	var o object
	o.begin(r.out[:0])
	o.key("rollout_id")
	o.b = append(o.b, '"')
	o.b = appendStringBody(o.b, stem)
	o.b = append(o.b, '/')
	o.b, _ = appendIDBody(o.b, taskID)
	o.b = append(o.b, '/')
	o.b, _ = appendIDBody(o.b, trial)
	o.b = append(o.b, '"')
	idStart, idEnd, ok := o.id("task_id", taskID)
	if !ok {
		r.out = o.end()
		return Item{Rollout: r.out, Err: fmt.Errorf("task_id is %s, not a string or number", taskID.Kind()), Where: where}
	}
	if task := info.Get("task"); task.Kind() == jsonview.Object {
		r.taskRow(o.b[idStart:idEnd], func(t *object) {
			for m := task.First(); m.Exists(); m = m.Next() {
				t.member(m)
			}
		})
	}
	traj := res.Get("traj")
	r.chatOutput(&o, traj, true)
	r.chatLog(&o, traj)
	o.rawIf("trial", trial)
	o.rawIf("recorded_reward", res.Get("reward"))
	o.rawIf("recorded_scores", info.Get("reward_info"))
	o.rawIf("recorded_error", info.Get("error"))
	r.appendTurns(&o)
	r.out = o.end()
	return Item{Rollout: r.out, Where: where, Task: r.task(o.b[idStart:idEnd])}
}

// id appends a member holding an id (a string, or a number as text) as a
// string, and returns where its body lies in o.b. It reports false, and
// appends nothing, when v is neither.
func (o *object) id(k string, v jsonview.Value) (start, end int, ok bool) {
	if _, ok := appendIDBody(nil, v); !ok {
		return 0, 0, false
	}
	o.key(k)
	o.b = append(o.b, '"')
	start = len(o.b)
	o.b, _ = appendIDBody(o.b, v)
	end = len(o.b)
	o.b = append(o.b, '"')
	return start, end, true
}

// chatOutput appends the output of OpenAI-style messages: the text of
// every assistant message joined with a newline when all, else the last
// assistant message's text.
func (r *Reader) chatOutput(o *object, msgs jsonview.Value, all bool) {
	o.key("output")
	o.b = append(o.b, '"')
	if all {
		sep := ""
		for m := elems(msgs); m.Exists(); m = m.Next() {
			if m.Get("role").StrIs("assistant") {
				var wrote bool
				if o.b, wrote = appendText(o.b, m.Get("content"), sep); wrote {
					sep = `\n`
				}
			}
		}
	} else {
		var last jsonview.Value
		for m := elems(msgs); m.Exists(); m = m.Next() {
			if m.Get("role").StrIs("assistant") {
				last = m
			}
		}
		o.b, _ = appendText(o.b, last.Get("content"), "")
	}
	o.b = append(o.b, '"')
}

// chatLog appends the log of OpenAI chat messages: assistant tool_calls
// [{id, function: {name, arguments}}] (arguments a string of JSON text),
// and tool messages {tool_call_id, name, content}. A legacy function_call
// {name, arguments} counts as a call, a role "function" message as its
// result.
func (r *Reader) chatLog(o *object, msgs jsonview.Value) {
	chatEvents(&r.log, &r.turns, msgs)
	o.key("log")
	o.b = append(o.b, r.log.done()...)
}

// chatEvents writes the log of OpenAI chat messages (chatLog) into l, and
// their turns into t: a turn per assistant message.
func chatEvents(l *logWriter, t *turnWriter, msgs jsonview.Value) {
	l.reset()
	t.reset()
	var none jsonview.Value
	i := 0
	for m := elems(msgs); m.Exists(); m, i = m.Next(), i+1 {
		role := m.Get("role")
		if !role.StrIs("assistant") {
			t.other()
		}
		switch {
		case role.StrIs("assistant"):
			t.agent(i, m.Get("content"))
			for c := elems(m.Get("tool_calls")); c.Exists(); c = c.Next() {
				fn := c.Get("function")
				l.call(fn.Get("name"), c.Get("id"), fn.Get("arguments"), none, none)
				t.call()
			}
			if fc := m.Get("function_call"); fc.Kind() == jsonview.Object {
				l.call(fc.Get("name"), none, fc.Get("arguments"), none, none)
				t.call()
			}
		case role.StrIs("tool"), role.StrIs("function"):
			id := m.Get("tool_call_id")
			l.result(m.Get("name"), id, m.Get("content"), false, none, none)
			t.result(id)
		}
	}
}

// tau2 streams a tau2-bench results file {timestamp, info, tasks,
// simulations}. The run's model (info.agent_info.llm) is kept when info
// comes before the simulations; the tasks table is read wherever it is.
type tau2 struct {
	s       *stream
	model   []byte // JSON text of info.agent_info.llm
	started bool
	inSims  bool
	sims    bool    // a simulations array was found
	keys    keyList // the top-level keys, for a hint
	n       int
}

func (x *tau2) next(r *Reader) (Item, error) {
	s := x.s
	if !x.started {
		x.started = true
		if err := s.delim("results", '{'); err != nil {
			return Item{}, hint(err, Tau2, s, nil)
		}
	}
	for {
		if x.inSims {
			ok, err := s.element("simulations")
			if err != nil {
				return Item{}, err
			}
			if ok {
				where := fmt.Sprintf("simulation %d", x.n)
				x.n++
				root, err := r.doc.Parse(s.raw)
				if err != nil {
					return Item{Err: err, Where: where}, nil
				}
				return r.tau2Simulation(x.model, root, where), nil
			}
			x.inSims = false
		}
		key, end, err := s.key("results")
		if err != nil {
			return Item{}, err
		}
		if end {
			if err := s.end(); err != nil {
				return Item{}, hint(err, Tau2, s, x.keys)
			}
			if !x.sims {
				// Another format's object, read through: say so
				// rather than find nothing.
				if looks, desc := guess(Tau2, s, x.keys); looks != "" {
					return Item{}, &FormatError{Err: fmt.Errorf("read %s: no simulations", s.name), Looks: looks, Desc: desc}
				}
			}
			return Item{}, io.EOF
		}
		x.keys.add(key)
		switch key {
		case "simulations":
			x.sims = true
			if x.inSims, err = s.arrayOrNull("simulations"); err != nil {
				return Item{}, err
			}
		case "tasks":
			if err := x.tasks(r); err != nil {
				return Item{}, err
			}
		case "info":
			if err := s.value("info"); err != nil {
				return Item{}, err
			}
			info, err := r.doc.Parse(s.raw)
			if err == nil {
				if m := info.Path("agent_info", "llm"); m.Kind() == jsonview.String {
					x.model = bytes.Clone(m.Raw())
				}
			}
		default:
			if err := s.value(key); err != nil {
				return Item{}, err
			}
		}
	}
}

// tasks reads the tasks array into the tasks table, one task at a time. A
// task without an id is left out.
func (x *tau2) tasks(r *Reader) error {
	ok, err := x.s.arrayOrNull("tasks")
	for ok && err == nil {
		if ok, err = x.s.element("tasks"); !ok || err != nil {
			break
		}
		task, perr := r.doc.Parse(x.s.raw)
		if perr != nil {
			continue
		}
		id, good := appendIDBody(nil, task.Get("id"))
		if !good {
			continue
		}
		r.taskRow(id, func(t *object) {
			for m := task.First(); m.Exists(); m = m.Next() {
				if !m.KeyIs("id") {
					t.member(m)
				}
			}
		})
	}
	return err
}

// tau2Simulation maps one SimulationRun. model is the JSON text of the
// run's agent model, or nil.
func (r *Reader) tau2Simulation(model []byte, sim jsonview.Value, where string) Item {
	if sim.Kind() != jsonview.Object {
		return Item{Err: fmt.Errorf("simulation is %s, not an object", sim.Kind()), Where: where}
	}
	var o object
	o.begin(r.out[:0])
	id, taskID := sim.Get("id"), sim.Get("task_id")
	_, _, idOK := o.id("rollout_id", id)
	taskStart, taskEnd, taskOK := o.id("task_id", taskID)
	switch {
	case !idOK:
		r.out = o.end()
		return Item{Rollout: r.out, Err: fmt.Errorf("simulation id is %s, not a string or number", id.Kind()), Where: where}
	case !taskOK:
		r.out = o.end()
		return Item{Rollout: r.out, Err: fmt.Errorf("task_id is %s, not a string or number", taskID.Kind()), Where: where}
	}
	msgs := sim.Get("messages")
	r.chatOutput(&o, msgs, true)

	// Turns: an assistant message is one; a user's tool calls (tau2's
	// user tools, in user messages) and their results, requestor
	// "user", are not the agent's.
	r.log.reset()
	r.turns.reset()
	var none jsonview.Value
	result := func(t jsonview.Value) {
		isErr, _ := t.Get("error").Bool()
		id, req := t.Get("id"), t.Get("requestor")
		r.log.result(none, id, t.Get("content"), isErr, none, req)
		if req.Kind() != jsonview.String || req.StrIs("assistant") {
			r.turns.result(id)
		}
	}
	i := 0
	for m := elems(msgs); m.Exists(); m, i = m.Next(), i+1 {
		role := m.Get("role")
		if role.StrIs("assistant") {
			r.turns.agent(i, m.Get("content"))
		} else {
			r.turns.other()
		}
		if role.StrIs("tool") {
			if tm := m.Get("tool_messages"); tm.Exists() {
				for t := elems(tm); t.Exists(); t = t.Next() {
					result(t)
				}
			} else {
				result(m)
			}
			continue
		}
		for c := elems(m.Get("tool_calls")); c.Exists(); c = c.Next() {
			r.log.call(c.Get("name"), c.Get("id"), c.Get("arguments"), none, c.Get("requestor"))
			r.turns.call()
		}
	}
	o.key("log")
	o.b = append(o.b, r.log.done()...)

	if model != nil {
		o.key("model")
		o.b = append(o.b, model...)
	}
	o.rawIf("trial", sim.Get("trial"))
	ri := sim.Get("reward_info")
	o.rawIf("recorded_reward", ri.Get("reward"))
	o.rawIf("recorded_scores", ri)
	o.rawIf("termination_reason", sim.Get("termination_reason"))
	r.appendTurns(&o)
	r.out = o.end()
	return Item{Rollout: r.out, Where: where, Task: r.task(o.b[taskStart:taskEnd])}
}
