package harness

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// fuzzStream fuzzes the reader of format against its plain decoder
// (plain_test.go): what the plain decoder reads, the reader must read the
// same; strict asks, in addition, that what the plain decoder rejects the
// reader do not read cleanly.
func fuzzStream(f *testing.F, format Format, plain func(data []byte) (plainDoc, bool), strict bool, text string, seeds ...string) {
	addSeeds(f, seeds...)
	f.Add([]byte(text))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		r, err := NewReader("fuzz", bytes.NewReader(data), format)
		if err != nil {
			t.Fatal(err)
		}
		doc, valid := plain(data)
		compareReader(t, r, doc, valid, strict)
		fuzzTurns(t, func() *Reader {
			r, _ := NewReader("fuzz", bytes.NewReader(data), format)
			return r
		})
	})
}

// fuzzTurns reads the input of open twice, with turns off and on, and
// compares them (compareTurns): turns are valid JSON on any input.
func fuzzTurns(t *testing.T, open func() *Reader) {
	t.Helper()
	off, on := open(), open()
	on.SetTurns(true)
	compareTurns(t, off, on)
}

func FuzzTauBench(f *testing.F) {
	plain := func(data []byte) (plainDoc, bool) { return plainTauBench("fuzz", data) }
	fuzzStream(f, TauBench, plain, true, `[{"task_id": 1e2, "reward": 1, "reward": 0, "info": {"reward_info": {"r": 1}, "error": null, "task": {"user_id": "u"}},
		"traj": [{"role": "assistant", "content": [{"type": "text", "text": "a\u00e9"}, {"type": "image"}, {"type": "output_text", "text": ""}]}, {"r\u006fle": "assistant", "content": "b"}]},
		7, {"task_id": {}}, {"task_id": "1e2", "trial": 2}]`, "tau-bench/tool-calling-gpt-4o-0.0_range_0--1.json")
}

func FuzzTau2(f *testing.F) {
	fuzzStream(f, Tau2, plainTau2, false, `{"info": {"agent_info": {"llm": "m"}}, "simulations": [{"id": 3, "task_id": "t", "messages": [{"role": "assistant", "content": "x"}],
		"reward_info": {"reward": 0.5}, "trial": 1}, {"id": "s"}], "tasks": [{"id": "t", "d": 1}, {"id": "t", "d": 2}, {"x": 1}], "simulations": null}`, "tau2/results.json", "tau2/tasks_last.json")
}

func FuzzInspectJSON(f *testing.F) {
	fuzzStream(f, Inspect, plainInspect, false, `{"eval": {"eval_id": "", "run_id": "R", "task": "T"}, "samples": [{"id": "a", "epoch": 2, "store": null, "error": {"message": "boom"}, "limit": {"type": "tokens"},
		"output": {"completion": "", "choices": [{"message": {"content": [{"type": "text", "text": "c"}]}}]}}, {"id": true, "epoch": 1}, {"id": 1, "epoch": "1"}]}`, "inspect/log.json")
}

func FuzzMessages(f *testing.F) {
	f.Add([]byte(`{"task_id": 1, "turns": 2, "messages": [{"role": "tool", "content": "r0"}, {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],` +
		` "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{\"x\": 1}"}}, {"id": "c1", "function": {"name": 3, "arguments": 4}}]}, {"role": "assistant", "function_call": {"name": "g", "arguments": "{"}},` +
		` {"role": "tool", "tool_call_id": "c1", "content": "r1"}, {"role": "function", "name": "g", "content": "r2"}]}`))
	plain := func(data []byte) (plainDoc, bool) { return plainMessages("fuzz", data), true }
	fuzzStream(f, Messages, plain, true, "\xef\xbb\xbf{\"rollout_id\": 5.0, \"output\": null, \"x\": 1, \"x\": 2}\r\n  \n[1]\n{\"rollout_id\": null, \"messages\": [{\"role\": \"assistant\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"b\"}]}", "messages/chats.jsonl")
}

// FuzzNemoGym reads rollouts named fuzz; input is kept under 200 KiB, so
// that the reader's buffer holds the first bytes the hint looks at whole.
func FuzzNemoGym(f *testing.F) {
	addSeeds(f, "nemo-gym/run/rollouts.jsonl", "nemo-gym/run/rollouts_failures.jsonl", "messages/chats.jsonl")
	f.Add([]byte("\xef\xbb\xbf{\"responses_create_params\": {\"input\": [{\"role\": \"user\", \"content\": [{\"text\": \"q\"}, {\"text\": \"\"}]}]}, \"response\": {\"model\": 3, \"output\": [{\"type\": \"message\", \"content\": [{\"type\": \"output_text\", \"text\": \"\"}, {\"type\": \"output_text\", \"text\": \"a\\u00e9\"}]}, {\"type\": \"function_call\", \"call_id\": \"c\", \"name\": \"f\", \"arguments\": \"[1]\"}]}, \"_ng_task_index\": \"t\", \"_ng_rollout_index\": 1e2, \"_ng_attempt_index\": 2, \"_ng_failure_class\": {\"a\": 1}, \"error\": \"boom\", \"x\": 1, \"x\": 2}\r\n  \n[1]\n{\"response\": null, \"_ng_task_index\": 0, \"_ng_rollout_index\": 0, \"agent_ref\": {\"name\": \"\"}}"))
	f.Add([]byte(`{"_ng_task_index": 0, "_ng_rollout_index": 0, "turns": 1, "response": {"output": [{"type": "function_call_output", "call_id": "x", "output": "o"}, {"type": "reasoning"},` +
		` {"type": "message", "content": [{"type": "output_text", "text": "a"}]}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}, {"type": "web_search_call"},` +
		` {"type": "function_call_output", "call_id": "c", "output": [{"type": "output_text", "text": "r"}]}, {"type": "message", "role": "user", "content": "u"}, {"type": "message", "role": "assistant", "content": []}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 200<<10 {
			return
		}
		r, err := NewReader("fuzz", bytes.NewReader(data), NemoGym)
		if err != nil {
			t.Fatal(err)
		}
		compareReader(t, r, plainNemoGym("fuzz", data), true, true)
		fuzzTurns(t, func() *Reader {
			r, _ := NewReader("fuzz", bytes.NewReader(data), NemoGym)
			return r
		})
	})
}

// FuzzATIF reads trajectories named t1/trajectory.json (the directory
// gives the task t1); input is kept under 48 KiB, within the window the
// reader looks at to tell JSON Lines from indented documents.
func FuzzATIF(f *testing.F) {
	addSeeds(f, "atif/job/hello-file__Xk3pQ9a/agent/trajectory.json", "atif/batch.jsonl", "tau2/results.json")
	f.Add([]byte("{\"schema_version\": \"ATIF-v1.7\", \"trajectory_id\": \"t\", \"steps\": [{\"source\": \"agent\", \"message\": [{\"type\": \"text\", \"text\": \"x\"}]}, {\"source\": \"agent\", \"message\": \"\"}], \"extra\": {\"task_id\": 7}}\n\n{\"steps\": {}}\n"))
	f.Add([]byte("{\n \"session_id\": \"\", \"steps\": [], \"agent\": {\"model_name\": \"m\"}, \"final_metrics\": null}\n[1]  {\"steps\": 1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 48<<10 {
			return
		}
		const name = "t1/trajectory.json"
		r, err := NewReader(name, bytes.NewReader(data), ATIF)
		if err != nil {
			t.Fatal(err)
		}
		doc, valid := plainATIF(name, "t1", data)
		compareReader(t, r, doc, valid, false)
		fuzzTurns(t, func() *Reader {
			r, _ := NewReader(name, bytes.NewReader(data), ATIF)
			return r
		})
	})
}

// FuzzInspectSample fuzzes the sample member of an .eval archive (the
// zip itself is the standard library's).
func FuzzInspectSample(f *testing.F) {
	log, err := os.ReadFile("testdata/inspect/log.json")
	if err != nil {
		f.Fatal(err)
	}
	var l struct{ Samples []json.RawMessage }
	if err := json.Unmarshal(bytes.TrimPrefix(log, bom), &l); err != nil {
		f.Fatal(err)
	}
	for _, s := range l.Samples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, sample []byte) {
		if len(sample) > 1<<20 {
			return
		}
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for name, data := range map[string][]byte{
			"header.json":            []byte(`{"eval":{"eval_id":"e","task":"t","model":"m"}}`),
			"samples/1_epoch_1.json": sample,
		} {
			w, _ := zw.Create(name)
			w.Write(data)
		}
		zw.Close()
		r, err := NewEvalReader("fuzz.eval", bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		var doc plainDoc
		sample = bytes.TrimPrefix(sample, bom)
		valid := plainValid(sample)
		if valid {
			h := plainHeader{evalID: "e", task: "t", model: "m", seen: true}
			doc.items = []plainItem{plainSample(h, sample, &doc.tasks)}
		}
		compareReader(t, r, doc, valid, true)
		fuzzTurns(t, func() *Reader {
			r, _ := NewEvalReader("fuzz.eval", bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			return r
		})
	})
}
