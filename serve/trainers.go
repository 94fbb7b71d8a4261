package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/harness"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/columnar/nemogym"
	"github.com/gavelhq/gavel/verifiers"
)

// The reward protocols trainers speak: OpenRLHF's remote reward model
// (POST /get_reward) and a NeMo Gym resources server (POST /verify, GET
// /reverify_mode). Neither names a task or carries world states, so each
// request is mapped onto rollouts one documented way (docs/trainers.md):
//
//   - output: the response (OpenRLHF's query minus its prompt; the text of
//     a NeMo Gym response's assistant messages);
//   - metadata, readable by specs as meta.<name>: prompt, and the ground
//     truth as label (OpenRLHF's labels), or, for NeMo Gym, every field of
//     the request beside responses_create_params and response (the task
//     row's own fields, such as expected_answer);
//   - task_id: the request's task field (OpenRLHF: a string, or a list
//     with one task per query), else ?task= on the URL, else the server's
//     DefaultTask. A rollout whose task binds no verifier fails the whole
//     request with a 422 naming the task.
//   - turns, when a verifier of the set scores turns: a NeMo Gym
//     response's agent turns, as the nemo-gym format reads them
//     (harness.ResponseTurns), as the metadata member turns of a mapped
//     rollout. OpenRLHF's text has none.
//
// The rollouts are graded as /v1/grade grades them (judge included).

// trainerReq is the shared state of one /get_reward or /verify request.
type trainerReq struct {
	g    *gradeReq
	doc  jsonview.Doc
	rows []columnar.Row
	line []byte // the rollouts' JSON text, rows' lines point into it
	res  []trainerResult
	// mapped says the rollouts carry their turns as the metadata member
	// turns, as a harness's mapped rollouts do (columnar.Batch.Mapped).
	mapped bool
}

// trainerResult is what a protocol answers of one graded rollout.
type trainerResult struct {
	status, kind, err string
	reward            float64
	rewardValid       bool
	components        []component
	// checksPassed and checksTotal are the reward row's.
	checksPassed, checksTotal int32
	// scoresTurns says the rollout's verifier scores turns; turnRewards
	// are then the reward row's turn_rewards, NaN for a turn not scored,
	// valid when the list is not null.
	scoresTurns      bool
	turnRewards      []float64
	turnRewardsValid bool
}

// component is one check's score, for NeMo Gym's reward_components.
type component struct {
	id    string
	score float64
}

// defaultTask returns the task of rollouts whose request names none: ?task=
// on the URL, else the server's DefaultTask ("" when neither is set).
func (s *Server) defaultTask(r *http.Request) string {
	if r.URL.RawQuery != "" {
		if t := r.URL.Query().Get("task"); t != "" {
			return t
		}
	}
	return s.cfg.DefaultTask
}

// appendRollout appends a rollout object's opening, its id, task and
// output, to b; the caller appends metadata members and the closing brace.
func appendRollout(b []byte, id, task string, output []byte) []byte {
	b = append(b, `{"rollout_id":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"task_id":`...)
	b = jsonview.AppendJSONString(b, task)
	b = append(b, `,"output":`...)
	return jsonview.AppendJSONString(b, output)
}

// grade grades the rollouts of t.line, one per row, and fills t.res in
// their order. It answers the request itself and returns false when they
// could not be graded, or when a rollout's task binds no verifier.
func (t *trainerReq) grade(w http.ResponseWriter, starts []int) bool {
	g := t.g
	t.rows = t.rows[:0]
	for i, from := range starts {
		end := len(t.line)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		t.rows = append(t.rows, columnar.Row{Index: int64(i), Line: t.line[from:end]})
	}
	b := columnar.Batch{JSONLines: true, Mapped: t.mapped, Rows: t.rows}
	t.res = t.res[:0]
	err := g.set.grader.GradeJudged(g.ctx, &b, []string{}, func(rw *columnar.RewardRow, checks []columnar.CheckRow, _ []columnar.JudgementRow) error {
		r := trainerResult{status: rw.Status, kind: rw.ErrorKind.S, err: rw.Error.S, reward: rw.Reward, rewardValid: rw.RewardValid,
			checksPassed: rw.ChecksPassed, checksTotal: rw.ChecksTotal}
		if rw.VerifierID.Valid && g.set.turns[rw.VerifierID.S] {
			r.scoresTurns = true
			if rw.TurnRewardsValid {
				r.turnRewards, r.turnRewardsValid = append([]float64(nil), rw.TurnRewards...), true
			}
		}
		for i := range checks {
			c := &checks[i]
			switch {
			case c.ScoreValid:
				r.components = append(r.components, component{c.CheckID, c.Score})
			case c.Status == verifiers.CheckPass:
				r.components = append(r.components, component{c.CheckID, 1})
			case c.Status == verifiers.CheckFail:
				r.components = append(r.components, component{c.CheckID, 0})
			}
		}
		t.res = append(t.res, r)
		g.s.metrics.graded(rw.Status, 1)
		atomic.AddInt64(&g.st.rollouts, 1)
		return nil
	})
	if err != nil {
		g.gradeFailed(err)
		return false
	}
	for i := range t.res {
		if t.res[i].kind == verifiers.KindNoVerifier {
			writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("rollout %d: %s", i, t.res[i].err),
				"name a task a verifier binds: the request's task field, ?task= on the URL, or gavel serve --default-task")
			return false
		}
	}
	return true
}

// failure returns why a graded rollout has no reward ("" when it has one).
func (r *trainerResult) failure() string {
	switch {
	case r.status == verifiers.StatusError:
		return r.kind + ": " + r.err
	case !r.rewardValid:
		return "no reward (status " + r.status + ")"
	}
	return ""
}

// handleGetReward answers OpenRLHF's remote reward model request:
//
//	{"query": [text...], "prompts": [text...], "labels": [any...], "task": text | [text...]}
//
// with {"rewards": [...], "scores": [...], "extra_logs": {...}}, rewards
// and scores both gavel's reward, extra_logs the numbers OpenRLHF logs per
// sample (passed, checks_passed, checks_total, and error with
// --on-error-reward). A rollout without a reward makes the answer a 422
// naming each such rollout, unless the server was started with
// --on-error-reward, whose value it then gets.
func (s *Server) handleGetReward(w http.ResponseWriter, r *http.Request, st *reqState) {
	t, ok := s.trainerStart(w, r, st)
	if !ok {
		return
	}
	root, ok := t.parse(w)
	if !ok {
		return
	}
	query := root.Get("query")
	if query.Kind() != jsonview.Array {
		writeError(w, http.StatusBadRequest, "request body: query: want a list of strings (prompt and response, as OpenRLHF sends them)", getRewardHint)
		return
	}
	n := query.Len()
	prompts, labels, task := root.Get("prompts"), root.Get("labels"), root.Get("task")
	for _, f := range []struct {
		name string
		v    jsonview.Value
	}{{"prompts", prompts}, {"labels", labels}} {
		if f.v.Exists() && f.v.Kind() != jsonview.Null && (f.v.Kind() != jsonview.Array || f.v.Len() != n) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("request body: %s: want a list as long as query (%d)", f.name, n), getRewardHint)
			return
		}
	}
	if task.Exists() && task.Kind() != jsonview.String && (task.Kind() != jsonview.Array || task.Len() != n) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("request body: task: want a string, or a list as long as query (%d)", n), getRewardHint)
		return
	}
	def := s.defaultTask(r)
	starts := make([]int, 0, n)
	p, l := prompts.First(), labels.First()
	tk := task
	if task.Kind() == jsonview.Array {
		tk = task.First()
	}
	i := 0
	for q := query.First(); q.Exists(); q = q.Next() {
		qs, ok := q.Str()
		if !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("request body: query[%d]: want a string", i), getRewardHint)
			return
		}
		output := qs
		var prompt []byte
		if p.Exists() {
			if prompt, ok = p.Str(); !ok {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("request body: prompts[%d]: want a string", i), getRewardHint)
				return
			}
			if !bytes.HasPrefix(qs, prompt) {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("request body: query[%d] does not begin with prompts[%d]: the response cannot be told from the prompt", i, i), getRewardHint)
				return
			}
			output = qs[len(prompt):]
		}
		name := def
		if tk.Exists() {
			s, ok := tk.Str()
			if !ok {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("request body: task[%d]: want a string", i), getRewardHint)
				return
			}
			name = string(s)
		}
		if name == "" {
			writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("rollout %d names no task", i), "send a task field, ?task= on the URL, or start gavel serve with --default-task")
			return
		}
		starts = append(starts, len(t.line))
		t.line = appendRollout(t.line, strconv.Itoa(i), name, output)
		if p.Exists() {
			t.line = append(t.line, `,"prompt":`...)
			t.line = jsonview.AppendJSONString(t.line, prompt)
			p = p.Next()
		}
		if l.Exists() {
			t.line = append(t.line, `,"label":`...)
			t.line = append(t.line, l.Raw()...)
			l = l.Next()
		}
		t.line = append(t.line, '}')
		if task.Kind() == jsonview.Array {
			tk = tk.Next()
		}
		i++
	}
	if !t.grade(w, starts) {
		return
	}
	onError := s.cfg.OnErrorReward
	var failed []string
	for i := range t.res {
		if why := t.res[i].failure(); why != "" && onError == nil {
			failed = append(failed, fmt.Sprintf("rollout %d: %s", i, why))
		}
	}
	if len(failed) > 0 {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("%d of %d rollouts could not be graded: %s", len(failed), n, strings.Join(failed, "; ")),
			"fix the rollouts or the verifiers; gavel serve --on-error-reward X answers X for them instead (your choice: X is then not a grade)")
		return
	}
	out := append(t.g.body[:0], `{"rewards":`...)
	rewards := func(out []byte) []byte {
		out = append(out, '[')
		for i := range t.res {
			if i > 0 {
				out = append(out, ',')
			}
			v := t.res[i].reward
			if t.res[i].failure() != "" {
				v = *onError
			}
			out = strconv.AppendFloat(out, v, 'g', -1, 64)
		}
		return append(out, ']')
	}
	out = rewards(out)
	out = append(out, `,"scores":`...)
	out = rewards(out)
	out = append(out, `,"extra_logs":{`...)
	logs := []struct {
		name string
		f    func(r *trainerResult) float64
	}{
		{"passed", func(r *trainerResult) float64 { return b2f(r.status == verifiers.StatusPassed) }},
		// As the rewards table counts them: a check passes by its status
		// (a judged check by its threshold), and every check counts.
		{"checks_passed", func(r *trainerResult) float64 { return float64(r.checksPassed) }},
		{"checks_total", func(r *trainerResult) float64 { return float64(r.checksTotal) }},
	}
	if onError != nil {
		logs = append(logs, struct {
			name string
			f    func(r *trainerResult) float64
		}{"error", func(r *trainerResult) float64 { return b2f(r.failure() != "") }})
	}
	for k, lg := range logs {
		if k > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, lg.name)
		out = append(out, ":["...)
		for i := range t.res {
			if i > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendFloat(out, lg.f(&t.res[i]), 'g', -1, 64)
		}
		out = append(out, ']')
	}
	out = append(out, "}}\n"...)
	t.g.body = out
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

const getRewardHint = `{"query": ["<prompt><response>", ...], "prompts": ["<prompt>", ...], "labels": [...], "task": "TASK-ID"}`

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// nemoGymRequest are the fields of a NeMo Gym verify request that are not
// the task row's own.
var nemoGymRequest = []string{nemogym.FieldParams, nemogym.FieldResponse, "task"}

// handleVerify answers a NeMo Gym resources server's POST /verify: the
// request is the task row's fields with responses_create_params and
// response; the answer is the request with reward (gavel's reward) and
// reward_components (each check's score: its score, else 1 for pass and 0
// for fail), and, when the bound verifier scores turns, step_rewards:
// the reward of each agent turn of the response, null for a turn not
// scored (an extension: the shape NeMo Gym issue 1298 proposes, not yet
// NeMo Gym's), in place of the request's. A rollout gavel could not grade is answered in NeMo Gym's
// failure shape, reward 0.0 with _ng_failure_class "gavel_error" and
// error, which NeMo Gym routes to its failures file, never a bare 0;
// _ng_failure_terminal is set when grading it again cannot help (an input
// error).
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request, st *reqState) {
	t, ok := s.trainerStart(w, r, st)
	if !ok {
		return
	}
	root, ok := t.parse(w)
	if !ok {
		return
	}
	if root.Kind() != jsonview.Object {
		writeError(w, http.StatusBadRequest, "request body: want a JSON object (a NeMo Gym verify request)", verifyHint)
		return
	}
	params, resp := root.Get(nemogym.FieldParams), root.Get(nemogym.FieldResponse)
	if params.Kind() != jsonview.Object || resp.Kind() != jsonview.Object {
		writeError(w, http.StatusBadRequest, "request body: responses_create_params and response: want two objects", verifyHint)
		return
	}
	output, err := nemogym.ResponseText(resp)
	if err != nil {
		writeError(w, http.StatusBadRequest, "request body: response: "+err.Error(), verifyHint)
		return
	}
	prompt, err := nemogym.PromptText(params.Get("input"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "request body: responses_create_params.input: "+err.Error(), verifyHint)
		return
	}
	task := s.defaultTask(r)
	if tv := root.Get("task"); tv.Exists() {
		ts, ok := tv.Str()
		if !ok {
			writeError(w, http.StatusBadRequest, "request body: task: want a string", verifyHint)
			return
		}
		task = string(ts)
	}
	if task == "" {
		writeError(w, http.StatusUnprocessableEntity, "the request names no task", "send a task field, ?task= on the URL, or start gavel serve with --default-task")
		return
	}
	t.line = appendRollout(t.line, "verify", task, output)
	t.line = append(t.line, `,"prompt":`...)
	t.line = jsonview.AppendJSONString(t.line, prompt)
	// With turns, the response's turns are the rollout's, in place of a
	// task row's member turns (as the nemo-gym format reads a rollout).
	t.mapped = t.g.set.grader.Turns()
	for m := root.First(); m.Exists(); m = m.Next() {
		if k := m.Key(); isAnyOf(k, nemoGymRequest) || gymFields.Is(string(k)) || t.mapped && string(k) == columnar.FieldTurns {
			continue // a rollout field or the response: not the task row's
		}
		t.line = append(t.line, ',')
		t.line = append(t.line, m.RawMember()...)
	}
	if t.mapped {
		t.line = append(t.line, `,"`+columnar.FieldTurns+`":`...)
		t.line = harness.ResponseTurns(t.line, resp)
	}
	t.line = append(t.line, '}')
	if !t.grade(w, []int{0}) {
		return
	}
	res := &t.res[0]
	// The answer is the request's members, but those gavel sets
	// (step_rewards too when the verifier scores turns, even when the
	// answer has none: a failure).
	out := append(t.g.body[:0], '{')
	for m := root.First(); m.Exists(); m = m.Next() {
		if isAnyOf(m.Key(), nemogym.AnswerFields) || res.scoresTurns && m.KeyIs(nemogym.FieldStepRewards) {
			continue
		}
		out = append(out, m.RawMember()...)
		out = append(out, ',')
	}
	if why := res.failure(); why != "" {
		out = append(out, `"`+nemogym.FieldReward+`":0.0,"`+nemogym.FieldFailureClass+`":"`+nemogym.FailureClass+`","`+nemogym.FieldError+`":`...)
		out = jsonview.AppendJSONString(out, why)
		if res.kind == verifiers.KindInput {
			out = append(out, `,"`+nemogym.FieldFailureTerminal+`":true`...)
		}
	} else {
		out = append(out, `"`+nemogym.FieldReward+`":`...)
		out = appendFloat(out, res.reward)
		out = append(out, `,"`+nemogym.FieldComponents+`":{`...)
		for i, c := range res.components {
			if i > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendQuote(out, c.id)
			out = append(out, ':')
			out = appendFloat(out, c.score)
		}
		out = append(out, '}')
		if res.turnRewardsValid {
			out = append(out, `,"`+nemogym.FieldStepRewards+`":[`...)
			for i, v := range res.turnRewards {
				if i > 0 {
					out = append(out, ',')
				}
				if math.IsNaN(v) {
					out = append(out, "null"...)
				} else {
					out = appendFloat(out, v)
				}
			}
			out = append(out, ']')
		}
	}
	out = append(out, "}\n"...)
	t.g.body = out
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

const verifyHint = `{"responses_create_params": {"input": [...]}, "response": {"output": [...]}, "task": "TASK-ID", ...the task row's fields}`

// appendFloat appends v as a JSON number that reads back as a float in
// Python (1.0, not 1).
func appendFloat(b []byte, v float64) []byte {
	n := len(b)
	b = strconv.AppendFloat(b, v, 'g', -1, 64)
	for _, c := range b[n:] {
		if c == '.' || c == 'e' || c == 'E' || c == 'N' || c == 'I' {
			return b
		}
	}
	return append(b, '.', '0')
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

// handleReverifyMode answers NeMo Gym's GET /reverify_mode: gavel's
// verifiers are pure functions of the rollout, so re-verifying stored
// rollouts is safe.
func (s *Server) handleReverifyMode(w http.ResponseWriter, r *http.Request, st *reqState) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`"` + nemogym.ReverifyStateless + `"` + "\n"))
}

// trainerStart reads a trainer request's body and returns its state; it
// answers the request itself and returns false when it cannot.
func (s *Server) trainerStart(w http.ResponseWriter, r *http.Request, st *reqState) (*trainerReq, bool) {
	set := s.set.Load()
	if set == nil {
		writeError(w, http.StatusServiceUnavailable, "no verifiers loaded yet", "retry when /readyz answers 200")
		return nil, false
	}
	g := &gradeReq{s: s, set: set, w: w, st: st, ctx: r.Context()}
	if s.cfg.Judge != nil {
		// The judge's waits end at the request's deadline, as /v1/grade's.
		ctx, cancel := context.WithDeadline(g.ctx, st.acct.deadline)
		context.AfterFunc(r.Context(), cancel)
		g.ctx = ctx
	}
	body, ok := readBody(w, r, &st.acct, s.cfg.MaxBody, nil)
	if !ok {
		return nil, false
	}
	t := &trainerReq{g: g}
	t.doc.LimitIndex(indexPerByte, indexFloor)
	g.body = body
	return t, true
}

// parse parses the request's body.
func (t *trainerReq) parse(w http.ResponseWriter) (jsonview.Value, bool) {
	body := t.g.body
	root, err := t.doc.Parse(body)
	if err != nil {
		var se *jsonview.SyntaxError
		if errors.As(err, &se) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("request body: invalid JSON at byte %d: %s", se.Offset, se.Msg), "send one JSON object")
		} else {
			writeError(w, http.StatusBadRequest, "request body: "+err.Error(), "send one JSON object")
		}
		return jsonview.Value{}, false
	}
	if root.Kind() != jsonview.Object {
		writeError(w, http.StatusBadRequest, "request body: want a JSON object", "send one JSON object")
		return jsonview.Value{}, false
	}
	// The answer is built in a buffer of its own: the body stays parsed.
	t.g.body = nil
	return root, true
}
