package gen

import (
	"bytes"
	"context"
	"testing"

	"github.com/gavelhq/gavel/columnar"
)

func TestGenerateCalendar(t *testing.T) {
	run := func(seed uint64) ([]byte, *CalendarExpected) {
		var buf bytes.Buffer
		exp, err := GenerateCalendar(context.Background(), CalendarConfig{Format: columnar.DatasetJSONL, Rollouts: 500, Seed: seed}, &buf)
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), exp
	}
	a, exp := run(1)
	b, _ := run(1)
	c, _ := run(2)
	if !bytes.Equal(a, b) {
		t.Error("the same seed wrote different datasets")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds wrote the same dataset")
	}
	if got := bytes.Count(a, []byte("\n")); got != 500 {
		t.Errorf("%d rows, want 500", got)
	}
	if exp.Totals.Rollouts != 500 || exp.Totals.Passed+exp.Totals.Failed != 500 || exp.Totals.ChecksTotal != 2500 {
		t.Errorf("totals = %+v", exp.Totals)
	}
	if len(exp.Behaviours) != len(CalendarBehaviours()) {
		t.Errorf("behaviours = %d, want every one of %v", len(exp.Behaviours), CalendarBehaviours())
	}
	for _, bc := range exp.Behaviours {
		wantPass := bc.Behaviour == "correct" || bc.Behaviour == "correct_offset_time" || bc.Behaviour == "no_clicks" || bc.Behaviour == "submit_before_open"
		if (bc.Passed == bc.Rollouts) != wantPass {
			t.Errorf("behaviour %s: %+v", bc.Behaviour, bc.CalendarCounts)
		}
	}
}
