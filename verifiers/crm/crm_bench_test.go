package crm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

// benchCRMState returns a CRM initial state of about 5 KB: 8 users (one
// inactive), 6 stages and 24 opportunities, USR-004 owning open and closed
// deals.
func benchCRMState() string {
	var b strings.Builder
	b.WriteString(`{"users": {`)
	names := []string{"Ana Ruiz", "Ben Cho", "Dana Lee", "Sam Poe", "Eve Park", "Raj Iyer", "Li Wei", "Mia Berg"}
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		id := fmt.Sprintf("USR-%03d", i+1)
		fmt.Fprintf(&b, "\n  %q: {\"id\": %q, \"name\": %q, \"active\": %t}", id, id, n, id != "USR-004")
	}
	b.WriteString("\n }, \"stages\": {")
	stages := []struct {
		p      int
		closed bool
	}{{10, false}, {25, false}, {50, false}, {75, false}, {0, true}, {100, true}}
	for i, s := range stages {
		if i > 0 {
			b.WriteString(", ")
		}
		id := fmt.Sprintf("STG-%03d", i+1)
		fmt.Fprintf(&b, "\n  %q: {\"id\": %q, \"name\": \"Stage %d\", \"probability\": %d, \"isClosed\": %t}", id, id, i+1, s.p, s.closed)
	}
	b.WriteString("\n }, \"opportunities\": {")
	statuses := []string{"open", "open", "open", "won", "open", "lost"}
	for i := range 24 {
		if i > 0 {
			b.WriteString(", ")
		}
		id := fmt.Sprintf("OPP-%04d", i+1)
		status := statuses[i%len(statuses)]
		stage := i%4 + 1
		switch status {
		case "won":
			stage = 6
		case "lost":
			stage = 5
		}
		fmt.Fprintf(&b, "\n  %q: {\"id\": %q, \"name\": \"Customer %d renewal\", \"ownerId\": \"USR-%03d\", \"stageId\": \"STG-%03d\", \"status\": %q, \"amount\": %d}",
			id, id, i+1, i%len(names)+1, stage, status, 10000*(i*7%23+3))
	}
	b.WriteString("\n }}")
	return b.String()
}

func BenchmarkCRM(b *testing.B) {
	initialText := benchCRMState()
	initial := parse(b, initialText)
	total, fault := weightedTotal(initial)
	top, _, _ := topReps(initial)
	topName, _ := top.user.Get("name").Str()
	if fault != "" || !top.user.Exists() {
		b.Fatalf("bench state: total %v, fault %q, top %v", total, fault, top.user.Exists())
	}

	moved := initialText
	for o := parse(b, initialText).Get("opportunities").First(); o.Exists(); o = o.Next() {
		if o.Get("ownerId").StrIs(departedRep) && o.Get("status").StrIs(statusOpen) {
			moved = setField(moved, string(o.Key()), "ownerId", `"`+newOwner+`"`)
		}
	}
	// An untouched world, written back in another layout, so that the
	// unchanged checks compare values rather than bytes.
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(initialText)); err != nil {
		b.Fatal(err)
	}
	untouched := compact.String()
	won := setField(setField(initialText, wonDeal, "stageId", `"STG-006"`), wonDeal, "status", `"won"`)

	for _, bc := range []struct {
		v      *verifiers.Verifier
		final  string
		output string
	}{
		{ver001, addMember(initialText, "opportunities", acmeDeal), ""},
		{ver002, moved, ""},
		{ver003, won, ""},
		{ver004, untouched, "Summing amount times stage probability over the open deals, the weighted pipeline total is $" +
			strconv.FormatFloat(total, 'f', 2, 64) + " across 16 open opportunities."},
		{ver006, untouched, "Among active reps, " + string(topName) + " has the largest open pipeline; Sam Poe is deactivated."},
	} {
		b.Run(bc.v.ID, func(b *testing.B) {
			r := &verifiers.Rollout{Final: parse(b, bc.final), Initial: initial, Output: bc.output}
			var c verifiers.Checks
			b.SetBytes(int64(len(initialText) + len(bc.final)))
			b.ReportAllocs()
			for b.Loop() {
				c.Reset()
				if err := bc.v.Grade(r, &c); err != nil {
					b.Fatal(err)
				}
			}
			for _, ch := range c.List() {
				if ch.Status != verifiers.Pass {
					b.Fatalf("%s: check %q = %v (%s), want pass", bc.v.ID, ch.Label, ch.Status, ch.Detail)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rollouts/s")
		})
	}
}
