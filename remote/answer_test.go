package remote

import (
	"strings"
	"testing"
)

func TestParseGavel(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		n          int
		reward     []float64 // -1: checks; -2: error
		err        string
	}{
		{"number", `0.25`, 1, []float64{0.25}, ""},
		{"object", `{"reward": 1}`, 1, []float64{1}, ""},
		{"batch of one", `[0.5]`, 1, []float64{0.5}, ""},
		{"checks", `[{"status":"pass"},{"id":"x","status":"fail"}]`, 1, []float64{-1}, ""},
		{"batch", `[0.5, [{"status":"pass"}], {"reward": 0}]`, 3, []float64{0.5, -1, 0}, ""},
		{"batch element wrong", `[0.5, "x"]`, 2, []float64{0.5, -2}, `answer[1]: want a reward`},
		{"batch too short", `[0.5]`, 2, []float64{-2, -2}, "has 1 answers"},
		{"outside", `1.5`, 1, []float64{-2}, "outside [0, 1]"},
		{"negative", `{"reward": -0.1}`, 1, []float64{-2}, "outside [0, 1]"},
		{"not json", `{"reward": `, 1, []float64{-2}, "not JSON"},
		{"two values", `1 2`, 1, []float64{-2}, "more than one JSON value"},
		{"no reward", `{"score": 1}`, 1, []float64{-2}, "without reward"},
		{"flag", `[{"id":"f","status":"raised","kind":"flag"},{"status":"pass"}]`, 1, []float64{-1}, ""},
		{"flags only", `[{"id":"f","status":"raised","kind":"flag"}]`, 1, []float64{-2}, "a list without checks"},
		{"flag status", `[{"status":"pass"},{"id":"f","status":"pass","kind":"flag"}]`, 1, []float64{-2}, ".status: want raised, clear or error (a flag)"},
		{"check status raised", `[{"status":"raised"}]`, 1, []float64{-2}, ".status: want pass, fail or error"},
		{"other kind", `[{"status":"pass","kind":"note"}]`, 1, []float64{-2}, `.kind: want check or flag, not "note"`},
		{"reward and flags", `{"reward": 1, "flags": [{"id":"f","status":"clear"}]}`, 1, []float64{1}, ""},
		{"reward and bad flags", `{"reward": 1, "flags": {"id":"f"}}`, 1, []float64{-2}, "answer.flags: want a list of flags"},
		{"reward and a check as flag", `{"reward": 1, "flags": [{"id":"f","status":"pass","kind":"check"}]}`, 1, []float64{-2}, "answer.flags[0].kind: want flag"},
		{"bad status", `[{"status":"ok"}]`, 1, []float64{-2}, `.status: want pass, fail or error, not "ok"`},
		{"bad score", `[{"status":"pass","score":2}]`, 1, []float64{-2}, "score 2 outside"},
		{"bad required", `[{"status":"pass","required":"yes"}]`, 1, []float64{-2}, ".required: want true or false"},
		{"empty list", `[]`, 1, []float64{-2}, "a list without checks"},
		{"empty", ``, 1, []float64{-2}, "empty answer"},
		{"batch element error", `[0.5, {"error": "KeyError: 'x'"}, [{"status":"pass"}]]`, 3, []float64{0.5, -2, -1}, `could not grade the rollout: "KeyError: 'x'"`},
		{"error alone", `{"error": "ValueError: no answer"}`, 1, []float64{-2}, `could not grade the rollout: "ValueError: no answer"`},
		{"error in a batch of one", `[{"error": "boom"}]`, 1, []float64{-2}, `could not grade the rollout: "boom"`},
		{"error not a string", `[1, {"error": 3}]`, 2, []float64{1, -2}, `answer[1].error: want the reason the rollout could not be graded, a non-empty string, not a number`},
		{"error empty", `{"error": " "}`, 1, []float64{-2}, `.error: want the reason`},
		{"error and reward", `[{"error": "x", "reward": 1}, 0]`, 2, []float64{-2, 0}, "both reward and error"},
		{"grade lines", "{\"rewards\":{\"status\":\"passed\"},\"checks\":[{\"check_id\":\"a\",\"status\":\"pass\",\"actual\":\"[1]\"}]}\n{\"rewards\":{\"status\":\"error\",\"error_kind\":\"input\",\"error\":\"bad\"},\"checks\":[]}\n", 2, []float64{-1, -2}, "graded as error (input): bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := parseGavel([]byte(tc.body), tc.n, 1)
			if len(as) != tc.n {
				t.Fatalf("%d answers, want %d", len(as), tc.n)
			}
			for i, want := range tc.reward {
				a := as[i]
				switch {
				case want == -2:
					if a.Err == "" || !strings.Contains(a.Err, tc.err) {
						t.Errorf("answer %d: error %q, want one holding %q", i, a.Err, tc.err)
					}
				case want == -1:
					if a.Err != "" || len(a.Checks) == 0 || a.Reward != nil {
						t.Errorf("answer %d: %+v, want checks", i, a)
					}
				default:
					if a.Err != "" || a.Reward == nil || *a.Reward != want {
						t.Errorf("answer %d: %+v, want reward %v", i, a, want)
					}
				}
			}
		})
	}
	// An element's error is only its rollout's, and its text is the same
	// whatever the batch and the rollout's place in it.
	one := parseGavel([]byte(`{"error": "boom"}`), 1, 1)[0]
	third := parseGavel([]byte(`[1, 0.5, {"error": "boom"}, 0]`), 4, 1)
	if one.Err == "" || third[2].Err != one.Err {
		t.Errorf("error alone %q, third of a batch %q: want the same text", one.Err, third[2].Err)
	}
	for _, i := range []int{0, 1, 3} {
		if third[i].Err != "" || third[i].Reward == nil {
			t.Errorf("answer %d of the batch: %+v, want its reward", i, third[i])
		}
	}

	// Flags come after the checks, whatever their place in the answer,
	// raised as a passing flag, clear as a failing one, never required;
	// /v1/grade's flag rows are read, its rewards' flags (the server's
	// health flags) are not.
	for _, body := range []string{
		`[{"id":"f","label":"F","status":"raised","kind":"flag","detail":"why"},{"id":"c","status":"pass"},{"id":"g","status":"clear","kind":"flag"}]`,
		"{\"rewards\":{\"status\":\"passed\",\"flags\":[\"f\",\"health/truncated\"]},\"checks\":[{\"check_id\":\"c\",\"status\":\"pass\",\"kind\":\"check\"},{\"check_id\":\"f\",\"label\":\"F\",\"status\":\"raised\",\"kind\":\"flag\",\"detail\":\"why\"},{\"check_id\":\"g\",\"status\":\"clear\",\"kind\":\"flag\"}]}",
	} {
		a := parseGavel([]byte(body), 1, 1)[0]
		got := a.AppendChecks(nil, 1)
		if a.Err != "" || len(got) != 3 || got[0].ID != "c" || got[0].Flag || got[1].ID != "f" || !got[1].Raised() || got[1].Required ||
			got[1].Detail != "why" || got[1].Label != "F" || got[2].ID != "g" || !got[2].Flag || got[2].StatusText() != "clear" {
			t.Errorf("%s: %+v (%q)", body, got, a.Err)
		}
	}
	r := parseGavel([]byte(`{"reward": 0.5, "flags": [{"id":"f","status":"error","detail":"no log"}]}`), 1, 1)[0]
	if got := r.AppendChecks(nil, 1); len(got) != 2 || got[0].ID != "reward" || !got[1].Flag || got[1].StatusText() != "error" {
		t.Errorf("reward and flags: %+v", got)
	}

	// /v1/grade's actual is JSON text already; a list's is any value.
	a := parseGavel([]byte("{\"rewards\":{},\"checks\":[{\"check_id\":\"a\",\"status\":\"pass\",\"actual\":\"[1]\"}]}"), 1, 1)[0]
	b := parseGavel([]byte(`[{"id":"a","status":"pass","actual":[1],"expected":"s"}]`), 1, 1)[0]
	if a.Checks[0].Actual != "[1]" || b.Checks[0].Actual != "[1]" || b.Checks[0].Expected != `"s"` || a.Checks[0].ID != "a" {
		t.Errorf("actual: %+v %+v", a.Checks[0], b.Checks[0])
	}
}

func TestParseNemoGym(t *testing.T) {
	for _, tc := range []struct {
		name, body, err string
		reward          float64
		components      int
	}{
		{"reward", `{"reward": 0.5, "responses_create_params": {}}`, "", 0.5, 0},
		{"components sorted", `{"reward": 1.0, "reward_components": {"b": 1, "a": 0.5}}`, "", 1, 2},
		{"failure class", `{"reward": 0.0, "_ng_failure_class": "judge_failed", "_ng_failure_judge_error": "boom"}`, `judge_failed"): boom`, 0, 0},
		{"masked", `{"reward": 0.0, "mask_sample": true}`, "mask_sample", 0, 0},
		{"failure reason", `{"reward": 0.0, "failure_kind": "timeout", "failure_reason": "sandbox died"}`, `(failure_kind "timeout"): sandbox died`, 0, 0},
		{"no reward", `{"response": {}}`, "without reward", 0, 0},
		{"reward out of range", `{"reward": 2}`, "outside [0, 1]", 0, 0},
		{"component out of range", `{"reward": 1, "reward_components": {"a": -1}}`, "reward_components.a", 0, 0},
		{"not an object", `[1]`, "not a JSON object", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := parseNemoGym([]byte(tc.body), 1)
			if tc.err != "" {
				if !strings.Contains(a.Err, tc.err) || a.Reward != nil {
					t.Errorf("%+v, want an error holding %q", a, tc.err)
				}
				return
			}
			if a.Err != "" || a.Reward == nil || *a.Reward != tc.reward || len(a.Components) != tc.components {
				t.Errorf("%+v", a)
			}
			if tc.components == 2 && (a.Components[0].Name != "a" || a.Components[1].Name != "b") {
				t.Errorf("components not in name order: %+v", a.Components)
			}
		})
	}
}
