package gen

// The calendar reference environment (verifiers/spec/calendar.yaml):
// rollouts of TASK-C01 ("create a Team Meeting on 2024-11-20 through the
// form"), graded by the built-in spec verifier VER-C01, whose checks are,
// in order:
//
//	0 check-event-created             required  an event titled "Team Meeting"
//	1 check-events-on-day             required  some event starts on 2024-11-20 (UTC)
//	2 check-form-opened-then-submitted optional open-form click, later submit-button click
//	3 check-button-clicked            optional  a submit-button click
//	4 check-nothing-else-changed      required  no event but added ones changed
//
// Each behaviour below produces a known status for each check, so the
// expected verdicts are known by construction.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"text/tabwriter"

	"github.com/gavelhq/gavel/columnar"
)

// CalendarTask and CalendarVerifier are the calendar environment's task
// and the verifier that binds it.
const (
	CalendarTask     = "TASK-C01"
	CalendarVerifier = "VER-C01"
)

// CalendarConfig says what calendar dataset to generate. The zero value
// works: 1000 rollouts with seed 0, as Parquet.
type CalendarConfig struct {
	// Format is the dataset format (empty: Parquet).
	Format columnar.DatasetFormat
	// Rollouts is the number of rows (0: 1000).
	Rollouts int
	// Seed seeds every random draw.
	Seed uint64
	// RowGroupRows is the number of rows per Parquet row group (0: 10000).
	RowGroupRows int
}

// calendarBehaviour is one way an agent attempts TASK-C01, with the check
// statuses it produces.
type calendarBehaviour struct {
	name   string
	checks [5]checkStatus
}

var calendarBehaviours = []calendarBehaviour{
	{"correct", [5]checkStatus{cPass, cPass, cPass, cPass, cPass}},
	{"correct_offset_time", [5]checkStatus{cPass, cPass, cPass, cPass, cPass}}, // startTime with a UTC offset, still on the day in UTC
	{"no_clicks", [5]checkStatus{cPass, cPass, cFail, cFail, cPass}},           // created without the form
	{"submit_before_open", [5]checkStatus{cPass, cPass, cFail, cPass, cPass}},
	{"wrong_title", [5]checkStatus{cFail, cPass, cPass, cPass, cPass}},
	{"wrong_day_utc", [5]checkStatus{cPass, cFail, cPass, cPass, cPass}}, // 2024-11-20 local, 2024-11-21 in UTC
	{"noop", [5]checkStatus{cFail, cFail, cFail, cFail, cPass}},
	{"deleted_other", [5]checkStatus{cPass, cPass, cPass, cPass, cFail}}, // did the task, and deleted an event
	{"edited_other", [5]checkStatus{cPass, cPass, cPass, cPass, cFail}},  // did the task, and moved an event
}

var calendarRequired = []bool{true, true, false, false, true}

// CalendarCounts are the expected verdicts of a group of calendar
// rollouts. Every calendar row is graded, so none has status error.
type CalendarCounts struct {
	// Rollouts, Passed and Failed count rollouts by expected status.
	Rollouts int64 `json:"rollouts"`
	Passed   int64 `json:"passed"`
	Failed   int64 `json:"failed"`
	// ChecksTotal and ChecksPassed sum the checks_total and checks_passed
	// columns of the rewards rows.
	ChecksTotal  int64 `json:"checks_total"`
	ChecksPassed int64 `json:"checks_passed"`
	// MeanReward is the mean reward, null when there is no rollout.
	MeanReward *float64 `json:"mean_reward"`
}

// CalendarExpected is what grading a calendar dataset must report.
type CalendarExpected struct {
	// Dataset is the dataset path (empty when written to a writer);
	// Format and Seed repeat the configuration.
	Dataset string `json:"dataset"`
	Format  string `json:"format"`
	Seed    uint64 `json:"seed"`
	// Verifier and Task are VER-C01 and TASK-C01.
	Verifier string `json:"verifier_id"`
	Task     string `json:"task_id"`
	// Totals counts every row.
	Totals CalendarCounts `json:"totals"`
	// Behaviours splits Totals by behaviour, in a fixed order.
	Behaviours []CalendarBehaviourCounts `json:"behaviours"`
}

// CalendarBehaviourCounts are the expected verdicts of one behaviour.
type CalendarBehaviourCounts struct {
	// Behaviour names the behaviour (see CalendarBehaviours).
	Behaviour string `json:"behaviour"`
	CalendarCounts
}

func (c *CalendarCounts) add(v verdict) {
	c.Rollouts++
	if v.status == StatusPassed {
		c.Passed++
	} else {
		c.Failed++
	}
	c.ChecksTotal += int64(v.checksTotal)
	c.ChecksPassed += int64(v.checksPassed)
}

func (c *CalendarCounts) finish() {
	if c.Rollouts > 0 {
		// Every rollout has the same number of checks, so the mean
		// reward is exact.
		m := float64(c.ChecksPassed) / float64(c.ChecksTotal)
		c.MeanReward = &m
	}
}

// calendarColumns are the calendar dataset's columns.
var calendarColumns = []columnar.DatasetColumn{
	{Name: "rollout_id", Type: columnar.DatasetString},
	{Name: "task_id", Type: columnar.DatasetString, Dictionary: true},
	{Name: "final_state", Type: columnar.DatasetJSON},
	{Name: "initial_state", Type: columnar.DatasetJSON},
	{Name: "output", Type: columnar.DatasetString},
	{Name: "log", Type: columnar.DatasetJSON},
	{Name: "behaviour", Type: columnar.DatasetString, Dictionary: true},
}

// GenerateCalendar writes a calendar dataset to w and returns the expected
// verdicts. The same configuration always writes the same bytes.
func GenerateCalendar(ctx context.Context, cfg CalendarConfig, w io.Writer) (*CalendarExpected, error) {
	if cfg.Rollouts < 0 {
		return nil, errors.New("gen: rollouts must not be negative")
	}
	if cfg.Rollouts == 0 {
		cfg.Rollouts = 1000
	}
	if cfg.Format == "" {
		cfg.Format = columnar.DatasetParquet
	}
	dw, err := columnar.NewDatasetWriter(w, cfg.Format, calendarColumns, columnar.DatasetOptions{RowGroupRows: cfg.RowGroupRows})
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x67656e2d63616c21)) // "gen-cal!"
	exp := &CalendarExpected{Format: string(cfg.Format), Seed: cfg.Seed, Verifier: CalendarVerifier, Task: CalendarTask}
	byBeh := make([]CalendarBehaviourCounts, len(calendarBehaviours))
	for i, b := range calendarBehaviours {
		byBeh[i].Behaviour = b.name
	}
	width := max(7, len(strconv.Itoa(cfg.Rollouts-1)))
	vals := make([]columnar.DatasetValue, len(calendarColumns))
	text := func(s string) columnar.DatasetValue {
		return columnar.DatasetValue{Kind: columnar.DatasetText, Bytes: []byte(s)}
	}
	raw := func(s string) columnar.DatasetValue {
		return columnar.DatasetValue{Kind: columnar.DatasetRaw, Bytes: []byte(s)}
	}
	for i := range cfg.Rollouts {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		bi := r.IntN(len(calendarBehaviours))
		b := calendarBehaviours[bi]
		initial, final, output, log := calendarRollout(r, b.name)
		vals[0] = text(fmt.Sprintf("cal-%0*d", width, i))
		vals[1] = text(CalendarTask)
		vals[2] = raw(final)
		vals[3] = raw(initial)
		vals[4] = text(output)
		vals[5] = raw(log)
		vals[6] = text(b.name)
		if err := dw.Write(vals); err != nil {
			return nil, err
		}
		v := score(b.checks[:], calendarRequired)
		exp.Totals.add(v)
		byBeh[bi].add(v)
	}
	if err := dw.Close(); err != nil {
		return nil, err
	}
	exp.Totals.finish()
	for i := range byBeh {
		if byBeh[i].Rollouts > 0 {
			byBeh[i].finish()
			exp.Behaviours = append(exp.Behaviours, byBeh[i])
		}
	}
	return exp, nil
}

// calendarEvent is one event of a calendar state.
type calendarEvent struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	StartTime string   `json:"startTime"`
	EndTime   string   `json:"endTime"`
	Attendees []string `json:"attendees"`
}

var (
	calendarTitles = []string{"Dentist", "1:1 with Ana", "Quarterly review", "Lunch", "Gym", "Design sync"}
	calendarPeople = []string{"ana@example.com", "ben@example.com", "dana@example.com", "sam@example.com"}
)

// calendarRollout builds one rollout of the behaviour: the initial events
// never fall on 2024-11-20 in UTC and are never titled "Team Meeting", so
// that only what the agent adds decides the required checks, and only
// what it deletes or edits decides check-nothing-else-changed.
func calendarRollout(r *rand.Rand, behaviour string) (initial, final, output, log string) {
	var events []calendarEvent
	for k := range 2 + r.IntN(4) {
		day := 11 + r.IntN(8) // November 11..18
		h := 8 + r.IntN(9)
		events = append(events, calendarEvent{
			ID:        fmt.Sprintf("EVT-%03d", k+1),
			Title:     calendarTitles[r.IntN(len(calendarTitles))],
			StartTime: fmt.Sprintf("2024-11-%02dT%02d:00:00Z", day, h),
			EndTime:   fmt.Sprintf("2024-11-%02dT%02d:30:00Z", day, h),
			Attendees: []string{calendarPeople[r.IntN(len(calendarPeople))]},
		})
	}
	initial = mustJSON(map[string]any{"events": events})

	h := 9 + r.IntN(8)
	added := calendarEvent{
		ID:        fmt.Sprintf("EVT-%03d", len(events)+1),
		Title:     "Team Meeting",
		StartTime: fmt.Sprintf("2024-11-20T%02d:00:00Z", h),
		EndTime:   fmt.Sprintf("2024-11-20T%02d:00:00Z", h+1),
		Attendees: []string{"ana@example.com", "ben@example.com"},
	}
	clicks := []map[string]string{
		{"eventType": "click", "clickId": "open-form"},
		{"eventType": "input", "field": "title"},
		{"eventType": "click", "clickId": "submit-button"},
	}
	output = "I created the Team Meeting on November 20."
	switch behaviour {
	case "correct_offset_time":
		added.StartTime = fmt.Sprintf("2024-11-20T%02d:00:00-05:00", h-5) // h UTC
		added.EndTime = fmt.Sprintf("2024-11-20T%02d:00:00-05:00", h-4)
	case "no_clicks":
		clicks = clicks[1:2]
	case "submit_before_open":
		clicks[0], clicks[2] = clicks[2], clicks[0]
	case "wrong_title":
		added.Title = []string{"Team Meting", "team meeting", "Team Meeting (draft)"}[r.IntN(3)]
	case "wrong_day_utc":
		added.StartTime = "2024-11-20T22:30:00-04:00" // 2024-11-21T02:30Z
		added.EndTime = "2024-11-20T23:30:00-04:00"
	case "noop":
		clicks = nil
		output = "I could not find the form."
	case "deleted_other":
		k := r.IntN(len(events))
		events = append(events[:k:k], events[k+1:]...)
	case "edited_other":
		// An hour later on the same day, never on 2024-11-20.
		k := r.IntN(len(events))
		e := &events[k]
		day, h := e.StartTime[:len("2024-11-11")], 0
		fmt.Sscanf(e.StartTime[len("2024-11-11T"):], "%d", &h)
		e.StartTime = fmt.Sprintf("%sT%02d:00:00Z", day, h+1)
		e.EndTime = fmt.Sprintf("%sT%02d:30:00Z", day, h+1)
	}
	if behaviour != "noop" {
		events = append(events, added)
	}
	final = mustJSON(map[string]any{"events": events})
	if clicks == nil {
		log = "[]"
	} else {
		log = mustJSON(clicks)
	}
	return initial, final, output, log
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// WriteTable prints the expected counts for people, one line per
// behaviour and a total.
func (e *CalendarExpected) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "verifier\tbehaviour\trollouts\tpassed\tfailed\tmean reward\t")
	line := func(beh string, c *CalendarCounts) {
		mean := "-"
		if c.MeanReward != nil {
			mean = strconv.FormatFloat(*c.MeanReward, 'f', 4, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t\n", e.Verifier, beh, c.Rollouts, c.Passed, c.Failed, mean)
	}
	for i := range e.Behaviours {
		line(e.Behaviours[i].Behaviour, &e.Behaviours[i].CalendarCounts)
	}
	line("total", &e.Totals)
	return tw.Flush()
}

// CalendarBehaviours lists the behaviour names in table order.
func CalendarBehaviours() []string {
	names := make([]string, len(calendarBehaviours))
	for i, b := range calendarBehaviours {
		names[i] = b.name
	}
	return names
}
