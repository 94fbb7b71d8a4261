package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Plain decoders of NeMo Gym rollouts and ATIF trajectories, for the fuzz
// targets (see plain_test.go). A first line or document that looks like
// another format's fails the file, as the readers' hint does; the guess
// itself is sniff's and looksByKeys', shared with the readers.

// plainLines splits JSON Lines as the readers do: on "\n", a trailing
// "\r" dropped, lines of white space skipped. Each line comes with its
// 0-based index among all lines.
func plainLines(data []byte) (lines []string, index []int) {
	for i, line := range strings.SplitAfter(string(data), "\n") {
		line = strings.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace([]byte(line))) == 0 {
			continue
		}
		lines, index = append(lines, line), append(index, i)
	}
	return lines, index
}

// plainOther reports whether the first object of a file, whose first
// bytes are data, looks like another format's than f: by its keys (the
// first maxSniffKeys, repeats included) when it is an object, else by
// data.
func plainOther(f Format, first json.RawMessage, data []byte) bool {
	keys, _, ok := orderedMembers(first)
	var looks Format
	if ok && plainValid(first) {
		var kl keyList
		for _, k := range keys {
			kl.add(k)
		}
		looks, _ = looksByKeys(kl)
	} else {
		looks, _ = sniff(data)
	}
	return looks != "" && looks != f
}

// plainResponseText is nemogym.ResponseText: the output_text parts of the
// assistant messages of output, joined with a newline.
func plainResponseText(resp map[string]json.RawMessage) (string, error) {
	out := bytes.TrimSpace(resp["output"])
	if len(out) == 0 || out[0] != '[' {
		return "", errors.New("output is not an array")
	}
	var b strings.Builder
	for _, it := range elements(out) {
		im := members(it)
		if typ, _ := text(im["type"]); typ != "message" {
			continue
		}
		if role, ok := text(im["role"]); ok && role != "assistant" {
			continue
		}
		content := bytes.TrimSpace(im["content"])
		if len(content) == 0 || content[0] != '[' {
			return "", errors.New("content is not an array")
		}
		for _, p := range elements(content) {
			pm := members(p)
			if typ, _ := text(pm["type"]); typ != "output_text" {
				continue
			}
			s, ok := text(pm["text"])
			if !ok {
				return "", errors.New("output_text without text")
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(s)
		}
	}
	return b.String(), nil
}

// plainPromptText is nemogym.PromptText.
func plainPromptText(input json.RawMessage) (string, error) {
	if isNull(input) {
		return "", nil
	}
	if s, ok := text(input); ok {
		return s, nil
	}
	in := bytes.TrimSpace(input)
	if in[0] != '[' {
		return "", errors.New("input is neither a string nor a list")
	}
	var last map[string]json.RawMessage
	for _, m := range elements(in) {
		mm := members(m)
		if role, _ := text(mm["role"]); role == "user" {
			last = mm
		}
	}
	if last == nil {
		return "", nil
	}
	if s, ok := text(last["content"]); ok {
		return s, nil
	}
	content := bytes.TrimSpace(last["content"])
	if len(content) == 0 || content[0] != '[' {
		return "", errors.New("content is neither a string nor a list")
	}
	var b strings.Builder
	for _, p := range elements(content) {
		if s, ok := text(members(p)["text"]); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(s)
		}
	}
	return b.String(), nil
}

// plainGymSkip are the row members that are not copied as metadata.
var plainGymSkip = map[string]bool{"responses_create_params": true, "response": true, "reward": true,
	"rollout_id": true, "task_id": true, "output": true, "log": true, "initial_state": true, "final_state": true,
	"prompt": true, "model": true, "recorded_reward": true, "recorded_error": true}

// plainNemoGym decodes NeMo Gym rollouts read under a name of stem stem.
func plainNemoGym(stem string, data []byte) plainDoc {
	data = bytes.TrimPrefix(data, bom)
	lines, _ := plainLines(data)
	var doc plainDoc
	for i, line := range lines {
		var m map[string]json.RawMessage
		if plainValid([]byte(line)) {
			m = members(json.RawMessage(line))
		}
		if i == 0 {
			_, hasResp := m["response"]
			_, hasParams := m["responses_create_params"]
			if (m == nil || !hasResp && !hasParams) && plainOther(NemoGym, json.RawMessage(line), data) {
				return plainDoc{fails: true}
			}
		}
		if m == nil {
			doc.items = append(doc.items, plainItem{bad: true})
			continue
		}
		doc.items = append(doc.items, plainGymRow(stem, line, m))
	}
	return doc
}

func plainGymRow(stem, line string, m map[string]json.RawMessage) plainItem {
	t, ok1 := idText(m["_ng_task_index"])
	r, ok2 := idText(m["_ng_rollout_index"])
	if !ok1 || !ok2 {
		return plainItem{bad: true}
	}
	rid := stem + "/" + t + "/" + r
	if a := m["_ng_attempt_index"]; isNumber(a) {
		rid += "/" + string(bytes.TrimSpace(a))
	}
	tid := t
	if name, ok := text(members(m["agent_ref"])["name"]); ok && name != "" {
		tid = name + "/" + t
	}
	f := map[string]json.RawMessage{"rollout_id": quoted(rid), "task_id": quoted(tid)}
	bad := plainItem{bad: true, fields: f}
	resp := members(m["response"])
	if resp == nil {
		return bad
	}
	out, err := plainResponseText(resp)
	if err != nil {
		return bad
	}
	f["prompt"] = nil
	if params, ok := m["responses_create_params"]; ok {
		pm := members(params)
		if pm == nil {
			return bad
		}
		prompt, err := plainPromptText(pm["input"])
		if err != nil {
			return bad
		}
		f["prompt"] = quoted(prompt)
	}
	f["output"] = quoted(out)
	f["model"] = nil
	if model, ok := text(resp["model"]); ok {
		f["model"] = quoted(model)
	}
	rawIf(f, "recorded_reward", m["reward"])
	f["recorded_error"] = nil
	if class := m["_ng_failure_class"]; !isNull(class) {
		e, ok := text(class)
		if !ok {
			var c bytes.Buffer
			json.Compact(&c, class)
			e = c.String()
		}
		keys, vals, _ := orderedMembers([]byte(line))
		reason := ""
		// The judge's error first (its first member of that name), then
		// the first other failure text.
		for i, k := range keys {
			if k == "_ng_failure_judge_error" {
				if s, ok := text(vals[i]); ok {
					reason = s
				}
				break
			}
		}
		for i, k := range keys {
			if reason != "" {
				break
			}
			if strings.HasPrefix(k, "_ng_failure_") && k != "_ng_failure_class" && k != "_ng_failure_terminal" {
				if s, ok := text(vals[i]); ok && s != "" {
					reason = s
					break
				}
			}
		}
		if reason == "" {
			reason, _ = text(m["error"])
		}
		if reason != "" {
			e += ": " + reason
		}
		f["recorded_error"] = quoted(e)
	}
	for k, v := range m {
		if !plainGymSkip[k] {
			f[k] = v
		}
	}
	return plainItem{fields: f}
}

// plainATIF decodes ATIF trajectories read under a name whose directory
// gives the task dirTask ("" for none). valid is false for a file of
// indented documents that encoding/json does not split into objects and
// arrays (the reader splits them by their brackets, unvalidated).
func plainATIF(name, dirTask string, data []byte) (doc plainDoc, valid bool) {
	data = bytes.TrimPrefix(data, bom)
	i := 0
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	docs := i < len(data) && data[i] != '{'
	if i < len(data) && data[i] == '{' {
		for j := i + 1; j < len(data); j++ {
			if data[j] == ' ' || data[j] == '\t' {
				continue
			}
			docs = data[j] == '\n' || data[j] == '\r'
			break
		}
	}
	var values []json.RawMessage
	if docs {
		if !utf8.Valid(data) {
			return plainDoc{}, false
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			var v json.RawMessage
			err := dec.Decode(&v)
			if err == io.EOF {
				break
			}
			if err != nil || (v[0] != '{' && v[0] != '[') {
				return plainDoc{}, false
			}
			values = append(values, v)
		}
	} else {
		lines, _ := plainLines(data)
		for _, l := range lines {
			values = append(values, json.RawMessage(l))
		}
	}
	for i, v := range values {
		var m map[string]json.RawMessage
		if plainValid(v) {
			m = members(v)
		}
		if i == 0 {
			_, hasSteps := m["steps"]
			_, hasVersion := m["schema_version"]
			if (m == nil || !hasSteps && !hasVersion) && plainOther(ATIF, v, data) {
				return plainDoc{fails: true}, true
			}
		}
		defaultID := quoted(fmt.Sprintf("%s#%d", name, i))
		if m == nil {
			doc.items = append(doc.items, plainItem{bad: true, fields: map[string]json.RawMessage{"rollout_id": defaultID}})
			continue
		}
		doc.items = append(doc.items, plainTrajectory(dirTask, defaultID, m))
	}
	return doc, true
}

func plainTrajectory(dirTask string, defaultID json.RawMessage, m map[string]json.RawMessage) plainItem {
	f := map[string]json.RawMessage{"rollout_id": defaultID}
	if s, ok := text(m["session_id"]); ok && s != "" {
		f["rollout_id"] = quoted(s)
	} else if s, ok := text(m["trajectory_id"]); ok && s != "" {
		f["rollout_id"] = quoted(s)
	}
	if t, ok := idText(members(m["extra"])["task_id"]); ok {
		f["task_id"] = quoted(t)
	} else if dirTask != "" {
		f["task_id"] = quoted(dirTask)
	} else {
		return plainItem{bad: true, fields: f}
	}
	steps := bytes.TrimSpace(m["steps"])
	if len(steps) == 0 || steps[0] != '[' {
		return plainItem{bad: true, fields: f}
	}
	out := ""
	for _, st := range elements(steps) {
		sm := members(st)
		if src, _ := text(sm["source"]); src != "agent" {
			continue
		}
		if s := contentText(sm["message"]); s != "" {
			out = s
		}
	}
	f["output"] = quoted(out)
	f["model"] = nil
	if model, ok := text(members(m["agent"])["model_name"]); ok {
		f["model"] = quoted(model)
	}
	rawIf(f, "final_metrics", m["final_metrics"])
	return plainItem{fields: f}
}
