package crm

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/google/go-cmp/cmp"
)

// crmBase is the initial state most CRM tests start from. Its numbers:
//
//	weighted open total: (120000×50 + 200000×10 + 300000×50 + 150000×50
//	                      + 305000×50) / 100 = 457500
//	open pipelines: USR-001 425000, USR-002 0, USR-003 150000,
//	                USR-004 (inactive) 500000: the trap
//	USR-004's deals: OPP-0002 and OPP-0003 open, OPP-0004 won
//	won stage: STG-005
const crmBase = `{
 "users": {
  "USR-001": {"id": "USR-001", "name": "Ana Ruiz", "active": true},
  "USR-002": {"id": "USR-002", "name": "Ben Cho", "active": true},
  "USR-003": {"id": "USR-003", "name": "Dana Lee", "active": true},
  "USR-004": {"id": "USR-004", "name": "Sam Poe", "active": false}
 },
 "stages": {
  "STG-001": {"id": "STG-001", "name": "Prospect", "probability": 10, "isClosed": false},
  "STG-002": {"id": "STG-002", "name": "Proposal", "probability": 50, "isClosed": false},
  "STG-004": {"id": "STG-004", "name": "Closed Lost", "probability": 0, "isClosed": true},
  "STG-005": {"id": "STG-005", "name": "Closed Won", "probability": 100, "isClosed": true}
 },
 "opportunities": {
  "OPP-0001": {"id": "OPP-0001", "name": "Globex renewal", "ownerId": "USR-001", "stageId": "STG-002", "status": "open", "amount": 120000},
  "OPP-0002": {"id": "OPP-0002", "name": "Initech pilot", "ownerId": "USR-004", "stageId": "STG-001", "status": "open", "amount": 200000},
  "OPP-0003": {"id": "OPP-0003", "name": "Umbrella rollout", "ownerId": "USR-004", "stageId": "STG-002", "status": "open", "amount": 300000},
  "OPP-0004": {"id": "OPP-0004", "name": "Hooli support", "ownerId": "USR-004", "stageId": "STG-005", "status": "won", "amount": 80000},
  "OPP-0005": {"id": "OPP-0005", "name": "Stark upgrade", "ownerId": "USR-003", "stageId": "STG-002", "status": "open", "amount": 150000},
  "OPP-0006": {"id": "OPP-0006", "name": "Wayne audit", "ownerId": "USR-002", "stageId": "STG-004", "status": "lost", "amount": 40000},
  "OPP-0007": {"id": "OPP-0007", "name": "Acme licences", "ownerId": "USR-001", "stageId": "STG-002", "status": "open", "amount": 305000}
 }
}`

// acmeDeal is a member that completes TASK-001.
const acmeDeal = `"OPP-0100": {"id": "OPP-0100", "name": "ACME Expansion", "ownerId": "USR-002", "stageId": "STG-001", "status": "open", "amount": 50000}`

// parse returns the root of json, or the missing Value for "".
func parse(t testing.TB, json string) jsonview.Value {
	t.Helper()
	if json == "" {
		return jsonview.Value{}
	}
	var d jsonview.Doc
	v, err := d.Parse([]byte(json))
	if err != nil {
		t.Fatalf("parse %q: %v", json, err)
	}
	return v
}

// setField replaces the value of field in the one-line member key of state with
// raw JSON. The member and field must exist.
func setField(state, key, field, raw string) string {
	lines := strings.Split(state, "\n")
	member := `"` + key + `": {`
	fieldRE := regexp.MustCompile(`"` + regexp.QuoteMeta(field) + `": (?:"[^"]*"|[^,}]*)`)
	done := false
	for i, l := range lines {
		if !strings.Contains(l, member) {
			continue
		}
		if !fieldRE.MatchString(l) || done {
			panic("setField: no single field " + field + " in " + key)
		}
		lines[i] = strings.Replace(l, fieldRE.FindString(l), `"`+field+`": `+raw, 1)
		done = true
	}
	if !done {
		panic("setField: no member " + key)
	}
	return strings.Join(lines, "\n")
}

// dropField removes field from the one-line member key of state.
func dropField(state, key, field string) string {
	return fixCommas(strings.Replace(setField(state, key, field, "DROP"), `"`+field+`": DROP`, "", 1))
}

// removeMember deletes the one-line member key from state.
func removeMember(state, key string) string {
	lines := strings.Split(state, "\n")
	out := lines[:0]
	for _, l := range lines {
		if !strings.Contains(l, `"`+key+`": {`) {
			out = append(out, l)
		}
	}
	if len(out) == len(lines) {
		panic("removeMember: no member " + key)
	}
	return fixCommas(strings.Join(out, "\n"))
}

// addMember inserts member as the first member of table.
func addMember(state, table, member string) string {
	head := `"` + table + `": {`
	if !strings.Contains(state, head) {
		panic("addMember: no table " + table)
	}
	return fixCommas(strings.Replace(state, head, head+"\n  "+member+",", 1))
}

var (
	commaBeforeClose = regexp.MustCompile(`,(\s*[}\]])`)
	commaAfterOpen   = regexp.MustCompile(`([{\[]\s*),`)
	doubleComma      = regexp.MustCompile(`,(\s*),`)
)

// fixCommas removes the commas that edits leave before a closing bracket,
// after an opening one, or doubled.
func fixCommas(s string) string {
	for {
		t := commaBeforeClose.ReplaceAllString(s, "$1")
		t = commaAfterOpen.ReplaceAllString(t, "$1")
		t = doubleComma.ReplaceAllString(t, ",$1")
		if t == s {
			return s
		}
		s = t
	}
}

// checkRow is the part of a Check that tests compare.
type checkRow struct {
	Label    string
	Required bool
	Status   string
	Detail   string
}

func wantReq(label, status, detail string) checkRow { return checkRow{label, true, status, detail} }
func wantOpt(label, status, detail string) checkRow { return checkRow{label, false, status, detail} }

// gradeCRM grades one rollout and returns its checks.
func gradeCRM(t *testing.T, v *verifiers.Verifier, final, initial, output string) []checkRow {
	t.Helper()
	r := &verifiers.Rollout{
		ID:      "r#0",
		TaskID:  v.Tasks[0],
		Final:   parse(t, final),
		Initial: parse(t, initial),
		Output:  output,
	}
	var c verifiers.Checks
	if err := v.Grade(r, &c); err != nil {
		t.Fatalf("%s Grade: %v", v.ID, err)
	}
	var got []checkRow
	for _, ch := range c.List() {
		if ch.ID != ch.Label {
			t.Errorf("check ID %q differs from its label %q", ch.ID, ch.Label)
		}
		got = append(got, checkRow{ch.Label, ch.Required, ch.Status.String(), ch.Detail})
	}
	return got
}

type crmCase struct {
	name           string
	final, initial string
	output         string
	want           []checkRow
}

func runCRM(t *testing.T, v *verifiers.Verifier, tests []crmCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gradeCRM(t, v, tt.final, tt.initial, tt.output)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s checks (-want +got):\n%s", v.ID, diff)
			}
		})
	}
}

func TestVER001(t *testing.T) {
	const (
		one   = "Exactly one new ACME Expansion deal exists"
		worth = "The new deal is worth 50000"
	)
	done := addMember(crmBase, "opportunities", acmeDeal)
	second := strings.ReplaceAll(acmeDeal, "OPP-0100", "OPP-0101")
	arrayOpps := `{"opportunities": [{"id": "OPP-0100", "name": "ACME Expansion", "ownerId": "USR-002", "status": "open", "amount": 50000}]}`
	runCRM(t, ver001, []crmCase{
		{name: "created", final: done, initial: crmBase, want: []checkRow{
			wantReq(one, "pass", "1 found"),
			wantOpt(worth, "pass", "amount 50000, expected 50000"),
		}},
		{name: "amount by value", final: setField(done, "OPP-0100", "amount", "5e4"), initial: crmBase, want: []checkRow{
			wantReq(one, "pass", "1 found"),
			wantOpt(worth, "pass", "amount 50000, expected 50000"),
		}},
		{name: "amount with fraction digits", final: setField(done, "OPP-0100", "amount", "50000.00"), initial: crmBase, want: []checkRow{
			wantReq(one, "pass", "1 found"),
			wantOpt(worth, "pass", "amount 50000, expected 50000"),
		}},
		{name: "wrong amount", final: setField(done, "OPP-0100", "amount", "45000"), initial: crmBase, want: []checkRow{
			wantReq(one, "pass", "1 found"),
			wantOpt(worth, "fail", "amount 45000, expected 50000"),
		}},
		{name: "amount nearly 50000", final: setField(done, "OPP-0100", "amount", "50000.000000000000001"), initial: crmBase, want: []checkRow{
			wantReq(one, "pass", "1 found"),
			wantOpt(worth, "fail", "amount 50000, expected 50000"),
		}},
		{name: "amount as a string", final: setField(done, "OPP-0100", "amount", `"50000"`), initial: crmBase, want: []checkRow{
			wantReq(one, "pass", "1 found"),
			wantOpt(worth, "fail", `amount "50000", expected 50000`),
		}},
		{name: "no amount", final: dropField(done, "OPP-0100", "amount"), initial: crmBase, want: []checkRow{
			wantReq(one, "pass", "1 found"),
			wantOpt(worth, "fail", "amount missing, expected 50000"),
		}},
		{name: "nothing created", final: crmBase, initial: crmBase, want: []checkRow{
			wantReq(one, "fail", "0 found"),
			wantOpt(worth, "fail", "0 found, need exactly 1"),
		}},
		{name: "two created", final: addMember(done, "opportunities", second), initial: crmBase, want: []checkRow{
			wantReq(one, "fail", "2 found"),
			wantOpt(worth, "fail", "2 found, need exactly 1"),
		}},
		{name: "existing deal renamed is not new", initial: crmBase,
			final: setField(setField(setField(crmBase, "OPP-0006", "name", `"ACME Expansion"`), "OPP-0006", "ownerId", `"USR-002"`), "OPP-0006", "status", `"open"`),
			want: []checkRow{
				wantReq(one, "fail", "0 found"),
				wantOpt(worth, "fail", "0 found, need exactly 1"),
			}},
		{name: "wrong owner", final: setField(done, "OPP-0100", "ownerId", `"USR-001"`), initial: crmBase, want: []checkRow{
			wantReq(one, "fail", "0 found"),
			wantOpt(worth, "fail", "0 found, need exactly 1"),
		}},
		{name: "not open", final: setField(done, "OPP-0100", "status", `"won"`), initial: crmBase, want: []checkRow{
			wantReq(one, "fail", "0 found"),
			wantOpt(worth, "fail", "0 found, need exactly 1"),
		}},
		{name: "name differs in case", final: setField(done, "OPP-0100", "name", `"Acme Expansion"`), initial: crmBase, want: []checkRow{
			wantReq(one, "fail", "0 found"),
			wantOpt(worth, "fail", "0 found, need exactly 1"),
		}},
		{name: "escaped name and key", final: addMember(crmBase, "opportunities", `"OPP-\u0030100": {"name": "ACME\u0020Expansion", "ownerId": "USR-002", "status": "open", "amount": 50000}`), initial: crmBase, want: []checkRow{
			wantReq(one, "pass", "1 found"),
			wantOpt(worth, "pass", "amount 50000, expected 50000"),
		}},
		{name: "missing initial state", final: done, initial: "", want: []checkRow{
			wantReq(one, "pass", "1 found"),
			wantOpt(worth, "pass", "amount 50000, expected 50000"),
		}},
		{name: "missing final state", final: "", initial: crmBase, want: []checkRow{
			wantReq(one, "fail", "0 found"),
			wantOpt(worth, "fail", "0 found, need exactly 1"),
		}},
		{name: "null final state", final: "null", initial: crmBase, want: []checkRow{
			wantReq(one, "fail", "0 found"),
			wantOpt(worth, "fail", "0 found, need exactly 1"),
		}},
		{name: "opportunities as an array", final: arrayOpps, initial: crmBase, want: []checkRow{
			wantReq(one, "error", "final state: opportunities is an array, not an object"),
			wantOpt(worth, "error", "final state: opportunities is an array, not an object"),
		}},
		{name: "final state not an object", final: `"done"`, initial: crmBase, want: []checkRow{
			wantReq(one, "error", "final state is a string, not an object"),
			wantOpt(worth, "error", "final state is a string, not an object"),
		}},
	})
}

func TestVER002(t *testing.T) {
	const (
		moved = "Every open deal of the departed rep moved to the new owner"
		kept  = "Deals the departed rep already closed kept their owner"
	)
	move := func(s string, keys ...string) string {
		for _, k := range keys {
			s = setField(s, k, "ownerId", `"USR-003"`)
		}
		return s
	}
	done := move(crmBase, "OPP-0002", "OPP-0003")
	noClosed := setField(crmBase, "OPP-0004", "ownerId", `"USR-001"`)
	noDeals := strings.ReplaceAll(crmBase, `"ownerId": "USR-004"`, `"ownerId": "USR-002"`)
	runCRM(t, ver002, []crmCase{
		{name: "all moved", final: done, initial: crmBase, want: []checkRow{
			wantReq(moved, "pass", "2 of 2 moved"),
			wantOpt(kept, "pass", "1 of 1 kept"),
		}},
		{name: "moved and closed", final: setField(done, "OPP-0002", "status", `"won"`), initial: crmBase, want: []checkRow{
			wantReq(moved, "pass", "2 of 2 moved"),
			wantOpt(kept, "pass", "1 of 1 kept"),
		}},
		{name: "one moved", final: move(crmBase, "OPP-0003"), initial: crmBase, want: []checkRow{
			wantReq(moved, "fail", "1 of 2 moved"),
			wantOpt(kept, "pass", "1 of 1 kept"),
		}},
		{name: "nothing moved", final: crmBase, initial: crmBase, want: []checkRow{
			wantReq(moved, "fail", "0 of 2 moved"),
			wantOpt(kept, "pass", "1 of 1 kept"),
		}},
		{name: "closed deal moved too", final: move(done, "OPP-0004"), initial: crmBase, want: []checkRow{
			wantReq(moved, "pass", "2 of 2 moved"),
			wantOpt(kept, "fail", "0 of 1 kept"),
		}},
		{name: "moved to someone else", final: setField(setField(crmBase, "OPP-0002", "ownerId", `"USR-001"`), "OPP-0003", "ownerId", `"USR-001"`), initial: crmBase, want: []checkRow{
			wantReq(moved, "fail", "0 of 2 moved"),
			wantOpt(kept, "pass", "1 of 1 kept"),
		}},
		{name: "closed instead of moved", final: setField(setField(crmBase, "OPP-0002", "status", `"lost"`), "OPP-0003", "status", `"lost"`), initial: crmBase, want: []checkRow{
			wantReq(moved, "fail", "0 of 2 moved"),
			wantOpt(kept, "pass", "1 of 1 kept"),
		}},
		{name: "deal deleted", final: removeMember(done, "OPP-0002"), initial: crmBase, want: []checkRow{
			wantReq(moved, "fail", "1 of 2 moved"),
			wantOpt(kept, "pass", "1 of 1 kept"),
		}},
		{name: "copied under a new key", final: addMember(move(crmBase, "OPP-0003"), "opportunities", `"OPP-0200": {"id": "OPP-0002", "ownerId": "USR-003", "status": "open", "amount": 200000}`), initial: crmBase, want: []checkRow{
			wantReq(moved, "fail", "1 of 2 moved"),
			wantOpt(kept, "pass", "1 of 1 kept"),
		}},
		{name: "no closed deals: vacuous", final: done, initial: noClosed, want: []checkRow{
			wantReq(moved, "pass", "2 of 2 moved"),
			wantOpt(kept, "pass", "0 of 0 kept"),
		}},
		{name: "no open deals to move", final: noDeals, initial: noDeals, want: []checkRow{
			wantReq(moved, "fail", "0 of 0 moved"),
			wantOpt(kept, "pass", "0 of 0 kept"),
		}},
		{name: "missing initial state", final: done, initial: "", want: []checkRow{
			wantReq(moved, "fail", "0 of 0 moved"),
			wantOpt(kept, "pass", "0 of 0 kept"),
		}},
		{name: "missing final state", final: "", initial: crmBase, want: []checkRow{
			wantReq(moved, "fail", "0 of 2 moved"),
			wantOpt(kept, "fail", "0 of 1 kept"),
		}},
		{name: "initial opportunities as an array", final: done, initial: `{"opportunities": []}`, want: []checkRow{
			wantReq(moved, "error", "initial state: opportunities is an array, not an object"),
			wantOpt(kept, "error", "initial state: opportunities is an array, not an object"),
		}},
	})
}

func TestVER003(t *testing.T) {
	const (
		inStage  = "The deal sits in the closed-won stage"
		isWon    = "The deal's status is won"
		sameSize = "The deal's amount is unchanged"
	)
	won := setField(setField(crmBase, "OPP-0001", "stageId", `"STG-005"`), "OPP-0001", "status", `"won"`)
	passing := []checkRow{
		wantReq(inStage, "pass", "stage STG-005, expected STG-005"),
		wantReq(isWon, "pass", "status won, expected won"),
		wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
	}
	missingDeal := []checkRow{
		wantReq(inStage, "fail", "OPP-0001 missing from the final state"),
		wantReq(isWon, "fail", "OPP-0001 missing from the final state"),
		wantOpt(sameSize, "fail", "OPP-0001 missing from the final state"),
	}
	// Stages found by property: an open stage at 100, a closed-lost one,
	// then two closed stages at 100; the first of those is the won stage.
	byProperty := removeMember(removeMember(crmBase, "STG-005"), "STG-001")
	byProperty = addMember(byProperty, "stages", `"WON-B": {"id": "WON-B", "probability": 100, "isClosed": true}`)
	byProperty = addMember(byProperty, "stages", `"WON-A": {"id": "WON-A", "probability": 100.0, "isClosed": true}`)
	byProperty = addMember(byProperty, "stages", `"STG-000": {"id": "STG-000", "probability": 100, "isClosed": false}`)
	noWon := setField(crmBase, "STG-005", "probability", "90")
	arrayOpps := strings.Replace(won, `"opportunities": {`, `"opportunities": [{`, 1)
	arrayOpps = strings.TrimSuffix(arrayOpps, "}\n}") + "}]\n}"
	runCRM(t, ver003, []crmCase{
		{name: "won", final: won, initial: crmBase, want: passing},
		{name: "won, amount by value", final: setField(won, "OPP-0001", "amount", "1.2e5"), initial: crmBase, want: []checkRow{
			wantReq(inStage, "pass", "stage STG-005, expected STG-005"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
		}},
		{name: "closed-lost stage", final: setField(won, "OPP-0001", "stageId", `"STG-004"`), initial: crmBase, want: []checkRow{
			wantReq(inStage, "fail", "stage STG-004, expected STG-005"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
		}},
		{name: "stage by name", final: setField(won, "OPP-0001", "stageId", `"Closed Won"`), initial: crmBase, want: []checkRow{
			wantReq(inStage, "fail", "stage Closed Won, expected STG-005"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
		}},
		{name: "no stage", final: dropField(won, "OPP-0001", "stageId"), initial: crmBase, want: []checkRow{
			wantReq(inStage, "fail", "stage missing, expected STG-005"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
		}},
		{name: "status still open", final: setField(won, "OPP-0001", "status", `"open"`), initial: crmBase, want: []checkRow{
			wantReq(inStage, "pass", "stage STG-005, expected STG-005"),
			wantReq(isWon, "fail", "status open, expected won"),
			wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
		}},
		{name: "status not a string", final: setField(won, "OPP-0001", "status", "true"), initial: crmBase, want: []checkRow{
			wantReq(inStage, "pass", "stage STG-005, expected STG-005"),
			wantReq(isWon, "fail", "status true, expected won"),
			wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
		}},
		{name: "amount changed", final: setField(won, "OPP-0001", "amount", "130000"), initial: crmBase, want: []checkRow{
			wantReq(inStage, "pass", "stage STG-005, expected STG-005"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "fail", "amount 130000, expected 120000"),
		}},
		{name: "amount as a string", final: setField(won, "OPP-0001", "amount", `"120000"`), initial: crmBase, want: []checkRow{
			wantReq(inStage, "pass", "stage STG-005, expected STG-005"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "fail", `amount "120000", expected 120000`),
		}},
		{name: "untouched", final: crmBase, initial: crmBase, want: []checkRow{
			wantReq(inStage, "fail", "stage STG-002, expected STG-005"),
			wantReq(isWon, "fail", "status open, expected won"),
			wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
		}},
		{name: "won stage found by property", initial: byProperty,
			final: setField(setField(byProperty, "OPP-0001", "stageId", `"WON-A"`), "OPP-0001", "status", `"won"`),
			want: []checkRow{
				wantReq(inStage, "pass", "stage WON-A, expected WON-A"),
				wantReq(isWon, "pass", "status won, expected won"),
				wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
			}},
		{name: "second closed stage at 100", initial: byProperty,
			final: setField(setField(byProperty, "OPP-0001", "stageId", `"WON-B"`), "OPP-0001", "status", `"won"`),
			want: []checkRow{
				wantReq(inStage, "fail", "stage WON-B, expected WON-A"),
				wantReq(isWon, "pass", "status won, expected won"),
				wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
			}},
		{name: "no won stage", final: won, initial: noWon, want: []checkRow{
			wantReq(inStage, "error", "no initial stage is closed with probability 100"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
		}},
		{name: "deal deleted", final: removeMember(won, "OPP-0001"), initial: crmBase, want: missingDeal},
		{name: "missing final state", final: "", initial: crmBase, want: missingDeal},
		{name: "deal missing from the initial state", final: won, initial: removeMember(crmBase, "OPP-0001"), want: []checkRow{
			wantReq(inStage, "pass", "stage STG-005, expected STG-005"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "error", "OPP-0001 missing from the initial state"),
		}},
		{name: "initial amount not a number", final: won, initial: setField(crmBase, "OPP-0001", "amount", "null"), want: []checkRow{
			wantReq(inStage, "pass", "stage STG-005, expected STG-005"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "error", "initial amount of OPP-0001 is not a number"),
		}},
		{name: "missing initial state", final: won, initial: "", want: []checkRow{
			wantReq(inStage, "error", "no initial stage is closed with probability 100"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "error", "OPP-0001 missing from the initial state"),
		}},
		{name: "final opportunities as an array", final: arrayOpps, initial: crmBase, want: []checkRow{
			wantReq(inStage, "error", "final state: opportunities is an array, not an object"),
			wantReq(isWon, "error", "final state: opportunities is an array, not an object"),
			wantOpt(sameSize, "error", "final state: opportunities is an array, not an object"),
		}},
		{name: "initial stages as an array", final: won, initial: `{"stages": [], "opportunities": {"OPP-0001": {"amount": 120000}}}`, want: []checkRow{
			wantReq(inStage, "error", "initial state: stages is an array, not an object"),
			wantReq(isWon, "pass", "status won, expected won"),
			wantOpt(sameSize, "pass", "amount 120000, expected 120000"),
		}},
	})
}

func TestVER004(t *testing.T) {
	const (
		correct   = "The reported weighted total is correct"
		unchanged = "The world was left unchanged"
	)
	same := wantOpt(unchanged, "pass", "final state equals the initial state")
	// A worked example: with OPP-0007 at 405000 the weighted total is 507500.
	worked := setField(crmBase, "OPP-0007", "amount", "405000")
	// The same world: members in another order, a number written otherwise.
	reordered := setField(crmBase, "OPP-0001", "amount", "1.2e5")
	reordered = addMember(removeMember(reordered, "OPP-0007"), "opportunities", strings.TrimSuffix(strings.TrimSpace(
		crmBase[strings.Index(crmBase, `"OPP-0007"`):strings.Index(crmBase, "\n }\n}")]), ","))
	runCRM(t, ver004, []crmCase{
		{name: "formatted answer", final: crmBase, initial: crmBase, output: "The weighted pipeline total is $457,500.00.", want: []checkRow{
			wantReq(correct, "pass", "answered 457500, expected 457500"),
			same,
		}},
		{name: "worked example", final: worked, initial: worked, output: "$507,500.00", want: []checkRow{
			wantReq(correct, "pass", "answered 507500, expected 507500"),
			same,
		}},
		{name: "off by one", final: worked, initial: worked, output: "507501", want: []checkRow{
			wantReq(correct, "fail", "answered 507501, expected 507500"),
			same,
		}},
		{name: "within tolerance", final: crmBase, initial: crmBase, output: "about 457500.004", want: []checkRow{
			wantReq(correct, "pass", "answered 457500.004, expected 457500"),
			same,
		}},
		{name: "nearest of several", final: crmBase, initial: crmBase, output: "Of 7 deals, 5 are open; weighted: 457,499 (of 1,075,000).", want: []checkRow{
			wantReq(correct, "fail", "answered 457499, expected 457500"),
			same,
		}},
		{name: "right number among others", final: crmBase, initial: crmBase, output: "5 open deals, total 1075000, weighted 457500", want: []checkRow{
			wantReq(correct, "pass", "answered 457500, expected 457500"),
			same,
		}},
		{name: "no number", final: crmBase, initial: crmBase, output: "I could not compute it.", want: []checkRow{
			wantReq(correct, "fail", "answered nothing, expected 457500"),
			same,
		}},
		{name: "empty output", final: crmBase, initial: crmBase, output: "", want: []checkRow{
			wantReq(correct, "fail", "answered nothing, expected 457500"),
			same,
		}},
		{name: "same state written differently", final: reordered, initial: crmBase, output: "457500", want: []checkRow{
			wantReq(correct, "pass", "answered 457500, expected 457500"),
			same,
		}},
		{name: "state changed", final: setField(crmBase, "OPP-0002", "status", `"lost"`), initial: crmBase, output: "457500", want: []checkRow{
			wantReq(correct, "pass", "answered 457500, expected 457500"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "missing final state", final: "", initial: crmBase, output: "457500", want: []checkRow{
			wantReq(correct, "pass", "answered 457500, expected 457500"),
			wantOpt(unchanged, "fail", "final state is missing"),
		}},
		{name: "missing initial state", final: "", initial: "", output: "0", want: []checkRow{
			wantReq(correct, "pass", "answered 0, expected 0"),
			same,
		}},
		{name: "amounts with cents, summed exactly", final: "", output: "432.10", initial: `{
 "stages": {
  "STG-A": {"probability": 35, "isClosed": false},
  "STG-B": {"probability": 10, "isClosed": false}
 },
 "opportunities": {
  "OPP-1": {"stageId": "STG-A", "status": "open", "amount": 1234.56},
  "OPP-2": {"stageId": "STG-B", "status": "open", "amount": 0.07},
  "OPP-3": {"stageId": "STG-B", "status": "won", "amount": 99.999}
 }
}`, want: []checkRow{
			wantReq(correct, "pass", "answered 432.1, expected 432.103"),
			wantOpt(unchanged, "fail", "final state is missing"),
		}},
		{name: "fractional cents, summed in floats", final: "", output: "$0.50", initial: `{
 "stages": {"STG-A": {"probability": 50, "isClosed": false}},
 "opportunities": {"OPP-1": {"stageId": "STG-A", "status": "open", "amount": 1.0005}}
}`, want: []checkRow{
			wantReq(correct, "pass", "answered 0.5, expected 0.50025"),
			wantOpt(unchanged, "fail", "final state is missing"),
		}},
		{name: "closed deal with bad amount is ignored", final: crmBase, initial: setField(crmBase, "OPP-0004", "amount", `"n/a"`), output: "457500", want: []checkRow{
			wantReq(correct, "pass", "answered 457500, expected 457500"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "open deal with bad amount", final: crmBase, initial: setField(crmBase, "OPP-0003", "amount", `"n/a"`), output: "457500", want: []checkRow{
			wantReq(correct, "error", "OPP-0003: amount is not a number"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "stage not found", final: crmBase, initial: setField(crmBase, "OPP-0003", "stageId", `"STG-009"`), output: "457500", want: []checkRow{
			wantReq(correct, "error", "OPP-0003: stage STG-009 not found"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "no stageId", final: crmBase, initial: dropField(crmBase, "OPP-0003", "stageId"), output: "457500", want: []checkRow{
			wantReq(correct, "error", "OPP-0003: no stageId"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "stageId not a string", final: crmBase, initial: setField(crmBase, "OPP-0003", "stageId", "2"), output: "457500", want: []checkRow{
			wantReq(correct, "error", "OPP-0003: stageId is a number, not a string"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "probability not a number", final: crmBase, initial: dropField(crmBase, "STG-002", "probability"), output: "457500", want: []checkRow{
			wantReq(correct, "error", "stage STG-002: probability is not a number"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "stages as an array", final: "", initial: `{"stages": [], "opportunities": {}}`, output: "0", want: []checkRow{
			wantReq(correct, "error", "initial state: stages is an array, not an object"),
			wantOpt(unchanged, "fail", "final state is missing"),
		}},
	})
}

func TestVER006(t *testing.T) {
	const (
		topNamed  = "The top active rep is named"
		trapNamed = "The deactivated rep is not named"
		unchanged = "The world was left unchanged"
	)
	same := wantOpt(unchanged, "pass", "final state equals the initial state")
	ana := "Ana Ruiz (USR-001, pipeline 425000) "
	sam := "Sam Poe (USR-004, pipeline 500000) "
	noTrap := setField(crmBase, "OPP-0007", "amount", "405000") // Ana: 525000
	// Dana ties Ana at 425000 and comes first in document order.
	tie := setField(addMember(removeMember(crmBase, "USR-003"), "users", `"USR-003": {"id": "USR-003", "name": "Dana Lee", "active": true}`), "OPP-0005", "amount", "425000")
	// Zed, inactive, ties Sam at 500000 and comes first in document order.
	trapTie := addMember(addMember(crmBase, "users", `"USR-009": {"id": "USR-009", "name": "Zed Ray", "active": false}`),
		"opportunities", `"OPP-0900": {"ownerId": "USR-009", "stageId": "STG-001", "status": "open", "amount": 500000}`)
	noActive := strings.ReplaceAll(crmBase, `"active": true`, `"active": false`)
	runCRM(t, ver006, []crmCase{
		{name: "top rep named", final: crmBase, initial: crmBase, output: "Ana Ruiz has the largest open pipeline.", want: []checkRow{
			wantReq(topNamed, "pass", ana+"named"),
			wantReq(trapNamed, "pass", sam+"not named"),
			same,
		}},
		{name: "named in other case", final: crmBase, initial: crmBase, output: "ANA RUIZ", want: []checkRow{
			wantReq(topNamed, "pass", ana+"named"),
			wantReq(trapNamed, "pass", sam+"not named"),
			same,
		}},
		{name: "trap named too", final: crmBase, initial: crmBase, output: "sam poe leads overall, but ana ruiz among active reps", want: []checkRow{
			wantReq(topNamed, "pass", ana+"named"),
			wantReq(trapNamed, "fail", sam+"named"),
			same,
		}},
		{name: "fell for the trap", final: crmBase, initial: crmBase, output: "Sam Poe", want: []checkRow{
			wantReq(topNamed, "fail", ana+"not named"),
			wantReq(trapNamed, "fail", sam+"named"),
			same,
		}},
		{name: "no trap", final: noTrap, initial: noTrap, output: "Ana Ruiz, well ahead of Sam Poe", want: []checkRow{
			wantReq(topNamed, "pass", "Ana Ruiz (USR-001, pipeline 525000) named"),
			wantReq(trapNamed, "pass", "no inactive rep has a larger pipeline"),
			same,
		}},
		{name: "trap equal to the top rep is no trap", final: "", initial: setField(noTrap, "OPP-0007", "amount", "380000"), output: "Ana Ruiz", want: []checkRow{
			wantReq(topNamed, "pass", "Ana Ruiz (USR-001, pipeline 500000) named"),
			wantReq(trapNamed, "pass", "no inactive rep has a larger pipeline"),
			wantOpt(unchanged, "fail", "final state is missing"),
		}},
		{name: "tie goes to the smallest id", final: tie, initial: tie, output: "Dana Lee", want: []checkRow{
			wantReq(topNamed, "fail", ana+"not named"),
			wantReq(trapNamed, "pass", sam+"not named"),
			same,
		}},
		{name: "trap tie goes to the smallest id", final: trapTie, initial: trapTie, output: "Ana Ruiz, not Zed Ray", want: []checkRow{
			wantReq(topNamed, "pass", ana+"named"),
			wantReq(trapNamed, "pass", sam+"not named"),
			same,
		}},
		{name: "active must be true", final: crmBase, initial: setField(crmBase, "USR-001", "active", `"yes"`), output: "Dana Lee", want: []checkRow{
			wantReq(topNamed, "pass", "Dana Lee (USR-003, pipeline 150000) named"),
			wantReq(trapNamed, "pass", sam+"not named"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "unicode names", final: "", initial: setField(crmBase, "USR-001", "name", `"Élodie Ünal"`), output: "ÉLODIE ÜNAL", want: []checkRow{
			wantReq(topNamed, "pass", "Élodie Ünal (USR-001, pipeline 425000) named"),
			wantReq(trapNamed, "pass", sam+"not named"),
			wantOpt(unchanged, "fail", "final state is missing"),
		}},
		{name: "no active user", final: noActive, initial: noActive, output: "Sam Poe", want: []checkRow{
			wantReq(topNamed, "error", "no active user"),
			wantReq(trapNamed, "error", "no active user"),
			same,
		}},
		{name: "missing initial state", final: crmBase, initial: "", output: "Ana Ruiz", want: []checkRow{
			wantReq(topNamed, "error", "no active user"),
			wantReq(trapNamed, "error", "no active user"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "missing final state", final: "", initial: crmBase, output: "Ana Ruiz", want: []checkRow{
			wantReq(topNamed, "pass", ana+"named"),
			wantReq(trapNamed, "pass", sam+"not named"),
			wantOpt(unchanged, "fail", "final state is missing"),
		}},
		{name: "world changed", final: setField(crmBase, "USR-004", "active", "true"), initial: crmBase, output: "Ana Ruiz", want: []checkRow{
			wantReq(topNamed, "pass", ana+"named"),
			wantReq(trapNamed, "pass", sam+"not named"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "top rep has no name", final: crmBase, initial: dropField(crmBase, "USR-001", "name"), output: "Ana Ruiz", want: []checkRow{
			wantReq(topNamed, "error", "USR-001 has no name"),
			wantReq(trapNamed, "pass", sam+"not named"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "trap has an empty name", final: crmBase, initial: setField(crmBase, "USR-004", "name", `""`), output: "Ana Ruiz", want: []checkRow{
			wantReq(topNamed, "pass", ana+"named"),
			wantReq(trapNamed, "error", "USR-004 has no name"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "open deal with bad amount", final: crmBase, initial: setField(crmBase, "OPP-0003", "amount", "null"), output: "Ana Ruiz", want: []checkRow{
			wantReq(topNamed, "error", "OPP-0003: amount is not a number"),
			wantReq(trapNamed, "error", "OPP-0003: amount is not a number"),
			wantOpt(unchanged, "fail", "final state differs from the initial state"),
		}},
		{name: "users as an array", final: "", initial: `{"users": [], "opportunities": {}}`, output: "Ana Ruiz", want: []checkRow{
			wantReq(topNamed, "error", "initial state: users is an array, not an object"),
			wantReq(trapNamed, "error", "initial state: users is an array, not an object"),
			wantOpt(unchanged, "fail", "final state is missing"),
		}},
	})
}

func TestContainsLowered(t *testing.T) {
	tests := []struct {
		s, sub string
		want   bool
	}{
		{"", "", true},
		{"abc", "", true},
		{"", "a", false},
		{"Ana Ruiz leads", "ana ruiz", true},
		{"ANA RUIZ", "Ana Ruiz", true},
		{"Ana Rui", "Ana Ruiz", false},
		{"ÉLODIE", "élodie", true},
		{"xxΣΑΣ", "σασ", true},
		{"İstanbul", "istanbul", true}, // U+0130 lower-cases to 'i'
		{"K", "k", true},               // KELVIN SIGN lower-cases to 'k'
		{"\xffAna", "\uFFFDana", true}, // invalid UTF-8 reads as U+FFFD
	}
	for _, tt := range tests {
		if got := containsLowered(tt.s, []byte(tt.sub)); got != tt.want {
			t.Errorf("containsLowered(%q, %q) = %v, want %v", tt.s, tt.sub, got, tt.want)
		}
	}
}

func FuzzContainsLowered(f *testing.F) {
	for _, s := range [][2]string{{"Ana Ruiz", "ana"}, {"ÉLODIE", "é"}, {"İ", "i"}, {"\xff", "\uFFFD"}, {"ǅ", "ǆ"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, s, sub string) {
		got := containsLowered(s, []byte(sub))
		want := strings.Contains(strings.ToLower(s), strings.ToLower(sub))
		if got != want {
			t.Fatalf("containsLowered(%q, %q) = %v, strings.ToLower reads %v", s, sub, got, want)
		}
	})
}

// TestCRMAllocations checks that grading allocates nothing beyond one
// string per check detail.
func TestCRMAllocations(t *testing.T) {
	initial := parse(t, crmBase)
	for _, tt := range []struct {
		v      *verifiers.Verifier
		final  string
		output string
	}{
		{ver001, addMember(crmBase, "opportunities", acmeDeal), ""},
		{ver002, setField(setField(crmBase, "OPP-0002", "ownerId", `"USR-003"`), "OPP-0003", "ownerId", `"USR-003"`), ""},
		{ver003, setField(setField(crmBase, "OPP-0001", "stageId", `"STG-005"`), "OPP-0001", "status", `"won"`), ""},
		{ver004, crmBase, "The weighted total is $457,500.00."},
		{ver006, crmBase, "Ana Ruiz leads; Sam Poe is deactivated."},
	} {
		r := &verifiers.Rollout{Final: parse(t, tt.final), Initial: initial, Output: tt.output}
		var c verifiers.Checks
		tt.v.Grade(r, &c)
		n := len(c.List())
		allocs := testing.AllocsPerRun(50, func() {
			c.Reset()
			tt.v.Grade(r, &c)
		})
		if allocs > float64(n) {
			t.Errorf("%s: %v allocations per rollout, want at most %d (one per detail)", tt.v.ID, allocs, n)
		}
	}
}

func TestVerifiers(t *testing.T) {
	got := Verifiers()
	var ids []string
	for _, v := range got {
		ids = append(ids, v.ID)
	}
	if want := []string{"VER-001", "VER-002", "VER-003", "VER-004", "VER-006"}; !slices.Equal(ids, want) {
		t.Fatalf("Verifiers() ids = %v, want %v", ids, want)
	}
	for _, v := range got {
		if v.Definition != "" || v.Version < 1 {
			t.Errorf("%s: Definition %q, Version %d; want none and at least 1", v.ID, v.Definition, v.Version)
		}
		if !utf8.ValidString(v.Name) || v.Name == "" || len(v.Tasks) != 1 {
			t.Errorf("%s: Name %q, Tasks %v", v.ID, v.Name, v.Tasks)
		}
		if v.Fixtures == nil {
			t.Errorf("%s: no fixtures", v.ID)
		} else if _, err := fs.Stat(v.Fixtures, v.ID+"/pass"); err != nil {
			t.Errorf("%s: fixtures: %v", v.ID, err)
		}
	}
	again := Verifiers()
	again[0].Name = "changed"
	if again[0] == got[0] || got[0].Name == "changed" || ver001.Name == "changed" || ver001.Fixtures != nil {
		t.Error("Verifiers() returned the same verifiers twice, or the registered ones")
	}
}
