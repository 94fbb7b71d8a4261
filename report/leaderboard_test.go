package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/stats"
	"github.com/gavelhq/gavel/verifiers"
)

// leaderboardRows is a small result set: model A has task T1 with 4 of 5
// graded samples passed (plus one error) and task T2 with 1 of 3 (plus one
// pending); model B has one task with 1 of 2.
func leaderboardRows() []rr {
	var rows []rr
	add := func(model, task, status string, reward any) {
		rows = append(rows, rr{id: fmt.Sprintf("r%d", len(rows)), task: task, verifier: "V", status: status, reward: reward, source: "in.jsonl", model: model})
	}
	for range 4 {
		add("A", "T1", verifiers.StatusPassed, 1.0)
	}
	add("A", "T1", verifiers.StatusFailed, 0.5)
	add("A", "T1", verifiers.StatusError, nil)
	add("A", "T2", verifiers.StatusPassed, 1.0)
	add("A", "T2", verifiers.StatusFailed, 0.0)
	add("A", "T2", verifiers.StatusFailed, 0.0)
	add("A", "T2", verifiers.StatusPending, nil)
	add("B", "T1", verifiers.StatusPassed, 1.0)
	add("B", "T1", verifiers.StatusFailed, 0.0)
	return rows
}

func TestBuildLeaderboard(t *testing.T) {
	dir := writeResults(t, leaderboardRows(), map[string]string{"V": "x"}, map[string]int64{"in.jsonl": 1})
	lb, err := BuildLeaderboard([]string{dir}, LeaderboardConfig{K: []int{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lb.Entries) != 2 {
		t.Fatalf("entries = %d, want 2", len(lb.Entries))
	}
	a, b := lb.Entries[0], lb.Entries[1]
	wilsonA, _ := stats.Wilson(5, 8, stats.Z95)
	tests := []struct {
		name      string
		got, want any
	}{
		{"A first", a.Group[0], "A"},
		{"A counts", fmt.Sprint(a.Rollouts, a.Passed, a.Failed, a.Pending, a.Error), "10 5 3 1 1"},
		{"A pass rate (error, pending out)", *a.PassRate, 5.0 / 8},
		{"A Wilson interval", *a.PassRateCI, wilsonA},
		{"A mean reward", *a.MeanReward, 5.5 / 8}, // (4·1 + 0.5 + 1 + 0 + 0) / 8
		{"A tasks", a.Tasks, 2},
		// pass@1 is the per-task pass rate, averaged: (4/5 + 1/3) / 2.
		{"A pass@1", *a.AtK[0].PassAtK, (4.0/5 + 1.0/3) / 2},
		// pass@2: T1 1 - C(1,2)/C(5,2) = 1; T2 1 - C(2,2)/C(3,2) = 2/3.
		{"A pass@2", *a.AtK[1].PassAtK, (1 + 2.0/3) / 2},
		// pass^2: T1 C(4,2)/C(5,2) = 6/10; T2 C(1,2)/C(3,2) = 0.
		{"A pass^2", *a.AtK[1].PassHatK, 0.3},
		// k=3: both tasks have 3 or more graded samples. T1: pass@3 = 1,
		// pass^3 = C(4,3)/C(5,3) = 4/10; T2: pass@3 = 1 - 0 = 1, pass^3 = 0.
		{"A pass@3", *a.AtK[2].PassAtK, 1.0},
		{"A pass^3", *a.AtK[2].PassHatK, 0.2},
		{"A tasks at 3", a.AtK[2].Tasks, 2},
		{"B pass rate", *b.PassRate, 0.5},
		{"B single task: no bootstrap interval", b.MeanRewardCI == nil, true},
		{"B no task with 3 samples", b.AtK[2].PassAtK == nil, true},
		{"B rank", b.Rank, 2},
	}
	for _, tt := range tests {
		if g, ok := tt.got.(float64); ok {
			if !near(g, tt.want.(float64), 1e-12) {
				t.Errorf("%s = %.15g, want %.15g", tt.name, g, tt.want)
			}
			continue
		}
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if a.MeanRewardCI == nil || a.MeanRewardCI.Lo > *a.MeanReward || a.MeanRewardCI.Hi < *a.MeanReward {
		t.Errorf("A bootstrap interval %+v does not hold the mean %v", a.MeanRewardCI, *a.MeanReward)
	}
	again, _ := BuildLeaderboard([]string{dir}, LeaderboardConfig{K: []int{1, 2, 3}})
	if *again.Entries[0].MeanRewardCI != *a.MeanRewardCI {
		t.Errorf("bootstrap not reproducible: %+v then %+v", *a.MeanRewardCI, *again.Entries[0].MeanRewardCI)
	}

	var csvOut, md, text bytes.Buffer
	if err := lb.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil || len(recs) != 3 || recs[1][1] != "A" || recs[1][7] != "0.625" {
		t.Errorf("CSV = %q, %v", recs, err)
	}
	lb.WriteMarkdown(&md)
	lb.WriteText(&text)
	for name, out := range map[string]string{"markdown": md.String(), "text": text.String()} {
		if !strings.Contains(out, "Wilson") || !strings.Contains(out, "Chen et al. 2021") || !strings.Contains(out, "0.6250") {
			t.Errorf("%s output lacks the table or the conventions:\n%s", name, out)
		}
	}
}

func TestLeaderboardByTask(t *testing.T) {
	dir := writeResults(t, leaderboardRows(), map[string]string{"V": "x"}, map[string]int64{"in.jsonl": 1})
	lb, err := BuildLeaderboard([]string{dir}, LeaderboardConfig{By: []string{"model", "task"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range lb.Entries {
		got = append(got, strings.Join(e.Group, "/"))
	}
	if want := "A/T1 B/T1 A/T2"; strings.Join(got, " ") != want {
		t.Errorf("groups = %v, want %s", got, want)
	}
	if _, err := BuildLeaderboard([]string{dir}, LeaderboardConfig{By: []string{"nope"}}); err == nil {
		t.Error("--by nope: no error")
	}
}

func TestRecorded(t *testing.T) {
	tests := []struct {
		text       string
		passed, ok bool
		reward     float64
	}{
		{"1", true, true, 1},
		{"1.0", true, true, 1},
		{" 1e0 ", true, true, 1},
		{"true", true, true, 1},
		{"True", true, true, 1},
		{"0", false, true, 0},
		{"0.0", false, true, 0},
		{"0.5", false, true, 0.5},
		{"false", false, true, 0},
		{"", false, false, 0},
		{"yes", false, false, 0},
		{"NaN", false, false, 0},
		{`{"reward":1}`, false, false, 0},
	}
	for _, tt := range tests {
		passed, reward, ok := Recorded([]byte(tt.text))
		if passed != tt.passed || ok != tt.ok || reward != tt.reward {
			t.Errorf("Recorded(%q) = %v, %v, %v; want %v, %v, %v", tt.text, passed, reward, ok, tt.passed, tt.reward, tt.ok)
		}
	}
}
