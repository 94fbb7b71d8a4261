package harness

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// drain reads r to the end, checking every rollout is valid JSON; it
// bounds the items read.
func drain(t *testing.T, r *Reader) {
	for i := 0; i < 10000; i++ {
		it, err := r.Next()
		if err != nil {
			return
		}
		if it.Rollout != nil && !json.Valid(it.Rollout) {
			t.Fatalf("%s: invalid rollout %q", it.Where, it.Rollout)
		}
	}
	for _, id := range r.TaskIDs() {
		if row, _ := r.Task(id); !json.Valid(row) {
			t.Fatalf("task %q: invalid row %q", id, row)
		}
	}
}

func addSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func fuzzStream(f *testing.F, format Format, seeds ...string) {
	addSeeds(f, seeds...)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		r, err := NewReader("fuzz", bytes.NewReader(data), format)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, r)
	})
}

func FuzzTauBench(f *testing.F) {
	fuzzStream(f, TauBench, "tau-bench/tool-calling-gpt-4o-0.0_range_0--1.json")
}

func FuzzTau2(f *testing.F) {
	fuzzStream(f, Tau2, "tau2/results.json", "tau2/tasks_last.json")
}

func FuzzInspectJSON(f *testing.F) {
	fuzzStream(f, Inspect, "inspect/log.json")
}

func FuzzMessages(f *testing.F) {
	fuzzStream(f, Messages, "messages/chats.jsonl")
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
		drain(t, r)
	})
}
