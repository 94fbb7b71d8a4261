// Command fakejudge serves a scripted OpenAI-compatible chat completions
// API on 127.0.0.1 for the examples of the docs and for trying the judge
// without a model: every rubric check whose agent output contains -pass
// gets score 1, every other score 0 with one issue. A pairwise comparison
// prefers the one output of the two that contains -pass; when both or
// neither do, it prefers the output shown first (output A), a position
// bias that makes such pairs inconsistent. It prints its API root
// (http://127.0.0.1:PORT/v1) on a line of standard output, serves until
// -timeout passes or it is sent SIGINT or SIGTERM, and then prints the
// requests it answered: "requests N".
//
// To show several judges and samples: -lenient MODEL (repeatable) makes
// that model score 1 whatever the output, and -seed-step X lowers the
// score of a request sent with seed s (sample s-1) by X*(s-1), down to 0.
//
//	fakejudge -addr 127.0.0.1:8080 -timeout 10m &
//	gavel grade --judge-url http://127.0.0.1:8080/v1 --judge-model any ...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gavelhq/gavel/judge/judgetest"
)

// script returns the server's answers: score 1 when the agent's output
// contains pass or the model is lenient, else 0 with one issue; then
// lowered by step*(seed-1), down to 0.
func script(pass string, lenient []string, step float64) func(judgetest.Request) judgetest.Reply {
	return func(req judgetest.Request) judgetest.Reply {
		if a, b, ok := judgetest.FencedPair(req.User); ok {
			// A comparison: the one output of the two that says pass,
			// else the first shown (a position bias).
			better := "A"
			if !strings.Contains(a, pass) && strings.Contains(b, pass) {
				better = "B"
			}
			return judgetest.Reply{Body: judgetest.Completion(req.Model, judgetest.Preference(better, "scripted"))}
		}
		out, _ := judgetest.FencedOutput(req.User)
		score, issues, suggestion := 0.0, []string{"the output does not say " + pass}, "Say "+pass+"."
		if strings.Contains(out, pass) || slices.Contains(lenient, req.Model) {
			score, issues, suggestion = 1, []string{}, ""
		}
		if req.Seed != nil && *req.Seed > 1 {
			score = max(0, score-step*float64(*req.Seed-1))
		}
		return judgetest.Reply{Body: judgetest.Completion(req.Model, judgetest.Verdict(score, issues, suggestion))}
	}
}

// models is a repeatable flag of model names.
type models []string

func (m *models) String() string     { return strings.Join(*m, ",") }
func (m *models) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "`ADDR`ess to listen on (a loopback address)")
	timeout := flag.Duration("timeout", 10*time.Minute, "stop after `D`")
	pass := flag.String("pass", "PASS", "an agent output containing `TEXT` scores 1, any other 0")
	var lenient models
	flag.Var(&lenient, "lenient", "`MODEL` scores 1 whatever the output (repeatable)")
	step := flag.Float64("seed-step", 0, "lower the score of seed s by `X`*(s-1), down to 0")
	flag.Parse()
	if host, _, ok := strings.Cut(*addr, ":"); !ok || (host != "127.0.0.1" && host != "localhost") {
		fmt.Fprintf(os.Stderr, "fakejudge: -addr %s: listen on 127.0.0.1 only\n", *addr)
		os.Exit(2)
	}
	s, err := judgetest.Start(*addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakejudge: %v\n", err)
		os.Exit(1)
	}
	s.Script(script(*pass, lenient, *step))
	fmt.Println(s.URL)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(*timeout):
	}
	s.Close()
	fmt.Printf("requests %d\n", s.Requests())
}
