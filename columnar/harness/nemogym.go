package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/columnar/nemogym"
)

// NeMo Gym's rollout collection (nemo_gym/rollout_collection.py of
// NVIDIA-NeMo/Gym, read at commit 07d6b0d) writes,
// for an output file X.jsonl: X.jsonl, one verify response per line (the
// request's task fields, responses_create_params, response, reward and
// the verifier's own fields, with agent_ref, _ng_task_index and
// _ng_rollout_index); X_failures.jsonl, the same shape for rollouts that
// failed, with _ng_failure_class; and X_materialized_inputs.jsonl, the
// rows sent to the agents, one per task index and rollout index.
const (
	gymTaskIndex     = "_ng_task_index"
	gymRolloutIndex  = "_ng_rollout_index"
	gymAttemptIndex  = "_ng_attempt_index"
	gymRolloutID     = "_ng_rollout_id"
	gymFailurePrefix = "_ng_failure_"
	gymAgentRef      = "agent_ref"

	// MaterializedSuffix ends the stem of a run's materialized inputs.
	MaterializedSuffix = "_materialized_inputs"
	// FailuresSuffix ends the stem of a run's failures file.
	FailuresSuffix = "_failures"
)

// IsMaterializedInputs reports whether path names a NeMo Gym run's
// materialized inputs (X_materialized_inputs.jsonl, plain or .gz or
// .zst): not rollouts, but the task fields joined to them.
func IsMaterializedInputs(path string) bool {
	return strings.HasSuffix(fileStem(path), MaterializedSuffix)
}

// nemoGym reads NeMo Gym rollouts, JSON Lines of verify responses.
type nemoGym struct {
	lines messages
	stem  string
	// inputs holds, by task index (as the body of a JSON string), the
	// task fields of the run's materialized inputs: a JSON object.
	inputs  map[string][]byte
	joinDoc jsonview.Doc
	seen    bool // a line has been read
}

func (x *nemoGym) next(r *Reader) (Item, error) {
	root, where, err := x.lines.object(r)
	first := !x.seen
	x.seen = true
	if err != nil {
		var le *lineError
		if !errors.As(err, &le) {
			return Item{}, err
		}
		if first {
			if ferr := x.lines.firstLineHint(NemoGym, fmt.Errorf("read %s: %s: %w", r.name, where, le.err)); ferr != nil {
				return Item{}, ferr
			}
		}
		return Item{Err: le.err, Where: where}, nil
	}
	if first && !root.Get(nemogym.FieldResponse).Exists() && !root.Get(nemogym.FieldParams).Exists() {
		if looks, desc := otherFormat(NemoGym, root); looks != "" {
			return Item{}, &FormatError{Err: fmt.Errorf("read %s: %s: no response or responses_create_params", r.name, where), Looks: looks, Desc: desc}
		}
	}
	return r.nemoGymRow(x, root, where), nil
}

// gymSkip are the members of a rollout row that are not metadata: the
// request and response mapped into the rollout, the reward kept as
// recorded_reward, and gavel's rollout fields, which a row's own member
// of the same name must not shadow (as POST /verify skips them).
var gymSkip = []string{nemogym.FieldParams, nemogym.FieldResponse, nemogym.FieldReward,
	"rollout_id", "task_id", "output", "log", "initial_state", "final_state",
	"prompt", "model", "recorded_reward", "recorded_error"}

// nemoGymRow maps one rollout row:
//
//	rollout_id      <file stem>/<_ng_task_index>/<_ng_rollout_index>[/<_ng_attempt_index>]
//	task_id         <agent_ref.name>/<_ng_task_index>
//	prompt          nemogym.PromptText of responses_create_params.input
//	output          nemogym.ResponseText of response
//	log             the response's function_call and function_call_output items
//	model           response.model
//	recorded_reward reward
//	recorded_error  _ng_failure_class[: its reason] (gymFailure)
//	metadata        the row's other members, then the materialized
//	                input's members the row lacks
//	turns           (Reader.SetTurns) the agent's turns of response.output
//	                (responseEvents), in place of a member turns of the
//	                row's or the input's
//
// The output, prompt, metadata and turns are those POST /verify reads
// from a verify request (serve/trainers.go; ResponseTurns), so that one
// spec reads both.
func (r *Reader) nemoGymRow(x *nemoGym, row jsonview.Value, where string) Item {
	taskIdx, rollIdx := row.Get(gymTaskIndex), row.Get(gymRolloutIndex)
	if _, ok := appendIDBody(nil, taskIdx); !ok {
		return Item{Err: fmt.Errorf("%s is %s, not a number or string", gymTaskIndex, taskIdx.Kind()), Where: where}
	}
	if _, ok := appendIDBody(nil, rollIdx); !ok {
		return Item{Err: fmt.Errorf("%s is %s, not a number or string", gymRolloutIndex, rollIdx.Kind()), Where: where}
	}
	var o object
	o.begin(r.out[:0])
	o.key("rollout_id")
	o.b = append(o.b, '"')
	o.b = appendStringBody(o.b, x.stem)
	o.b = append(o.b, '/')
	o.b, _ = appendIDBody(o.b, taskIdx)
	o.b = append(o.b, '/')
	o.b, _ = appendIDBody(o.b, rollIdx)
	if a := row.Get(gymAttemptIndex); a.Kind() == jsonview.Number {
		o.b = append(o.b, '/')
		o.b = append(o.b, a.Raw()...)
	}
	o.b = append(o.b, '"')
	o.key("task_id")
	o.b = append(o.b, '"')
	if name, ok := body(row.Get(gymAgentRef).Get("name")); ok && len(name) > 0 {
		o.b = append(append(o.b, name...), '/')
	}
	o.b, _ = appendIDBody(o.b, taskIdx)
	o.b = append(o.b, '"')
	failure := gymFailure(row)

	fail := func(err error) Item {
		if failure != nil {
			err = fmt.Errorf("%w (the rollout failed in NeMo Gym: %s)", err, unescapeID(failure))
		}
		r.out = o.end()
		return Item{Rollout: r.out, Err: err, Where: where}
	}
	resp := row.Get(nemogym.FieldResponse)
	if resp.Kind() != jsonview.Object {
		return fail(fmt.Errorf("response is %s, not an object", resp.Kind()))
	}
	text, err := nemogym.ResponseText(resp)
	if err != nil {
		return fail(fmt.Errorf("response: %w", err))
	}
	var prompt []byte
	if params := row.Get(nemogym.FieldParams); params.Exists() {
		if params.Kind() != jsonview.Object {
			return fail(fmt.Errorf("responses_create_params is %s, not an object", params.Kind()))
		}
		if prompt, err = nemogym.PromptText(params.Get("input")); err != nil {
			return fail(fmt.Errorf("responses_create_params.input: %w", err))
		}
		o.key("prompt")
		o.b = jsonview.AppendJSONString(o.b, string(prompt))
	}
	o.key("output")
	o.b = jsonview.AppendJSONString(o.b, string(text))

	responseEvents(&r.log, &r.turns, resp.Get("output"))
	o.key("log")
	o.b = append(o.b, r.log.done()...)

	if m := resp.Get("model"); m.Kind() == jsonview.String {
		o.raw("model", m)
	}
	o.rawIf("recorded_reward", row.Get(nemogym.FieldReward))
	if failure != nil {
		o.key("recorded_error")
		o.b = append(append(append(o.b, '"'), failure...), '"')
	}
	turns := r.turns.on
	for m := row.First(); m.Exists(); m = m.Next() {
		if !isAnyOf(m.Key(), gymSkip) && !(turns && m.KeyIs("turns")) {
			o.member(m)
		}
	}
	if joined, ok := x.inputs[string(mustIDBody(taskIdx))]; ok {
		in, err := x.joinDoc.Parse(joined)
		if err == nil {
			for m := in.First(); m.Exists(); m = m.Next() {
				if !isAnyOf(m.Key(), gymSkip) && !row.GetBytes(m.Key()).Exists() && !(turns && m.KeyIs("turns")) {
					o.member(m)
				}
			}
		}
	}
	r.appendTurns(&o)
	r.out = o.end()
	return Item{Rollout: r.out, Where: where}
}

// responseEvents writes the log events and the turns of a Responses API
// response's output items: the function_call and function_call_output
// items are the log's tool calls and results. The agent's output items
// (reasoning, function_call, and message with role assistant, or none,
// as nemogym.ResponseText reads it) one after another are one turn, the
// model's output of one step, ended by an item the agent is given
// (function_call_output, a message of another role). Items of other
// types neither start nor end a turn. A turn's text is its messages'
// text; message_index is the index of its first item in output.
func responseEvents(l *logWriter, t *turnWriter, output jsonview.Value) {
	l.reset()
	t.reset()
	var none jsonview.Value
	i := 0
	for it := elems(output); it.Exists(); it, i = it.Next(), i+1 {
		switch typ := it.Get("type"); {
		case typ.StrIs("function_call"):
			t.open(i)
			l.call(it.Get("name"), it.Get("call_id"), it.Get("arguments"), none, none)
			t.call()
		case typ.StrIs("function_call_output"):
			t.other()
			id := it.Get("call_id")
			l.result(none, id, it.Get("output"), false, none, none)
			t.result(id)
		case typ.StrIs("reasoning"):
			t.open(i)
		case typ.StrIs("message"):
			if role := it.Get("role"); role.Kind() == jsonview.String && !role.StrIs("assistant") {
				t.other()
				break
			}
			t.open(i)
			t.addText(it.Get("content"))
		}
	}
}

// gymJudgeError is the failure member NeMo Gym records a judge's error
// in: the reason recorded_error gives first.
const gymJudgeError = "_ng_failure_judge_error"

// gymFailure returns a failed rollout's recorded error, the body of a
// JSON string: its _ng_failure_class, and after ": " the reason recorded
// beside it (_ng_failure_judge_error, else the first other string
// _ng_failure_* member, else a string error); nil when the row has no
// failure class.
func gymFailure(row jsonview.Value) []byte {
	class := row.Get(nemogym.FieldFailureClass)
	if !class.Exists() || class.IsNull() {
		return nil
	}
	b := make([]byte, 0, 32) // not nil: an empty class is still a failure
	if s, ok := body(class); ok {
		b = append(b, s...)
	} else {
		b = appendStringBody(b, string(appendCompact(nil, class.Raw())))
	}
	var reason []byte
	if s, ok := body(row.Get(gymJudgeError)); ok && len(s) > 0 {
		reason = s
	}
	for m := row.First(); m.Exists() && reason == nil; m = m.Next() {
		k := string(m.Key())
		if strings.HasPrefix(k, gymFailurePrefix) && k != nemogym.FieldFailureClass && k != nemogym.FieldFailureTerminal {
			if s, ok := body(m); ok && len(s) > 0 {
				reason = s
			}
		}
	}
	if reason == nil {
		if s, ok := body(row.Get(nemogym.FieldError)); ok && len(s) > 0 {
			reason = s
		}
	}
	if reason != nil {
		b = append(append(b, ": "...), reason...)
	}
	return b
}

// mustIDBody is appendIDBody of an id known to be one.
func mustIDBody(v jsonview.Value) []byte {
	b, _ := appendIDBody(nil, v)
	return b
}

// isAnyOf reports whether key is one of names.
func isAnyOf(key []byte, names []string) bool {
	for _, n := range names {
		if string(key) == n {
			return true
		}
	}
	return false
}

// gymInputSkip are the members of a materialized input row that are not
// the task's: the request (the rollout row has its own) and the ids of
// one rollout.
var gymInputSkip = []string{nemogym.FieldParams, gymRolloutIndex, gymAttemptIndex, gymRolloutID}

// materializedPath returns the path of the materialized inputs of the
// run whose rollouts (or failures) file is path, when the file exists:
// X_materialized_inputs.jsonl beside X.jsonl or X_failures.jsonl, with
// the compression suffix of path, else plain.
func materializedPath(path string) (string, bool) {
	stem := strings.TrimSuffix(fileStem(path), FailuresSuffix)
	if strings.HasSuffix(stem, MaterializedSuffix) {
		return "", false
	}
	base := filepath.Join(filepath.Dir(path), stem+MaterializedSuffix+".jsonl")
	var cands []string
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".gz" || ext == ".zst" {
		cands = append(cands, base+ext)
	}
	for _, c := range append(cands, base) {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return c, true
		}
	}
	return "", false
}

// joinInputs reads the materialized inputs beside the rollouts file at
// path, when there are any, into x.inputs: for each task index, the
// fields of its first row but gymInputSkip. Rows for one task differ only
// in the rollout's ids and the request (its seed), so the task's fields
// are kept once, as a tasks table is. A line that is not a JSON object
// with a task index is skipped: it has no rollout to join.
func (x *nemoGym) joinInputs(path string) error {
	in, ok := materializedPath(path)
	if !ok {
		return nil
	}
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("open the materialized inputs of %s: %w", path, err)
	}
	defer f.Close()
	rd, closer, err := decompress(in, f)
	if err != nil {
		return err
	}
	defer closer.Close()
	br, _ := skipBOM(rd)
	lines := messages{br: br, maxLine: defaultMaxLine}
	var doc jsonview.Doc
	var row object
	for {
		err := lines.readLine()
		if err == io.EOF {
			return nil
		}
		if err == errLong {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s (byte offset %d): %w", in, lines.off, err)
		}
		root, perr := doc.Parse(lines.line)
		if perr != nil || root.Kind() != jsonview.Object {
			continue
		}
		id, ok := appendIDBody(nil, root.Get(gymTaskIndex))
		if !ok {
			continue
		}
		if _, dup := x.inputs[string(id)]; dup {
			continue
		}
		row.begin(nil)
		for m := root.First(); m.Exists(); m = m.Next() {
			if !isAnyOf(m.Key(), gymInputSkip) {
				row.member(m)
			}
		}
		if x.inputs == nil {
			x.inputs = make(map[string][]byte)
		}
		x.inputs[string(id)] = row.end()
	}
}

// lineError is the error of one line of JSON Lines that is not a JSON
// object: the line is a bad row, the file is read on.
type lineError struct{ err error }

func (e *lineError) Error() string { return e.err.Error() }
func (e *lineError) Unwrap() error { return e.err }

// object reads the next line that is not blank and parses it into r.doc:
// the JSON object, and where the line is ("line 3 (byte 1290)"). A line
// that is not one (too long, invalid JSON, not an object) is a
// *lineError; another error is the file's (io.EOF at its end).
func (m *messages) object(r *Reader) (jsonview.Value, string, error) {
	for {
		start := m.off
		err := m.readLine()
		index := m.n
		m.n++
		where := fmt.Sprintf("line %d (byte %d)", index+1, start)
		switch {
		case err == errLong:
			return jsonview.Value{}, where, &lineError{fmt.Errorf("longer than the limit of %d bytes", m.maxLine)}
		case err == io.EOF:
			return jsonview.Value{}, where, io.EOF
		case err != nil:
			return jsonview.Value{}, where, fmt.Errorf("read %s line %d (byte offset %d): %w", r.name, index+1, start, err)
		}
		if len(bytes.TrimSpace(m.line)) == 0 {
			continue
		}
		root, err := r.doc.Parse(m.line)
		if err != nil {
			var se *jsonview.SyntaxError
			if errors.As(err, &se) {
				err = fmt.Errorf("invalid JSON at byte %d of the line: %s", se.Offset, se.Msg)
			}
			return jsonview.Value{}, where, &lineError{err}
		}
		if root.Kind() != jsonview.Object {
			return jsonview.Value{}, where, &lineError{fmt.Errorf("%s, not a JSON object", root.Kind())}
		}
		return root, where, nil
	}
}

// firstLineHint returns, for the error of the first line of a file read
// in format f, a FormatError when the file looks like another format's
// (by its first bytes: a log written as one JSON text), else nil.
func (m *messages) firstLineHint(f Format, err error) error {
	rest, _ := m.br.Peek(m.br.Buffered())
	prefix := append(append(bytes.Clone(m.line), '\n'), rest...)
	if looks, desc := sniff(prefix); looks != "" && looks != f {
		return &FormatError{Err: err, Looks: looks, Desc: desc}
	}
	return nil
}

// otherFormat returns the format the object root, the first of a file
// read in format f, looks like by its keys when that is another.
func otherFormat(f Format, root jsonview.Value) (Format, string) {
	var keys keyList
	for m := root.First(); m.Exists() && len(keys) < maxSniffKeys; m = m.Next() {
		keys.add(string(m.Key()))
	}
	if looks, desc := looksByKeys(keys); looks != f {
		return looks, desc
	}
	return "", ""
}
