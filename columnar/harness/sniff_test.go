package harness

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// firstError reads r to the end and returns the error of the file, or
// else the error of its first trajectory, or nil.
func firstError(r *Reader) error {
	var first error
	for i := 0; i < 1000; i++ {
		it, err := r.Next()
		if err == io.EOF {
			return first
		}
		if err != nil {
			return err
		}
		if first == nil && it.Err != nil {
			first = it.Err
		}
	}
	return first
}

// TestWrongFormatHint reads files of one format as another's: the error
// says what the file looks like and which format to try.
func TestWrongFormatHint(t *testing.T) {
	const (
		tauBench  = "tau-bench/tool-calling-gpt-4o-0.0_range_0--1.json"
		tau2      = "tau2/results.json"
		tau2Last  = "tau2/tasks_last.json"
		logJSON   = "inspect/log.json"
		archive   = "inspect/run.eval"
		chats     = "messages/chats.jsonl"
		gym       = "nemo-gym/run/rollouts.jsonl"
		atifDoc   = "atif/job/hello-file__Xk3pQ9a/agent/trajectory.json"
		atifJSONL = "atif/batch.jsonl"
	)
	tests := []struct {
		file  string
		read  Format
		looks Format
		want  string
	}{
		{tauBench, Tau2, TauBench, "(this looks like a tau-bench results array; try --from tau-bench)"},
		{tauBench, Inspect, TauBench, "(this looks like a tau-bench results array; try --from tau-bench)"},
		{tauBench, Messages, TauBench, "(this looks like a tau-bench results array; try --from tau-bench)"},
		{logJSON, TauBench, Inspect, "(this looks like an Inspect log; try --from inspect)"},
		{logJSON, Tau2, Inspect, "no simulations (this looks like an Inspect log; try --from inspect)"},
		{logJSON, Messages, Inspect, "(this looks like an Inspect log; try --from inspect)"},
		{tau2, TauBench, Tau2, "(this looks like a tau2 results file; try --from tau2)"},
		{tau2, Inspect, Tau2, "no eval or samples (this looks like a tau2 results file; try --from tau2)"},
		{tau2Last, Inspect, Tau2, "no eval or samples (this looks like a tau2 results file; try --from tau2)"},
		{tau2, Messages, Tau2, "(this looks like a tau2 results file; try --from tau2)"},
		{archive, TauBench, Inspect, "(this looks like an Inspect .eval archive; try --from inspect)"},
		{archive, Tau2, Inspect, "(this looks like an Inspect .eval archive; try --from inspect)"},
		{chats, TauBench, Messages, "(this looks like JSON Lines of chat messages; try --from messages)"},
		{chats, Tau2, Messages, "data after the end at byte"},
		{chats, Inspect, Messages, "data after the end at byte"},
		{gym, Messages, NemoGym, "line 1: no messages or output (this looks like NeMo Gym rollouts; try --from nemo-gym)"},
		{gym, ATIF, NemoGym, "line 1 (byte 0): no steps or schema_version (this looks like NeMo Gym rollouts; try --from nemo-gym)"},
		{gym, TauBench, NemoGym, "(this looks like NeMo Gym rollouts; try --from nemo-gym)"},
		{gym, Tau2, NemoGym, "data after the end at byte"},
		{gym, Inspect, NemoGym, "data after the end at byte"},
		{atifDoc, NemoGym, ATIF, "line 1 (byte 0): invalid JSON"},
		{atifDoc, Messages, ATIF, "(this looks like an ATIF trajectory; try --from atif)"},
		{atifDoc, TauBench, ATIF, "(this looks like an ATIF trajectory; try --from atif)"},
		{atifDoc, Tau2, ATIF, "no simulations (this looks like an ATIF trajectory; try --from atif)"},
		{atifDoc, Inspect, ATIF, "(this looks like an ATIF trajectory; try --from atif)"},
		{atifJSONL, NemoGym, ATIF, "line 1 (byte 0): no response or responses_create_params"},
		{atifJSONL, Messages, ATIF, "line 1: no messages or output"},
		{tauBench, NemoGym, TauBench, "line 1 (byte 0): invalid JSON"},
		{tauBench, ATIF, TauBench, "trajectory 1 (byte 0): not a JSON object"},
		{logJSON, NemoGym, Inspect, "(this looks like an Inspect log; try --from inspect)"},
		{logJSON, ATIF, Inspect, "no steps or schema_version (this looks like an Inspect log; try --from inspect)"},
		{tau2, ATIF, Tau2, "no steps or schema_version (this looks like a tau2 results file; try --from tau2)"},
		{tau2, NemoGym, Tau2, "(this looks like a tau2 results file; try --from tau2)"},
		{archive, NemoGym, Inspect, "(this looks like an Inspect .eval archive; try --from inspect)"},
		{archive, ATIF, Inspect, "(this looks like an Inspect .eval archive; try --from inspect)"},
		{chats, NemoGym, Messages, "no response or responses_create_params (this looks like JSON Lines of chat messages; try --from messages)"},
		{chats, ATIF, Messages, "no steps or schema_version (this looks like JSON Lines of chat messages; try --from messages)"},
	}
	for _, tt := range tests {
		t.Run(tt.file+" as "+string(tt.read), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewReader("-", bytes.NewReader(data), tt.read)
			if err != nil {
				t.Fatal(err)
			}
			err = firstError(r)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("read of %s as %s: error %v, want a FormatError", tt.file, tt.read, err)
			}
			if fe.Looks != tt.looks {
				t.Errorf("read of %s as %s: looks like %s, want %s", tt.file, tt.read, fe.Looks, tt.looks)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "try --from "+string(tt.looks)) {
				t.Errorf("read of %s as %s: error %q, want one containing %q", tt.file, tt.read, err, tt.want)
			}
		})
	}
}

// TestNoHint checks that a file of the format read, or one that looks
// like no harness's, gets no hint.
func TestNoHint(t *testing.T) {
	tests := []struct {
		name, data string
		read       Format
	}{
		{"numbers as tau2", `[1, 2]`, Tau2},
		{"empty object as inspect", `{}`, Inspect},
		{"other object as tau-bench", `{"rows": []}`, TauBench},
		{"gavel rollouts as tau2", `{"rollout_id": "r1", "task_id": "T"}` + "\n" + `{"rollout_id": "r2"}`, Tau2},
		{"tau2 without simulations", `{"info": {}, "tasks": []}`, Tau2},
		{"text as messages", "hello\n", Messages},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader("-", strings.NewReader(tt.data), tt.read)
			if err != nil {
				t.Fatal(err)
			}
			var fe *FormatError
			if err := firstError(r); errors.As(err, &fe) {
				t.Errorf("read of %s as %s: error %v, want no hint", tt.data, tt.read, err)
			}
		})
	}
}

// TestStdinStemNemoGym checks that NeMo Gym rollouts read from standard
// input have ids stemmed stdin, and those of a file its stem.
func TestStdinStemNemoGym(t *testing.T) {
	line := `{"response": {"output": []}, "agent_ref": {"name": "a"}, "_ng_task_index": 4, "_ng_rollout_index": 1}`
	for name, want := range map[string]string{"-": `"rollout_id":"stdin/4/1"`, "out/run.jsonl.zst": `"rollout_id":"run/4/1"`} {
		r, err := NewReader(name, strings.NewReader(line), NemoGym)
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Next()
		if err != nil || it.Err != nil {
			t.Fatalf("Next() = %v, %v", err, it.Err)
		}
		if !strings.Contains(string(it.Rollout), want) || !strings.Contains(string(it.Rollout), `"task_id":"a/4"`) {
			t.Errorf("rollout of %s = %s, want one holding %s and task a/4", name, it.Rollout, want)
		}
	}
}

// TestStdinStem checks that tau-bench rollouts read from standard input,
// named "-", have ids stemmed stdin, and those of a file its stem.
func TestStdinStem(t *testing.T) {
	for name, want := range map[string]string{"-": `"rollout_id":"stdin/0/0"`, "dir/airline.json.gz": `"rollout_id":"airline/0/0"`} {
		r, err := NewReader(name, strings.NewReader(`[{"task_id": 0, "trial": 0, "reward": 1, "info": {}, "traj": []}]`), TauBench)
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Next()
		if err != nil || it.Err != nil {
			t.Fatalf("Next() = %v, %v", err, it.Err)
		}
		if !strings.Contains(string(it.Rollout), want) {
			t.Errorf("rollout of %s = %s, want one holding %s", name, it.Rollout, want)
		}
	}
}
