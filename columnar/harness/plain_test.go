package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// A plain decoder of each harness format, written with encoding/json and
// independent of the readers, for the fuzz targets to compare them with:
// it reads the few fields the readers map (ids, the output text, the
// recorded values) straight from the document.
//
// Where the readers are lenient or choose, the plain decoder says so:
//
//   - a key that repeats in an object: the first counts (as
//     jsonview.Value.Get reads it), where encoding/json keeps the last;
//   - a document is valid when encoding/json finds it valid and it is
//     valid UTF-8 (jsonview checks UTF-8, encoding/json does not);
//   - tau2 and Inspect .json logs: the top-level members the reader does
//     not map are skipped following strings and brackets, unvalidated, so
//     a document the plain decoder rejects may still read cleanly; only
//     documents it accepts are compared.

// plainItem is what the plain decoder expects of one trajectory.
type plainItem struct {
	// bad: the item must carry an error; its fields, if any, are what
	// its rollout must still hold.
	bad bool
	// fields are rollout members and their JSON values; a nil value
	// means the member must be absent.
	fields map[string]json.RawMessage
}

// plainDoc is what the plain decoder expects of one document.
type plainDoc struct {
	items []plainItem
	// fails: after the items, Next must return an error other than
	// io.EOF.
	fails bool
	// anyEnd: the reader may end with io.EOF or an error (a format
	// hint for a document that holds no trajectories).
	anyEnd bool
	// tasks is the tasks table, in the order first seen.
	tasks plainTasks
}

// plainTask is one row of the tasks table.
type plainTask struct {
	id  string
	row map[string]json.RawMessage
}

// plainTasks is a tasks table; a task's first row counts.
type plainTasks []plainTask

func (ts *plainTasks) add(id string, members map[string]json.RawMessage) {
	for _, t := range *ts {
		if t.id == id {
			return
		}
	}
	row := map[string]json.RawMessage{}
	for k, v := range members {
		row[k] = v
	}
	row["task_id"] = quoted(id)
	*ts = append(*ts, plainTask{id, row})
}

// plainValid reports whether data is one valid JSON text.
func plainValid(data []byte) bool {
	return json.Valid(data) && utf8.Valid(data)
}

// members returns the members of a JSON object, the first of a repeated
// key, or nil when raw is not an object.
func members(raw json.RawMessage) map[string]json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	m := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		k := tok.(string)
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
}

// orderedMembers returns the keys and values of a JSON object in order,
// repeats included; ok is false when raw is not an object.
func orderedMembers(raw []byte) (keys []string, vals []json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		keys, vals = append(keys, tok.(string)), append(vals, v)
	}
	return keys, vals, true
}

// elements returns the elements of a JSON array, or nil when raw is not
// an array.
func elements(raw json.RawMessage) []json.RawMessage {
	var a []json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '[' || json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return a
}

// text returns a JSON string's text.
func text(raw json.RawMessage) (string, bool) {
	var s string
	if len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// isNull reports whether a value is absent or null.
func isNull(raw json.RawMessage) bool {
	return raw == nil || string(bytes.TrimSpace(raw)) == "null"
}

// isNumber reports whether raw is a JSON number.
func isNumber(raw json.RawMessage) bool {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return false
	}
	n, ok := v.(json.Number)
	return ok && n != ""
}

// idText returns an id as text: a string's text, a number as written.
func idText(raw json.RawMessage) (string, bool) {
	if s, ok := text(raw); ok {
		return s, true
	}
	if isNumber(raw) {
		return string(bytes.TrimSpace(raw)), true
	}
	return "", false
}

// quoted is s as a JSON value.
func quoted(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// contentText is the text of a message's content: a string, or the
// non-empty texts of the text parts of a list, joined with a newline.
func contentText(content json.RawMessage) string {
	if s, ok := text(content); ok {
		return s
	}
	var texts []string
	for _, p := range elements(content) {
		pm := members(p)
		typ, _ := text(pm["type"])
		if typ != "text" && typ != "output_text" && typ != "input_text" {
			continue
		}
		if s, ok := text(pm["text"]); ok && s != "" {
			texts = append(texts, s)
		}
	}
	return strings.Join(texts, "\n")
}

// assistantTexts returns the non-empty texts of the assistant messages
// of msgs, in order.
func assistantTexts(msgs json.RawMessage) []string {
	var texts []string
	for _, m := range elements(msgs) {
		mm := members(m)
		if role, _ := text(mm["role"]); role != "assistant" {
			continue
		}
		texts = append(texts, contentText(mm["content"]))
	}
	return texts
}

// allOutput is every assistant text joined with a newline.
func allOutput(msgs json.RawMessage) json.RawMessage {
	var nonEmpty []string
	for _, s := range assistantTexts(msgs) {
		if s != "" {
			nonEmpty = append(nonEmpty, s)
		}
	}
	return quoted(strings.Join(nonEmpty, "\n"))
}

// rawIf sets fields[k] to v, or to nil (absent) when v is absent or null.
func rawIf(fields map[string]json.RawMessage, k string, v json.RawMessage) {
	if isNull(v) {
		fields[k] = nil
		return
	}
	fields[k] = v
}

// plainTauBench decodes a tau-bench result array.
func plainTauBench(stem string, data []byte) (plainDoc, bool) {
	data = bytes.TrimPrefix(data, bom)
	if !plainValid(data) {
		return plainDoc{}, false
	}
	t := bytes.TrimSpace(data)
	if t[0] != '[' {
		return plainDoc{fails: true}, true
	}
	var doc plainDoc
	for _, e := range elements(data) {
		res := members(e)
		if res == nil {
			doc.items = append(doc.items, plainItem{bad: true})
			continue
		}
		task, ok := idText(res["task_id"])
		if !ok {
			doc.items = append(doc.items, plainItem{bad: true})
			continue
		}
		trial, _ := idText(res["trial"])
		info := members(res["info"])
		if t := members(info["task"]); t != nil {
			doc.tasks.add(task, t)
		}
		f := map[string]json.RawMessage{
			"rollout_id": quoted(stem + "/" + task + "/" + trial),
			"task_id":    quoted(task),
			"output":     allOutput(res["traj"]),
		}
		rawIf(f, "trial", res["trial"])
		rawIf(f, "recorded_reward", res["reward"])
		rawIf(f, "recorded_scores", info["reward_info"])
		rawIf(f, "recorded_error", info["error"])
		doc.items = append(doc.items, plainItem{fields: f})
	}
	return doc, true
}

// plainTau2 decodes a tau2 results object, its members in order.
func plainTau2(data []byte) (plainDoc, bool) {
	data = bytes.TrimPrefix(data, bom)
	if !plainValid(data) {
		return plainDoc{}, false
	}
	keys, vals, ok := orderedMembers(data)
	if !ok {
		return plainDoc{fails: true}, true
	}
	var doc plainDoc
	var model json.RawMessage
	sims := false
	for i, k := range keys {
		v := vals[i]
		switch k {
		case "info":
			if llm := members(members(v)["agent_info"])["llm"]; llm != nil {
				if _, ok := text(llm); ok {
					model = llm
				}
			}
		case "tasks":
			if !isNull(v) && elements(v) == nil {
				doc.fails = true
				return doc, true
			}
			for _, e := range elements(v) {
				t := members(e)
				id, ok := idText(t["id"])
				if t == nil || !ok {
					continue
				}
				delete(t, "id")
				doc.tasks.add(id, t)
			}
		case "simulations":
			sims = true
			if isNull(v) {
				continue
			}
			es := elements(v)
			if es == nil {
				doc.fails = true
				return doc, true
			}
			for _, e := range es {
				doc.items = append(doc.items, plainSimulation(model, e))
			}
		}
	}
	doc.anyEnd = !sims
	return doc, true
}

func plainSimulation(model, e json.RawMessage) plainItem {
	sim := members(e)
	if sim == nil {
		return plainItem{bad: true}
	}
	id, ok1 := idText(sim["id"])
	task, ok2 := idText(sim["task_id"])
	if !ok1 || !ok2 {
		return plainItem{bad: true}
	}
	f := map[string]json.RawMessage{
		"rollout_id": quoted(id),
		"task_id":    quoted(task),
		"output":     allOutput(sim["messages"]),
		"model":      model,
	}
	ri := members(sim["reward_info"])
	rawIf(f, "trial", sim["trial"])
	rawIf(f, "recorded_reward", ri["reward"])
	rawIf(f, "recorded_scores", sim["reward_info"])
	rawIf(f, "termination_reason", sim["termination_reason"])
	return plainItem{fields: f}
}

// plainHeader is the part of an Inspect eval header a sample uses.
type plainHeader struct {
	evalID, task, model, runID string
	seen                       bool
}

func plainEval(v json.RawMessage) plainHeader {
	m := members(v)
	s := func(k string) string { t, _ := text(m[k]); return t }
	h := plainHeader{evalID: s("eval_id"), task: s("task"), model: s("model"), runID: s("run_id"), seen: true}
	if h.evalID == "" {
		h.evalID = h.runID
	}
	return h
}

// plainInspect decodes an Inspect .json EvalLog, its members in order.
func plainInspect(data []byte) (plainDoc, bool) {
	data = bytes.TrimPrefix(data, bom)
	if !plainValid(data) {
		return plainDoc{}, false
	}
	keys, vals, ok := orderedMembers(data)
	if !ok {
		return plainDoc{fails: true}, true
	}
	var doc plainDoc
	var h plainHeader
	samples := false
	for i, k := range keys {
		v := vals[i]
		switch k {
		case "eval":
			if members(v) == nil {
				doc.fails = true
				return doc, true
			}
			h = plainEval(v)
		case "samples":
			samples = true
			if isNull(v) {
				continue
			}
			es := elements(v)
			if es == nil || !h.seen {
				doc.fails = true
				return doc, true
			}
			for _, e := range es {
				doc.items = append(doc.items, plainSample(h, e, &doc.tasks))
			}
		}
	}
	doc.anyEnd = !h.seen && !samples
	return doc, true
}

func plainSample(h plainHeader, e json.RawMessage, tasks *plainTasks) plainItem {
	smp := members(e)
	if smp == nil {
		return plainItem{bad: true}
	}
	id, ok := idText(smp["id"])
	if !ok || !isNumber(smp["epoch"]) {
		return plainItem{bad: true}
	}
	epoch, _ := idText(smp["epoch"])
	row := map[string]json.RawMessage{}
	for _, k := range []string{"input", "target", "choices", "metadata", "setup"} {
		if !isNull(smp[k]) {
			row[k] = smp[k]
		}
	}
	tasks.add(h.task+"/"+id, row)
	out := members(smp["output"])
	output, _ := text(out["completion"])
	if output == "" {
		var msg json.RawMessage
		if cs := elements(out["choices"]); len(cs) > 0 {
			msg = members(cs[0])["message"]
		}
		output = contentText(members(msg)["content"])
	}
	f := map[string]json.RawMessage{
		"rollout_id": quoted(h.evalID + "/" + id + "/" + epoch),
		"task_id":    quoted(h.task + "/" + id),
		"output":     quoted(output),
		"epoch":      smp["epoch"],
		"model":      nil,
		"run_id":     nil,
	}
	if h.model != "" {
		f["model"] = quoted(h.model)
	}
	if h.runID != "" {
		f["run_id"] = quoted(h.runID)
	}
	rawIf(f, "final_state", smp["store"])
	rawIf(f, "recorded_scores", smp["scores"])
	f["recorded_error"] = nil
	if e := smp["error"]; !isNull(e) {
		f["recorded_error"] = e
		if m, ok := members(e)["message"]; ok {
			f["recorded_error"] = m
		}
	}
	rawIf(f, "termination_reason", members(smp["limit"])["type"])
	return plainItem{fields: f}
}

// plainMessages decodes JSON Lines of chats, named name, line by line.
func plainMessages(name string, data []byte) plainDoc {
	data = bytes.TrimPrefix(data, bom)
	lines := strings.SplitAfter(string(data), "\n")
	var doc plainDoc
	for i, line := range lines {
		if line == "" { // after a final newline
			continue
		}
		line = strings.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace([]byte(line))) == 0 {
			continue
		}
		// A line that is not an object still names its rollout.
		defaultID := quoted(fmt.Sprintf("%s#%d", name, i))
		var m map[string]json.RawMessage
		if plainValid([]byte(line)) {
			m = members(json.RawMessage(line))
		}
		if m == nil {
			doc.items = append(doc.items, plainItem{bad: true, fields: map[string]json.RawMessage{"rollout_id": defaultID}})
			continue
		}
		f := map[string]json.RawMessage{
			"rollout_id": defaultID,
			"messages":   nil,
		}
		if !isNull(m["rollout_id"]) {
			f["rollout_id"] = m["rollout_id"]
		}
		for _, k := range []string{"task_id", "initial_state", "final_state"} {
			f[k] = m[k]
		}
		if v, ok := m["output"]; ok {
			f["output"] = v
		} else {
			texts := assistantTexts(m["messages"])
			last := ""
			if len(texts) > 0 {
				last = texts[len(texts)-1]
			}
			f["output"] = quoted(last)
		}
		for k, v := range m {
			switch k {
			case "rollout_id", "task_id", "initial_state", "final_state", "output", "log", "messages":
			default:
				f[k] = v
			}
		}
		doc.items = append(doc.items, plainItem{fields: f})
	}
	return doc
}

// sameJSON reports whether two JSON texts hold the same value (numbers
// compared as written).
func sameJSON(a, b json.RawMessage) bool {
	decode := func(raw json.RawMessage) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	va, ok1 := decode(a)
	vb, ok2 := decode(b)
	return ok1 && ok2 && reflect.DeepEqual(va, vb)
}

// compareReader reads r to its end and checks it against the plain
// decoder's doc; strict asks that a reader that reads data cleanly (no
// item error, io.EOF) agree with a plain decoder that rejects it (valid
// false), which it must not.
func compareReader(t *testing.T, r *Reader, doc plainDoc, valid, strict bool) {
	t.Helper()
	var got []Item
	var end error
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("more than 10000 items")
		}
		it, err := r.Next()
		if err != nil {
			end = err
			break
		}
		if it.Rollout != nil {
			if !json.Valid(it.Rollout) || bytes.ContainsAny(it.Rollout, "\n\r") {
				t.Fatalf("%s: rollout is not one line of valid JSON: %q", it.Where, it.Rollout)
			}
			it.Rollout = bytes.Clone(it.Rollout)
		}
		got = append(got, it)
	}
	for _, id := range r.TaskIDs() {
		if row, _ := r.Task(id); !json.Valid(row) {
			t.Fatalf("task %q: invalid row %q", id, row)
		}
	}
	if valid && !doc.fails && !doc.anyEnd {
		if len(r.TaskIDs()) != len(doc.tasks) {
			t.Fatalf("the reader has tasks %q, the plain decoder %d", r.TaskIDs(), len(doc.tasks))
		}
		for i, id := range r.TaskIDs() {
			want := doc.tasks[i]
			row, _ := r.Task(id)
			got := members(row)
			if id != want.id || len(got) != len(want.row) {
				t.Fatalf("task %d: %q with row %s; the plain decoder's: %q with %d members", i, id, row, want.id, len(want.row))
			}
			for k, w := range want.row {
				if !sameJSON(got[k], w) {
					t.Fatalf("task %q: %s = %s, want %s", id, k, got[k], w)
				}
			}
		}
	}
	if !valid {
		if !strict || end != io.EOF {
			return
		}
		for _, it := range got {
			if it.Err != nil {
				return
			}
		}
		t.Fatalf("the reader read %d items cleanly from a document the plain decoder rejects", len(got))
	}
	switch {
	case doc.anyEnd:
	case doc.fails && end == io.EOF:
		t.Fatalf("the reader ended with io.EOF after %d items; the plain decoder wants an error", len(got))
	case !doc.fails && end != io.EOF:
		t.Fatalf("the reader ended with %v after %d items; the plain decoder reads %d", end, len(got), len(doc.items))
	}
	if len(got) != len(doc.items) {
		t.Fatalf("the reader read %d items, the plain decoder %d", len(got), len(doc.items))
	}
	for i, it := range got {
		want := doc.items[i]
		if (it.Err != nil) != want.bad {
			t.Fatalf("item %d (%s): error %v, the plain decoder wants an error: %v", i, it.Where, it.Err, want.bad)
		}
		if want.bad && want.fields == nil {
			continue
		}
		m := members(it.Rollout)
		for k, w := range want.fields {
			g, ok := m[k]
			switch {
			case w == nil && ok:
				t.Fatalf("item %d (%s): rollout has %s %s, want none", i, it.Where, k, g)
			case w != nil && !ok:
				t.Fatalf("item %d (%s): rollout lacks %s, want %s", i, it.Where, k, w)
			case w != nil && !sameJSON(g, w):
				t.Fatalf("item %d (%s): rollout %s = %s, want %s", i, it.Where, k, g, w)
			}
		}
	}
}
