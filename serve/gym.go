package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"unsafe"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// The gym verifier API (POST /verifier). A request names its checks and
// its session; the state to check is inline (gavel's extension fields
// final_state, initial_state, log and output beside sessionId, decoded as
// grade decodes a JSON Lines row) or the session stored with PUT
// /sessions/{id}. The checks are compiled by the spec engine (spec.Gym), so
// that they load and grade as in a spec file.
//
// Rubric checks stay pending ("PENDING") until gavel has a judge; the
// judge will grade the pending checks of gymResponse before it is
// written.

var gymFields = columnar.FieldNames{}.WithDefaults()

// gymDocs are the reusable documents of one /verifier request.
type gymDocs struct {
	line, final, initial, log jsonview.Doc
	body                      []byte
}

var gymDocsPool = sync.Pool{New: func() any { d := new(gymDocs); d.limitIndex(); return d }}

// limitIndex bounds the index of d's documents.
func (d *gymDocs) limitIndex() {
	for _, doc := range []*jsonview.Doc{&d.line, &d.final, &d.initial, &d.log} {
		doc.LimitIndex(indexPerByte, indexFloor)
	}
}

// maxPooledGym bounds what pooled gymDocs keep from one request.
const maxPooledGym = 1 << 20

// putGymDocs pools d, without what a large request left in it.
func putGymDocs(d *gymDocs) {
	if cap(d.body) > maxPooledGym {
		d.body = nil
	}
	for _, doc := range []*jsonview.Doc{&d.line, &d.final, &d.initial, &d.log} {
		doc.Shrink(maxPooledGym)
		doc.Reset()
	}
	gymDocsPool.Put(d)
}

// readBody reads a body of at most max bytes into buf, charging the
// request's memory for it; too large is a 413, a read past the deadline
// or a memory bound that stays full a 503.
func readBody(w http.ResponseWriter, r *http.Request, acct *memAccount, max int64, buf []byte) ([]byte, bool) {
	buf, err := acct.reserveLength(r.ContentLength, max, buf)
	if err == nil {
		buf, err = readAll(&chargedReader{r: http.MaxBytesReader(w, r.Body, max), acct: acct}, buf[:0])
	}
	if err != nil {
		bodyFailed(w, err, max)
		return nil, false
	}
	return buf, true
}

// bodyFailed answers a request whose body could not be read whole.
func bodyFailed(w http.ResponseWriter, err error, max int64) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", max), "raise --max-body, or send JSON Lines (the limit is then per line)")
	case errors.Is(err, errMemory):
		memoryFull(w)
	case isTimeout(err), errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, "request body not received within the request timeout", "send the body faster, or raise --request-timeout")
	default:
		writeError(w, http.StatusBadRequest, "read request body: "+err.Error(), "send the whole body, as its Content-Length says")
	}
}

// memoryFull answers a request refused for want of request memory.
func memoryFull(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, "server busy: the memory for requests is in use by others", "retry after a second, or raise --max-memory")
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

func (s *Server) handlePutSession(w http.ResponseWriter, r *http.Request, st *reqState) {
	id := r.PathValue("id")
	body, ok := readBody(w, r, &st.acct, s.cfg.MaxBody, nil)
	if !ok {
		return
	}
	d := gymDocsPool.Get().(*gymDocs)
	defer putGymDocs(d)
	if _, problem := d.rollout(body); problem != "" {
		writeError(w, http.StatusBadRequest, problem, `a session is {"final_state": ..., "initial_state": ..., "log": [...], "output": "..."}`)
		return
	}
	code := http.StatusCreated
	if s.sessions.put(id, body) {
		code = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(jsonview.AppendJSONString([]byte(`{"session_id":`), id), "}\n"...))
}

func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request, st *reqState) {
	if !s.sessions.delete(r.PathValue("id")) {
		writeError(w, http.StatusNotFound, "no session "+r.PathValue("id"),
			"sessions are stored with PUT /sessions/{id}; past --max-sessions (or an eighth of --max-memory) the least recently used are evicted")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// rollout decodes a JSON object holding a rollout's fields into the view a
// verifier reads. problem says what is wrong with it, naming the field.
func (d *gymDocs) rollout(body []byte) (verifiers.Rollout, string) {
	var r verifiers.Rollout
	row := columnar.Row{Line: body}
	root, err := columnar.DecodeLine(&row, &gymFields, &d.line)
	if err != nil {
		return r, bodyProblem(err)
	}
	r.Meta = root
	state := func(c columnar.Cell, doc *jsonview.Doc, field string) (jsonview.Value, string) {
		switch c.Kind {
		case columnar.CellNull:
			return jsonview.Value{}, ""
		case columnar.CellJSON:
			return c.V, ""
		case columnar.CellString:
			v, err := doc.Parse(c.Data)
			if err != nil {
				var se *jsonview.SyntaxError
				if errors.As(err, &se) {
					return v, fmt.Sprintf("%s: invalid JSON at byte %d: %s", field, se.Offset, se.Msg)
				}
				return v, field + ": " + err.Error()
			}
			return v, ""
		}
		return jsonview.Value{}, field + ": want a JSON value or JSON text, got a " + c.Kind.String()
	}
	var p string
	if r.Final, p = state(row.Final, &d.final, gymFields.Final); p != "" {
		return r, p
	}
	if r.Initial, p = state(row.Initial, &d.initial, gymFields.Initial); p != "" {
		return r, p
	}
	if r.Log, p = state(row.Log, &d.log, gymFields.Log); p != "" {
		return r, p
	}
	if k := r.Log.Kind(); k != jsonview.Missing && k != jsonview.Null && k != jsonview.Array {
		return r, gymFields.Log + ": not a JSON array"
	}
	switch row.Output.Kind {
	case columnar.CellNull:
	case columnar.CellString:
		r.Output = unsafe.String(unsafe.SliceData(row.Output.Data), len(row.Output.Data))
	default:
		return r, gymFields.Output + ": not a string (" + row.Output.Kind.String() + ")"
	}
	if r.Final.Kind() == jsonview.Null {
		r.Final = jsonview.Value{}
	}
	if r.Initial.Kind() == jsonview.Null {
		r.Initial = jsonview.Value{}
	}
	return r, ""
}

// bodyProblem words an error of columnar.DecodeLine, which speaks of line
// 1 of a JSON Lines file, for a request body holding one JSON object:
// "line 1: invalid JSON at byte 12 of the line: ..." is "request body:
// invalid JSON at byte 12: ...".
func bodyProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "line 1: ")
	msg = strings.Replace(msg, " of the line: ", ": ", 1)
	return "request body: " + msg
}

// hasState reports whether the request carries a state inline.
func hasState(root jsonview.Value) bool {
	for _, f := range []string{gymFields.Final, gymFields.Initial, gymFields.Log, gymFields.Output} {
		if root.Get(f).Exists() {
			return true
		}
	}
	return false
}

func (s *Server) handleVerifier(w http.ResponseWriter, r *http.Request, st *reqState) {
	d := gymDocsPool.Get().(*gymDocs)
	defer putGymDocs(d)
	body, ok := readBody(w, r, &st.acct, s.cfg.MaxBody, d.body)
	if !ok {
		return
	}
	d.body = body
	ro, problem := d.rollout(body)
	if problem != "" {
		writeError(w, http.StatusBadRequest, problem, `{"sessionId": "...", "checks": [...], "final_state": {...}}`)
		return
	}
	root := ro.Meta
	sid, ok := root.Get("sessionId").Str()
	if !ok {
		writeError(w, http.StatusBadRequest, "sessionId: missing or not a string", `{"sessionId": "test-session", "checks": [...]}`)
		return
	}
	sessionID := string(sid)
	checks := root.Get("checks")
	if !checks.Exists() {
		writeError(w, http.StatusBadRequest, "checks: missing", `{"sessionId": "...", "checks": [{"id": ..., "type": "state", ...}]}`)
		return
	}
	// Compiling checks not in the cache holds their programs.
	if err := st.acct.reserve(int64(len(checks.Raw())) * bytesPerCheckByte / bytesPerBodyByte); err != nil {
		memoryFull(w)
		return
	}
	gym, err := s.gyms.get(checks.Raw())
	if err != nil {
		var ps spec.Problems
		if errors.As(err, &ps) {
			writeError(w, http.StatusUnprocessableEntity, ps.Error(), "the checks are those of a spec file: gavel spec check describes them")
			return
		}
		writeError(w, http.StatusBadRequest, "checks: "+err.Error(), "the checks are those of a spec file: gavel spec check describes them")
		return
	}
	if !hasState(root) {
		stored, ok := s.sessions.get(sessionID)
		if !ok {
			writeError(w, http.StatusNotFound, "no state: the request has no final_state, initial_state, log or output, and no session "+sessionID+" is stored",
				"send the state inline, or store it first with PUT /sessions/"+sessionID)
			return
		}
		if err := st.acct.reserve(int64(len(stored))); err != nil {
			memoryFull(w)
			return
		}
		sd := gymDocsPool.Get().(*gymDocs)
		defer putGymDocs(sd)
		if ro, problem = sd.rollout(stored); problem != "" { // checked when stored
			writeError(w, http.StatusInternalServerError, "stored session: "+problem, bugHint(w))
			return
		}
	}
	ro.ID, ro.TaskID = sessionID, ""
	ro.Meta = jsonview.Value{}
	results, err := gradeGym(gym, &ro)
	var out []byte
	var outcome verifiers.Outcome
	if err != nil {
		outcome = verifiers.Errored
	} else {
		checksList := make([]verifiers.Check, len(results))
		for i := range results {
			checksList[i] = results[i].Check
		}
		outcome = verifiers.Score(checksList, nil).Outcome
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	out = appendGymResponse((*bp)[:0], sessionID, outcome, results, err)
	*bp = out
	st.rollouts = 1
	s.metrics.graded(outcome.String(), 1)
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// gradeGym grades the checks, turning a panic into an error.
func gradeGym(g *spec.Gym, r *verifiers.Rollout) (res []spec.GymResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("checks panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return g.Grade(r), nil
}

var operators = map[string]string{
	"state": "state_comparison", "log": "log_comparison", "sequential": "sequential_comparison",
	"manual": "manual_function", "rubric": "rubric", "expr": "expr",
}

// appendGymResponse writes the response of the gym API.
func appendGymResponse(b []byte, sessionID string, outcome verifiers.Outcome, results []spec.GymResult, gradeErr error) []byte {
	b = append(b, `{"session_id":`...)
	b = jsonview.AppendJSONString(b, sessionID)
	b = append(b, `,"success":`...)
	b = appendSuccess(b, outcome)
	if gradeErr != nil {
		b = append(b, `,"error":`...)
		b = jsonview.AppendJSONString(b, gradeErr.Error())
	}
	b = append(b, `,"verifiers":[`...)
	for i := range results {
		res := &results[i]
		c := &res.Check
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsonview.AppendJSONString(b, c.ID)
		b = append(b, `,"operator":`...)
		b = jsonview.AppendJSONString(b, operators[res.Type])
		b = append(b, `,"success":`...)
		switch c.Status {
		case verifiers.Pass:
			b = append(b, "true"...)
		case verifiers.Pending:
			b = append(b, `"PENDING"`...)
		default:
			b = append(b, "false"...)
		}
		if c.Status == verifiers.Pending {
			b = append(b, '}')
			continue
		}
		if !c.Required {
			b = append(b, `,"optional":true`...)
		}
		if c.Status == verifiers.Error {
			b = append(b, `,"error":`...)
			b = jsonview.AppendJSONString(b, c.Detail)
		}
		b = append(b, `,"asserts":[`...)
		for j := range res.Asserts {
			a := &res.Asserts[j]
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"actual_value":`...)
			b = appendRaw(b, a.Actual)
			b = append(b, `,"expected_value":`...)
			b = appendRaw(b, a.Expected)
			b = append(b, `,"comparator":`...)
			b = jsonview.AppendJSONString(b, a.Comparator)
			b = append(b, `,"success":`...)
			if a.Status == verifiers.Pass {
				b = append(b, "true"...)
			} else {
				b = append(b, "false"...)
			}
			if a.Matching != "" {
				b = append(b, `,"matching_results":`...)
				b = append(b, a.Matching...)
			}
			if a.Status == verifiers.Error {
				b = append(b, `,"error":`...)
				b = jsonview.AppendJSONString(b, a.Detail)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
		if c.Status != verifiers.Pass && res.Rows != "" {
			b = append(b, `,"all_results":`...)
			b = append(b, res.Rows...)
		}
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

func appendSuccess(b []byte, o verifiers.Outcome) []byte {
	switch o {
	case verifiers.Passed:
		return append(b, "true"...)
	case verifiers.PendingOutcome:
		return append(b, `"PENDING"`...)
	}
	return append(b, "false"...)
}

// appendRaw appends a JSON text, or null for an empty one.
func appendRaw(b []byte, text string) []byte {
	if text == "" {
		return append(b, "null"...)
	}
	return append(b, text...)
}

// gymCache keeps the compiled checks of recent requests by their text:
// an environment sends the same checks for every episode of a task. It
// counts what an entry holds at bytesPerCheckByte per byte of its text,
// and is emptied when a new entry would take it past its bound.
type gymCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	m        map[string]*spec.Gym
}

func newGymCache(maxBytes int64) *gymCache {
	return &gymCache{maxBytes: maxBytes, m: map[string]*spec.Gym{}}
}

// maxCachedChecks bounds the text of checks kept compiled.
const maxCachedChecks = 64 << 10

// checksCost is what compiled checks of a text of n bytes hold.
func checksCost(n int) int64 { return int64(n)*bytesPerCheckByte + 1024 }

func (c *gymCache) get(text []byte) (*spec.Gym, error) {
	c.mu.Lock()
	g := c.m[string(text)]
	c.mu.Unlock()
	if g != nil {
		return g, nil
	}
	g, err := spec.ParseGym(SourceFile, text)
	if err != nil {
		return nil, err
	}
	if cost := checksCost(len(text)); len(text) <= maxCachedChecks && cost <= c.maxBytes {
		c.mu.Lock()
		if _, ok := c.m[string(text)]; !ok {
			if c.bytes+cost > c.maxBytes {
				clear(c.m) // simple and bounded; a working set refills at once
				c.bytes = 0
			}
			c.m[string(text)] = g
			c.bytes += cost
		}
		c.mu.Unlock()
	}
	return g, nil
}
