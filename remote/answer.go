package remote

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar/nemogym"
	"github.com/gavelhq/gavel/judge/call"
	"github.com/gavelhq/gavel/verifiers"
)

// Answer is a service's answer about one rollout, as cached: a single
// reward (with NeMo Gym's reward components), or checks. Err, never
// cached, says the rollout failed.
type Answer struct {
	Reward     *float64    `json:"reward,omitempty"`
	Components []Component `json:"components,omitempty"`
	Checks     []Check     `json:"checks,omitempty"`
	Err        string      `json:"-"`
}

// Component is one of NeMo Gym's reward_components.
type Component struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

// Check is one check of an answer, in the checks table's shape, or one
// flag (Flag set; its Status is raised, clear or error).
type Check struct {
	Flag     bool     `json:"flag,omitempty"`
	ID       string   `json:"id"`
	Label    string   `json:"label,omitempty"`
	Required bool     `json:"required"`
	Status   string   `json:"status"`
	Detail   string   `json:"detail,omitempty"`
	Actual   string   `json:"actual,omitempty"`   // JSON text; "" is null
	Expected string   `json:"expected,omitempty"` // JSON text; "" is null
	Score    *float64 `json:"score,omitempty"`
}

// Single reports whether the answer is a single reward.
func (a *Answer) Single() bool { return a.Reward != nil }

// Checks returns the answer's checks (appended to dst), then its flags:
// a single reward is one required check "reward" whose score is the
// reward and which passes when it reaches threshold; each NeMo Gym reward
// component an optional check of its name, with its score, passing
// likewise.
func (a *Answer) AppendChecks(dst []verifiers.Check, threshold float64) []verifiers.Check {
	if a.Reward != nil {
		dst = append(dst, scoreCheck("reward", "reward", true, *a.Reward, threshold))
		for _, c := range a.Components {
			dst = append(dst, scoreCheck(c.Name, "reward component "+c.Name, false, c.Score, threshold))
		}
	}
	for _, flags := range []bool{false, true} {
		for _, c := range a.Checks {
			if c.Flag != flags {
				continue
			}
			vc := verifiers.Check{ID: c.ID, Label: c.Label, Required: c.Required && !c.Flag, Detail: c.Detail, Actual: c.Actual, Expected: c.Expected, Flag: c.Flag}
			switch c.Status {
			case "pass", verifiers.FlagRaised:
				vc.Status = verifiers.Pass
			case "fail", verifiers.FlagClear:
				vc.Status = verifiers.Fail
			default:
				vc.Status = verifiers.Error
			}
			if c.Score != nil {
				vc.Score, vc.Scored = *c.Score, true
			}
			dst = append(dst, vc)
		}
	}
	return dst
}

// HasFlags reports whether the answer holds flags.
func (a *Answer) HasFlags() bool {
	for i := range a.Checks {
		if a.Checks[i].Flag {
			return true
		}
	}
	return false
}

// readFlags reads the flags beside a reward ({"reward": x, "flags": [...]})
// into a, and returns it (or the answer's error).
func readFlags(a Answer, x any, at string) Answer {
	list, ok := x.([]any)
	if !ok {
		return Answer{Err: fmt.Sprintf("answer%s.flags: want a list of flags, not %s", at, kindOf(x))}
	}
	for i, f := range list {
		ck, err := readCheck(f, i, false, kindFlag)
		if err != "" {
			return Answer{Err: fmt.Sprintf("answer%s.flags[%d]%s", at, i, err)}
		}
		a.Checks = append(a.Checks, ck)
	}
	return a
}

func scoreCheck(id, label string, required bool, score, threshold float64) verifiers.Check {
	c := verifiers.Check{ID: id, Label: label, Required: required, Score: score, Scored: true, Status: verifiers.Fail}
	cmp := "<"
	if score >= threshold {
		c.Status, cmp = verifiers.Pass, ">="
	}
	c.Detail = fmt.Sprintf("remote %s %s %s threshold %s", label, formatScore(score), cmp, formatScore(threshold))
	return c
}

// parseGavel reads a gavel-protocol answer about n rollouts: per rollout
// a number or {"reward": x}, a list of checks, or {"error": "..."} (the
// service could not grade that rollout); for a batch (n > 1 or a
// verifier whose batch is over 1... the caller sends arrays) a JSON array
// of those; or the JSON Lines of `gavel serve`'s /v1/grade. A failure to
// read makes every rollout's Err; an element {"error": ...} makes only its
// rollout's.
func parseGavel(body []byte, n int, threshold float64) []Answer {
	fail := func(format string, args ...any) []Answer {
		as := make([]Answer, n)
		msg := fmt.Sprintf(format, args...)
		for i := range as {
			as[i].Err = msg
		}
		return as
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return fail("empty answer: want a reward, a list of checks or /v1/grade's JSON Lines")
	}
	if lines, ok := gradeLines(body); ok {
		if len(lines) != n {
			return fail("answer has %d lines of /v1/grade results for %d rollouts", len(lines), n)
		}
		as := make([]Answer, n)
		for i, l := range lines {
			as[i] = gradeLine(l)
		}
		return as
	}
	var top any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		return fail("answer is not JSON: %v", jsonError(body, err))
	}
	if dec.More() {
		return fail("answer holds more than one JSON value")
	}
	if n == 1 {
		if list, ok := top.([]any); ok && len(list) == 1 && !isCheckList(list) {
			// A batch of one (batch > 1 sends arrays): its one answer.
			top = list[0]
		}
		return []Answer{oneAnswer(top, "")}
	}
	list, ok := top.([]any)
	if !ok {
		return fail("answer to a batch of %d rollouts: want a JSON array of %d answers, not %s", n, n, kindOf(top))
	}
	if len(list) != n {
		return fail("answer to a batch of %d rollouts has %d answers", n, len(list))
	}
	as := make([]Answer, n)
	for i, x := range list {
		as[i] = oneAnswer(x, "["+strconv.Itoa(i)+"]")
	}
	return as
}

// isCheckList reports whether list looks like a list of check objects.
func isCheckList(list []any) bool {
	m, ok := list[0].(map[string]any)
	if !ok {
		return false
	}
	_, st := m["status"]
	return st
}

// oneAnswer reads one rollout's answer x; at is its place in the body.
func oneAnswer(x any, at string) Answer {
	switch v := x.(type) {
	case json.Number:
		return rewardAnswer(v, at)
	case map[string]any:
		if e, ok := v["error"]; ok {
			return errorAnswer(v, e, at)
		}
		r, ok := v["reward"]
		if !ok {
			return Answer{Err: fmt.Sprintf("answer%s: an object without reward: want {\"reward\": x}, a number or a list of checks", at)}
		}
		a := rewardAnswer(r, at+".reward")
		if f, ok := v["flags"]; ok && a.Err == "" {
			return readFlags(a, f, at)
		}
		return a
	case []any:
		var a Answer
		checks := 0
		for i, c := range v {
			ck, err := readCheck(c, i, false, "")
			if err != "" {
				return Answer{Err: fmt.Sprintf("answer%s[%d]%s", at, i, err)}
			}
			a.Checks = append(a.Checks, ck)
			if !ck.Flag {
				checks++
			}
		}
		if checks == 0 {
			return Answer{Err: fmt.Sprintf("answer%s: a list without checks", at)}
		}
		return a
	}
	return Answer{Err: fmt.Sprintf("answer%s: want a reward, {\"reward\": x} or a list of checks, not %s", at, kindOf(x))}
}

// errorAnswer reads the answer {"error": e} (m, at its place at): the
// service could not grade the rollout, which is an error, never a score.
// Its text names neither the rollout's place in the batch nor the batch,
// so that the row is the same whatever the batches. An error that is not
// a non-empty string, or beside a reward, is an answer of the wrong shape.
func errorAnswer(m map[string]any, e any, at string) Answer {
	if _, ok := m["reward"]; ok {
		return Answer{Err: fmt.Sprintf("answer%s: an object with both reward and error: want one of them", at)}
	}
	s, ok := e.(string)
	if !ok || strings.TrimSpace(s) == "" {
		return Answer{Err: fmt.Sprintf("answer%s.error: want the reason the rollout could not be graded, a non-empty string, not %s", at, describe(e))}
	}
	return Answer{Err: "could not grade the rollout: " + call.Quote(s)}
}

// rewardAnswer reads a reward, which must be a number in [0, 1].
func rewardAnswer(x any, at string) Answer {
	f, err := score(x)
	if err != "" {
		return Answer{Err: "answer" + at + ": " + err}
	}
	return Answer{Reward: &f}
}

// score reads a number in [0, 1].
func score(x any) (float64, string) {
	num, ok := x.(json.Number)
	if !ok {
		return 0, "want a number in [0, 1], not " + kindOf(x)
	}
	f, err := num.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, "not a finite number: " + num.String()
	}
	if f < 0 || f > 1 {
		return 0, "reward " + num.String() + " outside [0, 1]"
	}
	return f, ""
}

// The values of a row's kind (the checks table's kind column).
const (
	kindCheck = "check"
	kindFlag  = "flag"
)

// readCheck reads one check object (the checks table's shape: id or
// check_id, label, required (default true), status pass, fail or error,
// detail, actual, expected, score).
//
// In a line of /v1/grade's results (rows, true) actual and expected are
// the checks table's columns, strings holding JSON text, taken as they
// are; in a list of checks they are any JSON value. A kind of check or
// flag (`kind`, default check) is read; only, when not "", is the one kind
// allowed, and the default (the elements of flags beside a reward).
func readCheck(x any, i int, rows bool, only string) (Check, string) {
	m, ok := x.(map[string]any)
	if !ok {
		return Check{}, ": a check must be an object, not " + kindOf(x)
	}
	c := Check{ID: strconv.Itoa(i), Required: true}
	k := m["kind"]
	if k == nil && only != "" {
		k = only
	}
	switch {
	case only != "" && k != only:
		return c, ".kind: want " + only + ", not " + describe(k)
	case k == nil || k == kindCheck:
	case k == kindFlag:
		c.Flag, c.Required = true, false
	default:
		return c, ".kind: want check or flag, not " + describe(k)
	}
	for _, k := range []string{"id", "check_id"} {
		if v, ok := m[k]; ok && v != nil {
			s, ok := v.(string)
			if !ok {
				return c, "." + k + ": want a string, not " + kindOf(v)
			}
			c.ID = s
			break
		}
	}
	strs := []struct {
		key string
		dst *string
	}{{"label", &c.Label}, {"detail", &c.Detail}}
	for _, f := range strs {
		if v, ok := m[f.key]; ok && v != nil {
			s, ok := v.(string)
			if !ok {
				return c, "." + f.key + ": want a string, not " + kindOf(v)
			}
			*f.dst = s
		}
	}
	if v, ok := m["required"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return c, ".required: want true or false, not " + kindOf(v)
		}
		c.Required = b
	}
	st, _ := m["status"].(string)
	switch {
	case c.Flag && (st == verifiers.FlagRaised || st == verifiers.FlagClear || st == "error"):
		c.Status = st
	case c.Flag:
		return c, ".status: want raised, clear or error (a flag), not " + describe(m["status"])
	case st == "pass" || st == "fail" || st == "error":
		c.Status = st
	default:
		return c, ".status: want pass, fail or error, not " + describe(m["status"])
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"actual", &c.Actual}, {"expected", &c.Expected}} {
		if v, ok := m[f.key]; ok && v != nil {
			if text, ok := v.(string); ok && rows {
				*f.dst = text
				continue
			}
			b, _ := json.Marshal(v)
			*f.dst = string(b)
		}
	}
	if v, ok := m["score"]; ok && v != nil {
		f, err := score(v)
		if err != "" {
			return c, ".score: " + strings.Replace(err, "reward ", "score ", 1)
		}
		c.Score = &f
	}
	return c, ""
}

// gradeLines splits the JSON Lines of /v1/grade ({"rewards": ..., "checks":
// ...} per line); ok is false when body is not that.
func gradeLines(body []byte) ([][]byte, bool) {
	if !bytes.HasPrefix(body, []byte(`{"rewards"`)) {
		return nil, false
	}
	var lines [][]byte
	for _, l := range bytes.Split(body, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			lines = append(lines, l)
		}
	}
	return lines, true
}

// gradeLine reads one line of /v1/grade's answer: its checks, or, when
// the rollout's status is error, that error.
func gradeLine(l []byte) Answer {
	var line struct {
		Rewards struct {
			Status    string  `json:"status"`
			ErrorKind *string `json:"error_kind"`
			Error     *string `json:"error"`
		} `json:"rewards"`
		Checks []map[string]any `json:"checks"`
	}
	dec := json.NewDecoder(bytes.NewReader(l))
	dec.UseNumber()
	if err := dec.Decode(&line); err != nil {
		return Answer{Err: "a line of /v1/grade results: " + jsonError(l, err)}
	}
	if line.Rewards.Status == verifiers.StatusError && len(line.Checks) == 0 {
		msg := "graded as error"
		if line.Rewards.ErrorKind != nil {
			msg += " (" + *line.Rewards.ErrorKind + ")"
		}
		if line.Rewards.Error != nil {
			msg += ": " + *line.Rewards.Error
		}
		return Answer{Err: msg}
	}
	var a Answer
	checks := 0
	for i, c := range line.Checks {
		ck, err := readCheck(c, i, true, "")
		if err != "" {
			return Answer{Err: fmt.Sprintf("checks[%d]%s", i, err)}
		}
		a.Checks = append(a.Checks, ck)
		if !ck.Flag {
			checks++
		}
	}
	if checks == 0 {
		return Answer{Err: "a line of /v1/grade results without checks"}
	}
	return a
}

// parseNemoGym reads a NeMo Gym verify response: its reward (required, in
// [0, 1]) and reward_components; a failed verification (_ng_failure_class,
// mask_sample true, or failure_kind / failure_reason) is the rollout's
// error with its reason, never a reward.
func parseNemoGym(body []byte, threshold float64) Answer {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return Answer{Err: "verify response is not a JSON object: " + jsonError(body, err)}
	}
	if fc := m[nemogym.FieldFailureClass]; fc != nil && fc != "" {
		msg := "verification failed (" + nemogym.FieldFailureClass + " " + describe(fc) + ")"
		for _, k := range []string{"_ng_failure_judge_error", "failure_reason", nemogym.FieldError} {
			if r := m[k]; r != nil && r != "" {
				msg += ": " + plain(r)
				break
			}
		}
		return Answer{Err: msg}
	}
	if ms, _ := m["mask_sample"].(bool); ms {
		return Answer{Err: "verification failed: the server masked the sample (mask_sample)"}
	}
	fk, fr := m["failure_kind"], m["failure_reason"]
	if (fk != nil && fk != "") || (fr != nil && fr != "") {
		msg := "verification failed"
		if fk != nil && fk != "" {
			msg += " (failure_kind " + describe(fk) + ")"
		}
		if fr != nil && fr != "" {
			msg += ": " + plain(fr)
		}
		return Answer{Err: msg}
	}
	r, ok := m[nemogym.FieldReward]
	if !ok {
		return Answer{Err: "verify response without reward"}
	}
	f, err := score(r)
	if err != "" {
		return Answer{Err: "reward: " + err}
	}
	a := Answer{Reward: &f}
	if rc, ok := m[nemogym.FieldComponents]; ok && rc != nil {
		comps, ok := rc.(map[string]any)
		if !ok {
			return Answer{Err: "reward_components: want an object of scores, not " + kindOf(rc)}
		}
		names := make([]string, 0, len(comps))
		for k := range comps {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			s, err := score(comps[k])
			if err != "" {
				return Answer{Err: "reward_components." + k + ": " + strings.Replace(err, "reward ", "score ", 1)}
			}
			a.Components = append(a.Components, Component{Name: k, Score: s})
		}
	}
	return a
}

// kindOf names a decoded JSON value's kind.
func kindOf(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", x)
}

// describe quotes a string value, else names its kind.
func describe(x any) string {
	if s, ok := x.(string); ok {
		return strconv.Quote(s)
	}
	return kindOf(x)
}

// plain returns a string value as it is, else its JSON text.
func plain(x any) string {
	if s, ok := x.(string); ok {
		return s
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// jsonError describes a decoding error with its byte offset.
func jsonError(body []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, err)
	}
	return err.Error()
}

// Disagree returns "" when the verdicts of a rollout's answers, one per
// asking (--verify-repeats), agree in status and reward; else the detail
// of the check in error that takes their place: "answers disagree: pass,
// fail, pass", each answer as pass or fail, with its reward when it is
// neither 0 nor 1, or as its status.
func Disagree(vds []verifiers.Verdict) string {
	same := true
	for _, vd := range vds[1:] {
		same = same && vd.Outcome == vds[0].Outcome && vd.HasReward == vds[0].HasReward && vd.Reward == vds[0].Reward
	}
	if same {
		return ""
	}
	outcomes := make([]string, len(vds))
	for i, vd := range vds {
		switch vd.Outcome {
		case verifiers.Passed:
			outcomes[i] = verifiers.CheckPass
		case verifiers.Failed:
			outcomes[i] = verifiers.CheckFail
		default:
			outcomes[i] = vd.Outcome.String()
		}
		if vd.HasReward && vd.Reward != 0 && vd.Reward != 1 {
			outcomes[i] += " (reward " + strconv.FormatFloat(vd.Reward, 'g', -1, 64) + ")"
		}
	}
	return "answers disagree: " + strings.Join(outcomes, ", ")
}
