package main

import (
	"encoding/json"
	"testing"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/judgetest"
)

func TestScript(t *testing.T) {
	f := script("PASS", []string{"easy"}, 0.25)
	user := func(out string) string {
		_, u, err := judge.DefaultTemplate().Render(judge.Prompt{Rubric: "r", Output: out})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, tc := range []struct {
		model, output string
		seed          int64
		want          float64
	}{
		{"strict", "says PASS", 1, 1},
		{"strict", "says PASS", 2, 0.75},
		{"strict", "says PASS", 6, 0},
		{"strict", "no", 1, 0},
		{"easy", "no", 1, 1},
		{"easy", "no", 3, 0.5},
	} {
		seed := tc.seed
		r := f(judgetest.Request{Model: tc.model, User: user(tc.output), Seed: &seed})
		var c struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		var v struct{ Score float64 }
		if err := json.Unmarshal([]byte(r.Body), &c); err != nil || len(c.Choices) != 1 || json.Unmarshal([]byte(c.Choices[0].Message.Content), &v) != nil {
			t.Fatalf("reply %s: %v", r.Body, err)
		}
		if v.Score != tc.want {
			t.Errorf("%s on %q seed %d: score %v, want %v", tc.model, tc.output, tc.seed, v.Score, tc.want)
		}
	}
}
