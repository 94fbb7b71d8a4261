// Package crm is the CRM reference environment's Go verifiers (VER-001 to
// VER-006), the ones `gavel gen` data is graded with. The stock gavel
// binary passes them to cli.Main, as a team's own gavel passes its own; it
// is also the example to read before writing a verifier. Not public API:
// its verifiers may change in any release.
package crm

// The CRM reference environment. A CRM state is
//
//	{"users":         {ID: {"id", "name", "active": bool}},
//	 "stages":        {ID: {"id", "name", "probability": 0..100, "isClosed": bool}},
//	 "opportunities": {ID: {"id", "name", "ownerId", "stageId",
//	                        "status": "open"|"won"|"lost", "amount": number}}}
//
// Rules every CRM verifier keeps:
//
//   - The ids and values a task states (the users it names, the deal it
//     names, the amount it asks for) are constants below. Every other
//     expectation is derived from the initial state, read in document order,
//     so editing the seed data moves the grading with it.
//   - A record's identity is its key in its table: ownerId and stageId refer
//     to keys, and the "id" fields inside records are not read.
//   - A missing or null state, and a missing or null table, has no rows. A
//     state that is not an object, or a table that is not an object (an
//     array of records, say), lacks what every CRM task presupposes: each
//     check that reads it ends in status error, with a detail naming the
//     state and the table, e.g. "final state: opportunities is an array,
//     not an object". Checks that do not read it still run.
//   - A record field of the wrong type simply does not match ("ownerId": 4
//     is not "USR-004"). Where a verifier must compute with a field (an
//     amount it sums, a probability it weighs, a name it looks for) and
//     cannot, the checks that need it end in status error.
//   - Where a key repeats in an object, lookups find its first member and
//     iteration visits every member.
//   - Numbers compare by exact decimal value (50000 equals 5e4); details
//     print numbers with strconv.FormatFloat(x, 'f', -1, 64).
//
// Grading allocates nothing but the detail strings.

import (
	"bytes"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// What the CRM tasks themselves state.
const (
	acmeDealName   = "ACME Expansion" // TASK-001: the deal to create
	acmeDealOwner  = "USR-002"        // TASK-001: its owner
	acmeDealAmount = 50000            // TASK-001: its amount
	departedRep    = "USR-004"        // TASK-002: whose open deals move
	newOwner       = "USR-003"        // TASK-002: to whom
	wonDeal        = "OPP-0001"       // TASK-003: the deal to mark won
)

// Values the CRM state schema defines.
const (
	statusOpen     = "open"
	statusWon      = "won"
	wonProbability = 100 // a closed stage with this probability is closed-won
)

// Labels of checks that several CRM verifiers share.
const labelUnchanged = "The world was left unchanged"

var ver001 = &verifiers.Verifier{
	ID:      "VER-001",
	Name:    "ACME expansion deal created",
	Tasks:   []string{"TASK-001"},
	Version: 1,
	Grade:   gradeVER001,
}

// gradeVER001 grades TASK-001. A new deal is an opportunity whose key is in
// the final state but not the initial one; it counts when its name, ownerId
// and status are exactly as the task asks. Details: "1 found" (the number of
// such deals) for the required check; "amount 50000, expected 50000" (the
// amount shown as "missing" when absent, quoted when a string) or
// "2 found, need exactly 1" for the optional one.
func gradeVER001(r *verifiers.Rollout, c *verifiers.Checks) error {
	const (
		exactlyOne = "Exactly one new ACME Expansion deal exists"
		worth      = "The new deal is worth 50000"
	)
	initial, fault := crmTable(r.Initial, "initial", "opportunities")
	final, finalFault := crmTable(r.Final, "final", "opportunities")
	if fault == "" {
		fault = finalFault
	}
	if fault != "" {
		c.Fault(exactlyOne, true, fault)
		c.Fault(worth, false, fault)
		return nil
	}

	found := 0
	var deal jsonview.Value
	for o := final.First(); o.Exists(); o = o.Next() {
		if o.Get("name").StrIs(acmeDealName) &&
			o.Get("ownerId").StrIs(acmeDealOwner) &&
			o.Get("status").StrIs(statusOpen) &&
			!initial.GetBytes(o.Key()).Exists() {
			found++
			deal = o
		}
	}
	var buf [96]byte
	b := strconv.AppendInt(buf[:0], int64(found), 10)
	b = append(b, " found"...)
	c.Require(exactlyOne, found == 1, string(b))

	if found != 1 {
		b = append(b, ", need exactly 1"...)
		c.Optional(worth, false, string(b))
		return nil
	}
	amount := deal.Get("amount")
	n, isInt := amount.Int()
	b = append(buf[:0], "amount "...)
	b = appendAmount(b, amount)
	b = append(b, ", expected "...)
	b = strconv.AppendInt(b, acmeDealAmount, 10)
	c.Optional(worth, isInt && n == acmeDealAmount, string(b))
	return nil
}

var ver002 = &verifiers.Verifier{
	ID:      "VER-002",
	Name:    "Departed rep's open deals moved to the new owner",
	Tasks:   []string{"TASK-002"},
	Version: 1,
	Grade:   gradeVER002,
}

// gradeVER002 grades TASK-002. S is the initial opportunities owned by the
// departed rep with status "open"; C the other initial opportunities the
// departed rep owns (any status but "open", a missing one included). Each is
// looked up under its own key in the final state; a deal missing there has
// neither moved nor kept its owner. Details: "M of S moved" and "K of C kept".
func gradeVER002(r *verifiers.Rollout, c *verifiers.Checks) error {
	const (
		moved = "Every open deal of the departed rep moved to the new owner"
		kept  = "Deals the departed rep already closed kept their owner"
	)
	initial, fault := crmTable(r.Initial, "initial", "opportunities")
	final, finalFault := crmTable(r.Final, "final", "opportunities")
	if fault == "" {
		fault = finalFault
	}
	if fault != "" {
		c.Fault(moved, true, fault)
		c.Fault(kept, false, fault)
		return nil
	}

	var open, nMoved, closed, nKept int
	for o := initial.First(); o.Exists(); o = o.Next() {
		if !o.Get("ownerId").StrIs(departedRep) {
			continue
		}
		owner := final.GetBytes(o.Key()).Get("ownerId")
		if o.Get("status").StrIs(statusOpen) {
			open++
			if owner.StrIs(newOwner) {
				nMoved++
			}
		} else {
			closed++
			if owner.StrIs(departedRep) {
				nKept++
			}
		}
	}
	var buf [64]byte
	c.Require(moved, open > 0 && nMoved == open, string(appendOf(buf[:0], nMoved, open, " moved")))
	c.Optional(kept, nKept == closed, string(appendOf(buf[:0], nKept, closed, " kept")))
	return nil
}

var ver003 = &verifiers.Verifier{
	ID:      "VER-003",
	Name:    "Deal OPP-0001 marked closed-won",
	Tasks:   []string{"TASK-003"},
	Version: 1,
	Grade:   gradeVER003,
}

// gradeVER003 grades TASK-003. The won stage is the first initial stage, in
// document order, with "isClosed" true and probability 100 (by value); it is
// identified by its key. Every check reads the final OPP-0001 and, unless
// it ends in error as below, fails when that deal is missing ("OPP-0001
// missing from the final state"). Details:
// "stage STG-005, expected STG-005", "status won, expected won" and
// "amount 120000, expected 120000" (a field shown as "missing" when absent,
// an amount quoted when it is a string).
//
// Error cases: no won stage ends the stage check in error ("no initial stage
// is closed with probability 100"); the amount check ends in error when the
// initial OPP-0001 is missing or its amount is not a number, since the task
// presupposes both.
func gradeVER003(r *verifiers.Rollout, c *verifiers.Checks) error {
	const (
		inStage  = "The deal sits in the closed-won stage"
		isWon    = "The deal's status is won"
		sameSize = "The deal's amount is unchanged"
	)
	final, finalFault := crmTable(r.Final, "final", "opportunities")
	deal := final.Get(wonDeal)
	var buf [96]byte

	// The stage check.
	stages, fault := crmTable(r.Initial, "initial", "stages")
	if fault == "" {
		fault = finalFault
	}
	var won jsonview.Value
	for s := stages.First(); s.Exists(); s = s.Next() {
		closed, _ := s.Get("isClosed").Bool()
		if p, ok := s.Get("probability").Int(); closed && ok && p == wonProbability {
			won = s
			break
		}
	}
	switch {
	case fault != "":
		c.Fault(inStage, true, fault)
	case !won.Exists():
		c.Fault(inStage, true, "no initial stage is closed with probability 100")
	case !deal.Exists():
		c.Require(inStage, false, wonDeal+" missing from the final state")
	default:
		stage := deal.Get("stageId")
		s, isStr := stage.Str()
		b := append(buf[:0], "stage "...)
		b = appendShown(b, stage)
		b = append(b, ", expected "...)
		b = append(b, won.Key()...)
		c.Require(inStage, isStr && bytes.Equal(s, won.Key()), string(b))
	}

	// The status check.
	switch {
	case finalFault != "":
		c.Fault(isWon, true, finalFault)
	case !deal.Exists():
		c.Require(isWon, false, wonDeal+" missing from the final state")
	default:
		status := deal.Get("status")
		b := append(buf[:0], "status "...)
		b = appendShown(b, status)
		b = append(b, ", expected "+statusWon...)
		c.Require(isWon, status.StrIs(statusWon), string(b))
	}

	// The amount check.
	initial, fault := crmTable(r.Initial, "initial", "opportunities")
	if fault == "" {
		fault = finalFault
	}
	before := initial.Get(wonDeal).Get("amount")
	switch {
	case fault != "":
		c.Fault(sameSize, false, fault)
	case !initial.Get(wonDeal).Exists():
		c.Fault(sameSize, false, wonDeal+" missing from the initial state")
	case before.Kind() != jsonview.Number:
		c.Fault(sameSize, false, "initial amount of "+wonDeal+" is not a number")
	case !deal.Exists():
		c.Optional(sameSize, false, wonDeal+" missing from the final state")
	default:
		after := deal.Get("amount")
		cmp, ok := jsonview.CompareNumbers(after, before)
		b := append(buf[:0], "amount "...)
		b = appendAmount(b, after)
		b = append(b, ", expected "...)
		b = appendAmount(b, before)
		c.Optional(sameSize, ok && cmp == 0, string(b))
	}
	return nil
}

var ver004 = &verifiers.Verifier{
	ID:      "VER-004",
	Name:    "Weighted pipeline total reported",
	Tasks:   []string{"TASK-004"},
	Version: 1,
	Grade:   gradeVER004,
}

// gradeVER004 grades TASK-004. The expected total is derived from the
// initial state by weightedTotal. The answer check's detail is
// "answered X, expected Y", X the number stated in the output nearest to Y,
// or "nothing" when the output states none; it ends in error when the total
// cannot be derived (see weightedTotal for the details).
func gradeVER004(r *verifiers.Rollout, c *verifiers.Checks) error {
	const correct = "The reported weighted total is correct"
	t := totals.Get(verifiers.World{Initial: r.Initial}, func(w verifiers.World) total {
		v, fault := weightedTotal(w.Initial)
		return total{v, fault}
	})
	expected, fault := t.value, t.fault
	if fault != "" {
		c.Fault(correct, true, fault)
	} else {
		var buf [96]byte
		b := append(buf[:0], "answered "...)
		if x, ok := verifiers.NearestNumber(r.Output, expected); ok {
			b = appendFloat(b, x)
		} else {
			b = append(b, "nothing"...)
		}
		b = append(b, ", expected "...)
		b = appendFloat(b, expected)
		c.Require(correct, verifiers.StatesNumber(r.Output, expected, verifiers.DefaultTolerance), string(b))
	}
	addUnchanged(c, r)
	return nil
}

// totals memoizes weightedTotal per shared initial state (it reads no
// task row).
var totals verifiers.WorldMemo[total]

type total struct {
	value float64
	fault string
}

// weightedTotal returns the sum, over the opportunities of state with status
// "open", of amount × probability of the opportunity's stage / 100. A state
// without opportunities totals 0.
//
// Amounts are money: where every amount is a whole number of cents and
// every probability a whole number (as in the reference data), the sum is
// taken exactly, in integer cents × percent, and divided once, so the total
// is the float64 nearest the true one and details print it as written
// ("expected 432.103", not "432.10299999999995"). Otherwise, or should the
// sum outgrow 2^53, the products are summed in float64.
//
// An open opportunity whose amount is not a number, whose stageId names no
// stage, or whose stage's probability is not a number leaves the total
// undefined: fault then says which, e.g. "OPP-0003: amount is not a number",
// "OPP-0003: no stageId", "OPP-0003: stageId is a number, not a string",
// "OPP-0003: stage STG-009 not found", "stage STG-002: probability is not a
// number".
func weightedTotal(state jsonview.Value) (total float64, fault string) {
	opps, fault := crmTable(state, "initial", "opportunities")
	if fault != "" {
		return 0, fault
	}
	stages, fault := crmTable(state, "initial", "stages")
	if fault != "" {
		return 0, fault
	}
	const exactLimit = 1 << 53 // integers below it are exact in a float64
	var sum float64            // Σ amount × probability
	var cents int64            // Σ amount in cents × probability, while exact
	exact := true
	for o := opps.First(); o.Exists(); o = o.Next() {
		if !o.Get("status").StrIs(statusOpen) {
			continue
		}
		amount, ok := o.Get("amount").Float()
		if !ok {
			return 0, string(o.Key()) + ": amount is not a number"
		}
		stageID := o.Get("stageId")
		id, ok := stageID.Str()
		switch {
		case !stageID.Exists():
			return 0, string(o.Key()) + ": no stageId"
		case !ok:
			return 0, string(o.Key()) + ": stageId is " + withArticle(stageID.Kind()) + ", not a string"
		}
		stage := stages.GetBytes(id)
		if !stage.Exists() {
			return 0, string(o.Key()) + ": stage " + string(id) + " not found"
		}
		p, ok := stage.Get("probability").Float()
		if !ok {
			return 0, "stage " + string(id) + ": probability is not a number"
		}
		sum += amount * p
		if exact {
			c := math.Round(amount * 100)
			t := c * p // exact when c and p are whole and |t| < exactLimit
			exact = c/100 == amount && p == math.Trunc(p) &&
				math.Abs(t) < exactLimit && math.Abs(float64(cents)+t) < exactLimit
			if exact {
				cents += int64(t)
			}
		}
	}
	if exact {
		return float64(cents) / 10000, ""
	}
	return sum / 100, ""
}

var ver006 = &verifiers.Verifier{
	ID:      "VER-006",
	Name:    "Top active rep by open pipeline named",
	Tasks:   []string{"TASK-006"},
	Version: 2,
	Grade:   gradeVER006,
}

// gradeVER006 grades TASK-006. A user's pipeline is the sum of the amounts
// of the initial opportunities they own (ownerId equal to the user's key)
// with status "open", taken exactly (in cents) when every amount is a whole
// number of cents, so that it does not depend on the order of the deals
// (Version 2). Active users are those with "active": true; any other
// value, or none, counts as inactive. The expected user is the active user
// with the largest pipeline, the trap the inactive user with the largest
// pipeline when that is larger than the expected user's; ties go to the
// smallest key (bytewise). A user is named when the output contains their
// name, both lower-cased (Unicode simple case mapping).
//
// Details: "Dana Lee (USR-003, pipeline 480000) named" or "... not named" for
// the expected user and the trap alike; "no inactive rep has a larger
// pipeline" when there is no trap. Both required checks end in error when
// there is no active user ("no active user"), when a user's pipeline cannot
// be summed ("OPP-0007: amount is not a number"), or when the users or
// opportunities table is not an object; a check ends in error when the user
// it looks for has no name, or an empty one ("USR-003 has no name"), since
// every output would contain an empty name.
func gradeVER006(r *verifiers.Rollout, c *verifiers.Checks) error {
	const (
		topNamed  = "The top active rep is named"
		trapNamed = "The deactivated rep is not named"
	)
	t := tops.Get(verifiers.World{Initial: r.Initial}, func(w verifiers.World) topRepsResult {
		active, inactive, fault := topReps(w.Initial)
		return topRepsResult{active, inactive, fault}
	})
	top, trap, fault := t.active, t.inactive, t.fault
	if fault == "" && !top.user.Exists() {
		fault = "no active user"
	}
	if fault != "" {
		c.Fault(topNamed, true, fault)
		c.Fault(trapNamed, true, fault)
	} else {
		named, detail := repNamed(r.Output, top)
		if detail == "" {
			c.Fault(topNamed, true, string(top.user.Key())+" has no name")
		} else {
			c.Require(topNamed, named, detail)
		}
		if !trap.user.Exists() || trap.pipeline <= top.pipeline {
			c.Require(trapNamed, true, "no inactive rep has a larger pipeline")
		} else if named, detail := repNamed(r.Output, trap); detail == "" {
			c.Fault(trapNamed, true, string(trap.user.Key())+" has no name")
		} else {
			c.Require(trapNamed, !named, detail)
		}
	}
	addUnchanged(c, r)
	return nil
}

// tops memoizes topReps per shared initial state (it reads no task row).
var tops verifiers.WorldMemo[topRepsResult]

type topRepsResult struct {
	active, inactive rep
	fault            string
}

// rep is a user with their open pipeline.
type rep struct {
	user     jsonview.Value // a member of the users table; Missing for none
	pipeline float64
}

// outrankedBy reports whether a user with key id and pipeline p ranks above
// r: r is empty, or p is larger, or p is equal and id is smaller.
func (r *rep) outrankedBy(id []byte, p float64) bool {
	return !r.user.Exists() || p > r.pipeline || p == r.pipeline && bytes.Compare(id, r.user.Key()) < 0
}

// topReps returns the active and the inactive user of the initial state with
// the largest open pipeline; either is Missing when there is no such user.
// It reads the open opportunities once into a small array on the stack,
// then matches them against each user: O(users × open opportunities) byte
// comparisons, allocating only for states with more than 64 open
// opportunities.
func topReps(state jsonview.Value) (active, inactive rep, fault string) {
	users, fault := crmTable(state, "initial", "users")
	if fault != "" {
		return active, inactive, fault
	}
	opps, fault := crmTable(state, "initial", "opportunities")
	if fault != "" {
		return active, inactive, fault
	}
	type openDeal struct {
		opp    jsonview.Value
		owner  []byte
		amount float64
		ok     bool // amount is a number
	}
	var buf [64]openDeal
	open := buf[:0]
	for o := opps.First(); o.Exists(); o = o.Next() {
		if !o.Get("status").StrIs(statusOpen) {
			continue
		}
		if owner, ok := o.Get("ownerId").Str(); ok {
			amount, ok := o.Get("amount").Float()
			open = append(open, openDeal{opp: o, owner: owner, amount: amount, ok: ok})
		}
	}
	const exactLimit = 1 << 53 // integers below it are exact in a float64
	for u := users.First(); u.Exists(); u = u.Next() {
		id := u.Key()
		var p float64
		var cents int64 // Σ amount in cents, while exact
		exact := true
		for i := range open {
			d := &open[i]
			if !bytes.Equal(d.owner, id) {
				continue
			}
			if !d.ok {
				return rep{}, rep{}, string(d.opp.Key()) + ": amount is not a number"
			}
			p += d.amount
			if exact {
				c := math.Round(d.amount * 100)
				exact = c/100 == d.amount && math.Abs(float64(cents)+c) < exactLimit
				if exact {
					cents += int64(c)
				}
			}
		}
		if exact {
			// Whole cents: the sum is taken exactly, whatever the order of
			// the deals, and p is the float64 nearest it.
			p = float64(cents) / 100
		}
		best := &inactive
		if on, _ := u.Get("active").Bool(); on {
			best = &active
		}
		if best.outrankedBy(id, p) {
			*best = rep{user: u, pipeline: p}
		}
	}
	return active, inactive, ""
}

// repNamed reports whether output names r's user, with the detail
// "Name (ID, pipeline P) named" or "... not named". detail is empty when the
// user has no name to look for.
func repNamed(output string, r rep) (named bool, detail string) {
	name, ok := r.user.Get("name").Str()
	if !ok || len(name) == 0 {
		return false, ""
	}
	named = containsLowered(output, name)
	var buf [128]byte
	b := append(buf[:0], name...)
	b = append(b, " ("...)
	b = append(b, r.user.Key()...)
	b = append(b, ", pipeline "...)
	b = appendFloat(b, r.pipeline)
	if named {
		b = append(b, ") named"...)
	} else {
		b = append(b, ") not named"...)
	}
	return named, string(b)
}

// containsLowered reports whether s contains sub once both are lower-cased
// rune by rune with unicode.ToLower, as
// strings.Contains(strings.ToLower(s), strings.ToLower(string(sub))) does
// (invalid UTF-8 reads as U+FFFD on both sides), without building either
// lower-cased copy. Since a lower-cased text is valid UTF-8, a match in it
// starts and ends on rune boundaries, so comparing rune by rune from each
// rune of s finds the same matches.
func containsLowered(s string, sub []byte) bool {
	if len(sub) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		if hasPrefixLowered(s[i:], sub) {
			return true
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return false
}

// hasPrefixLowered reports whether s begins with prefix, both lower-cased
// rune by rune.
func hasPrefixLowered(s string, prefix []byte) bool {
	for len(prefix) > 0 {
		if len(s) == 0 {
			return false
		}
		a, b := s[0], prefix[0]
		if a < utf8.RuneSelf && b < utf8.RuneSelf {
			if lowerASCII(a) != lowerASCII(b) {
				return false
			}
			s, prefix = s[1:], prefix[1:]
			continue
		}
		r1, w1 := utf8.DecodeRuneInString(s)
		r2, w2 := utf8.DecodeRune(prefix)
		if r1 != r2 && unicode.ToLower(r1) != unicode.ToLower(r2) {
			return false
		}
		s, prefix = s[w1:], prefix[w2:]
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// addUnchanged adds the optional check that the final state deep-equals the
// initial state (equal as JSON values, jsonview.Equal; a null state counts
// as missing). Equal
// texts are equal values, so an untouched state written back byte for byte
// is recognised without walking it. Details:
// "final state equals the initial state", "final state differs from the
// initial state", or "final state is missing".
func addUnchanged(c *verifiers.Checks, r *verifiers.Rollout) {
	final, initial := r.Final, r.Initial
	if final.IsNull() {
		final = jsonview.Value{}
	}
	if initial.IsNull() {
		initial = jsonview.Value{}
	}
	switch {
	case bytes.Equal(final.Raw(), initial.Raw()),
		jsonview.Equal(final, initial):
		c.Optional(labelUnchanged, true, "final state equals the initial state")
	case !final.Exists():
		c.Optional(labelUnchanged, false, "final state is missing")
	default:
		c.Optional(labelUnchanged, false, "final state differs from the initial state")
	}
}

// crmTable returns the table called name of a CRM state. A missing or null
// state or table gives Missing, which has no rows. A state or table that is
// not an object gives a fault, a check detail such as "final state:
// opportunities is an array, not an object"; which names the state
// ("initial" or "final").
func crmTable(state jsonview.Value, which, name string) (table jsonview.Value, fault string) {
	switch k := state.Kind(); k {
	case jsonview.Missing, jsonview.Null:
		return jsonview.Value{}, ""
	case jsonview.Object:
	default:
		return jsonview.Value{}, which + " state is " + withArticle(k) + ", not an object"
	}
	table = state.Get(name)
	switch k := table.Kind(); k {
	case jsonview.Missing, jsonview.Null:
		return jsonview.Value{}, ""
	case jsonview.Object:
		return table, ""
	default:
		return jsonview.Value{}, which + " state: " + name + " is " + withArticle(k) + ", not an object"
	}
}

// withArticle returns a kind's name with its indefinite article: "an
// array", "a number"; "null" stays as it is.
func withArticle(k jsonview.Kind) string {
	switch k {
	case jsonview.Null:
		return "null"
	case jsonview.Array, jsonview.Object:
		return "an " + k.String()
	}
	return "a " + k.String()
}

// appendShown appends v as a detail shows a field: a string's text, a
// number's value, "true", "false" or "null", "an array" or "an object", and
// "missing" when there is no such field.
func appendShown(b []byte, v jsonview.Value) []byte {
	switch k := v.Kind(); k {
	case jsonview.Missing:
		return append(b, "missing"...)
	case jsonview.String:
		s, _ := v.Str()
		return append(b, s...)
	case jsonview.Number:
		f, _ := v.Float()
		return appendFloat(b, f)
	case jsonview.Null, jsonview.True, jsonview.False:
		return append(b, v.Raw()...)
	default:
		return append(b, withArticle(k)...)
	}
}

// appendAmount appends v as a detail shows a field that should hold a
// number: as appendShown does, except that a string is quoted, so that the
// string "50000" is not mistaken for the number.
func appendAmount(b []byte, v jsonview.Value) []byte {
	if s, ok := v.Str(); ok {
		return strconv.AppendQuote(b, string(s))
	}
	return appendShown(b, v)
}

// appendFloat appends f as details print numbers.
func appendFloat(b []byte, f float64) []byte {
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// appendOf appends "n of total" and then suffix.
func appendOf(b []byte, n, total int, suffix string) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, " of "...)
	b = strconv.AppendInt(b, int64(total), 10)
	return append(b, suffix...)
}
