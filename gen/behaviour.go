package gen

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// Behaviour is what the simulated agent of a rollout did.
//
// How each behaviour maps to the checks of verifiers/crm (P pass, F fail, E
// error; required checks first, as the verifiers list them) and so to the
// expected status:
//
// TASK-001 / VER-001 [new ACME Expansion deal (req.), worth 50000 (opt.)]
//
//	correct  created: one new deal, USR-002, open, 50000      P P  passed 1
//	partial  wrong-amount: as correct, amount != 50000        P F  passed 1/2
//	wrong    wrong-owner: the new deal is not USR-002's       F F  failed 0
//	wrong    created-twice: two matching new deals            F F  failed 0
//	wrong    wrong-name: "Acme Expansion" and the like        F F  failed 0
//	wrong    edited-existing: an existing ACME deal renamed   F F  failed 0
//	         (its key is in the initial state, so not new)
//	wrong    created-won: the new deal has status won         F F  failed 0
//	noop     nothing: no deal created                         F F  failed 0
//
// TASK-002 / VER-002 [S moved to USR-003 (req.), closed kept (opt.)];
// every world gives USR-004 at least two open deals and one closed one.
//
//	correct  all-moved: every deal of S to USR-003            P P  passed 1
//	partial  some-moved: 1 to |S|-1 deals of S moved          F P  failed 1/2
//	partial  closed-too: all of S plus closed deals moved     P F  passed 1/2
//	wrong    wrong-owner: S moved to someone else             F P  failed 1/2
//	wrong    all-to-wrong-owner: S and closed to someone else F F  failed 0
//	wrong    closed-only: only the closed deals moved         F F  failed 0
//	noop     nothing: no deal moved                           F P  failed 1/2
//
// TASK-003 / VER-003 [won stage (req.), status won (req.), amount (opt.)];
// OPP-0001 is open in every world. In a world without a closed-won stage
// (a seeded share of TASK-003 worlds) the first check is E whatever the
// agent did, and every rollout is an error of kind verifier.
//
//	correct  closed-won: won stage, status won                P P P  passed 1
//	partial  amount-changed: as correct, amount edited        P P F  passed 2/3
//	partial  status-left-open: won stage, status still open   P F P  failed 2/3
//	wrong    marked-lost: lost stage, status lost             F F P  failed 1/3
//	wrong    wrong-stage: a stage that is not the won one     F P P  failed 2/3
//	         (the renewal stage after it, or the last open
//	         stage), status won
//	noop     nothing: no change                               F F P  failed 1/3
//
// TASK-004 / VER-004 [total stated (req.), world unchanged (opt.)]. Answers
// state exactly one number besides an optional count of deals; a correct
// one is the expected total rounded to the cent or closer, a wrong one is
// at least a dollar away from it.
//
//	correct  right-total: world unchanged                     P P  passed 1
//	partial  right-total-world-changed: a deal's stage edited P F  passed 1/2
//	wrong    unweighted, included-won, not-divided (×100) or  F P  failed 1/2
//	         slip (off by 0.5% to 5%, at least $10)
//	noop     nothing: empty answer, world unchanged           F P  failed 1/2
//
// TASK-006 / VER-006 [top active rep named (req.), trap not named (req.),
// world unchanged (opt.)]. No user's name contains another's, names are
// written as-is, upper- or lower-cased, and answers name no one else.
//
//	correct  named-top: names the top active rep only         P P P  passed 1
//	partial  named-top-world-changed: and reassigns a deal    P P F  passed 2/3
//	wrong    named-trap: names the trap only                  F F P  failed 1/3
//	wrong    named-both: names the trap and the top rep       P F P  failed 2/3
//	wrong    named-runner-up: names the second active rep     F P P  failed 2/3
//	noop     nothing: empty answer                            F P P  failed 2/3
//
// Worlds without a trap only draw named-runner-up among wrong answers.
type Behaviour uint8

// Behaviours.
const (
	// Correct does the task.
	Correct Behaviour = iota
	// Partial does part of the task, or does it with a side effect.
	Partial
	// Wrong does something else than the task.
	Wrong
	// NoOp does nothing: the final state is the initial one and the
	// answer is empty.
	NoOp
)

// Behaviours lists every behaviour in order.
var Behaviours = []Behaviour{Correct, Partial, Wrong, NoOp}

// String returns the behaviour's name as written in the expected counts.
func (b Behaviour) String() string {
	switch b {
	case Correct:
		return "correct"
	case Partial:
		return "partial"
	case Wrong:
		return "wrong"
	case NoOp:
		return "noop"
	}
	return "unknown"
}

type checkStatus uint8

const (
	cPass checkStatus = iota
	cFail
	cError
)

func (c checkStatus) String() string {
	switch c {
	case cPass:
		return verifiers.CheckPass
	case cFail:
		return verifiers.CheckFail
	}
	return verifiers.CheckError
}

// builder builds the rollouts of one world, reusing its buffers.
type builder struct {
	r *rand.Rand
	w *world

	edits []oppEdit
	dirty uint64
	added []opp

	final   []byte
	finBuf  []byte
	output  []byte
	log     []byte
	events  int
	checks  []checkStatus
	variant string
}

func (b *builder) reset(w *world) {
	b.w = w
	b.edits = b.edits[:0]
	b.dirty = 0
	b.added = b.added[:0]
	b.output = b.output[:0]
	b.log = append(b.log[:0], '[')
	b.events = 0
	b.checks = b.checks[:0]
	b.variant = ""
}

// build generates one rollout of w's task with behaviour beh.
func (b *builder) build(w *world, beh Behaviour) {
	b.reset(w)
	switch w.task {
	case "TASK-001":
		b.task001(beh)
	case "TASK-002":
		b.task002(beh)
	case "TASK-003":
		b.task003(beh)
	case "TASK-004":
		b.task004(beh)
	case "TASK-006":
		b.task006(beh)
	default:
		panic("gen: no behaviours for " + w.task)
	}
	b.log = append(b.log, ']')
	if b.dirty == 0 && len(b.added) == 0 {
		b.final = w.initial
	} else {
		b.finBuf = w.appendState(b.finBuf[:0], b.edits, b.dirty, b.added)
		b.final = b.finBuf
	}
}

func (b *builder) set(variant string, checks ...checkStatus) {
	b.variant = variant
	b.checks = append(b.checks[:0], checks...)
}

// edit returns the final state's copy of deal i, for editing.
func (b *builder) edit(i int) *opp {
	if b.dirty&(1<<uint(i)) != 0 {
		for k := range b.edits {
			if b.edits[k].i == i {
				return &b.edits[k].o
			}
		}
	}
	b.dirty |= 1 << uint(i)
	b.edits = append(b.edits, oppEdit{i: i, o: b.w.opps[i]})
	return &b.edits[len(b.edits)-1].o
}

// newDeal returns a deal with the next free id, added to the final state.
func (b *builder) newDeal(name string, owner, stage int, status string, cents int64) *opp {
	b.added = append(b.added, opp{
		id:    fmt.Sprintf("OPP-%04d", len(b.w.opps)+len(b.added)+1),
		name:  name,
		owner: owner, stage: stage, status: status, cents: cents,
	})
	return &b.added[len(b.added)-1]
}

// money marks a log argument as an amount in cents.
type money int64

// call appends a tool call to the log; args are key, value pairs with
// values of type string, int or money.
func (b *builder) call(tool string, args ...any) {
	if b.events > 0 {
		b.log = append(b.log, ',')
	}
	b.events++
	b.log = append(b.log, `{"eventType":"tool_call","tool":`...)
	b.log = jsonview.AppendJSONString(b.log, tool)
	b.log = append(b.log, `,"args":{`...)
	for k := 0; k+1 < len(args); k += 2 {
		if k > 0 {
			b.log = append(b.log, ',')
		}
		b.log = jsonview.AppendJSONString(b.log, args[k].(string))
		b.log = append(b.log, ':')
		switch v := args[k+1].(type) {
		case string:
			b.log = jsonview.AppendJSONString(b.log, v)
		case int:
			b.log = fmt.Appendf(b.log, "%d", v)
		case money:
			b.log = appendCents(b.log, int64(v), false)
		}
	}
	b.log = append(b.log, '}', '}')
}

func (b *builder) say(format string, args ...any) {
	b.output = fmt.Appendf(b.output[:0], format, args...)
}

func (b *builder) oneOf(s ...string) string { return s[b.r.IntN(len(s))] }

func (b *builder) userID(u int) string  { return b.w.users[u].id }
func (b *builder) stageID(s int) string { return b.w.stages[s].id }

// otherUser returns a random user other than the ones given.
func (b *builder) otherUser(not ...int) int {
	for {
		u := b.r.IntN(len(b.w.users))
		ok := true
		for _, n := range not {
			ok = ok && u != n
		}
		if ok {
			return u
		}
	}
}

const acmeDealName = "ACME Expansion"

const acmeCents = 50000 * 100

func (b *builder) task001(beh Behaviour) {
	w, r := b.w, b.r
	owner := usrACMEOwner
	stage := w.open[0]
	if r.IntN(3) == 0 {
		stage = w.open[r.IntN(len(w.open))]
	}
	create := func(name string, owner, stage int, status string, cents int64) {
		o := b.newDeal(name, owner, stage, status, cents)
		b.call("create_opportunity", "name", o.name, "ownerId", b.userID(o.owner), "stageId", b.stageID(o.stage), "status", o.status, "amount", money(o.cents))
	}
	confirm := func(name string, cents int64) {
		b.say(b.oneOf(
			"Created %[1]s for %[2]s, worth $%[3]s.",
			"Done: the %[1]s deal is open and owned by %[2]s ($%[3]s).",
			"I added the opportunity %[1]s ($%[3]s) to the pipeline of %[2]s.",
		), name, w.users[usrACMEOwner].name, appendCents(nil, cents, true))
	}
	if beh != NoOp && r.IntN(2) == 0 {
		b.call("list_users")
	}
	switch beh {
	case Correct:
		create(acmeDealName, owner, stage, statusOpen, acmeCents)
		confirm(acmeDealName, acmeCents)
		b.set("created", cPass, cPass)
	case Partial:
		cents := []int64{5000 * 100, 500000 * 100, 55000 * 100, 45000 * 100, 5000050}[r.IntN(5)]
		create(acmeDealName, owner, stage, statusOpen, cents)
		confirm(acmeDealName, cents)
		b.set("wrong-amount", cPass, cFail)
	case Wrong:
		switch r.IntN(5) {
		case 0:
			create(acmeDealName, b.otherUser(usrACMEOwner), stage, statusOpen, acmeCents)
			confirm(acmeDealName, acmeCents)
			b.set("wrong-owner", cFail, cFail)
		case 1:
			create(acmeDealName, owner, stage, statusOpen, acmeCents)
			create(acmeDealName, owner, stage, statusOpen, acmeCents)
			confirm(acmeDealName, acmeCents)
			b.set("created-twice", cFail, cFail)
		case 2:
			name := b.oneOf("Acme Expansion", "ACME Corp Expansion", "ACME expansion", "ACME Expansion Deal")
			create(name, owner, stage, statusOpen, acmeCents)
			confirm(name, acmeCents)
			b.set("wrong-name", cFail, cFail)
		case 3:
			i := w.pick(r, func(_ int, o *opp) bool { return strings.HasPrefix(o.name, acmeCompany) })
			o := b.edit(i)
			o.name, o.owner, o.status, o.stage, o.cents = acmeDealName, owner, statusOpen, stage, acmeCents
			b.call("update_opportunity", "id", o.id, "name", o.name, "ownerId", b.userID(owner), "stageId", b.stageID(stage), "status", o.status, "amount", money(o.cents))
			confirm(acmeDealName, acmeCents)
			b.set("edited-existing", cFail, cFail)
		default:
			create(acmeDealName, owner, w.wonNamed, statusWon, acmeCents)
			confirm(acmeDealName, acmeCents)
			b.set("created-won", cFail, cFail)
		}
	case NoOp:
		b.set("nothing", cFail, cFail)
	}
}

func (b *builder) task002(beh Behaviour) {
	w, r := b.w, b.r
	S, C := w.departedOpen, w.departedClosed
	move := func(deals []int, to int) {
		for _, i := range deals {
			b.edit(i).owner = to
			b.call("update_opportunity", "id", w.opps[i].id, "ownerId", b.userID(to))
		}
	}
	report := func(n, to int) {
		b.say(b.oneOf(
			"Moved %[1]d deals from %[2]s to %[3]s.",
			"Reassigned %[1]d opportunities of %[2]s to %[3]s.",
			"Done. %[3]s now owns the deals %[2]s left behind (%[1]d moved).",
		), n, w.users[usrDeparted].name, w.users[to].name)
	}
	if beh != NoOp {
		b.call("list_opportunities", "ownerId", b.userID(usrDeparted))
	}
	switch beh {
	case Correct:
		move(S, usrNewOwner)
		report(len(S), usrNewOwner)
		b.set("all-moved", cPass, cPass)
	case Partial:
		if r.IntN(2) == 0 {
			k := 1 + r.IntN(len(S)-1)
			perm := r.Perm(len(S))[:k]
			some := make([]int, k)
			for j, p := range perm {
				some[j] = S[p]
			}
			move(some, usrNewOwner)
			report(k, usrNewOwner)
			b.set("some-moved", cFail, cPass)
			return
		}
		closed := C
		if r.IntN(2) == 0 {
			j := r.IntN(len(C))
			closed = C[j : j+1]
		}
		move(S, usrNewOwner)
		move(closed, usrNewOwner)
		report(len(S)+len(closed), usrNewOwner)
		b.set("closed-too", cPass, cFail)
	case Wrong:
		to := b.otherUser(usrNewOwner, usrDeparted)
		switch r.IntN(3) {
		case 0:
			move(S, to)
			report(len(S), to)
			b.set("wrong-owner", cFail, cPass)
		case 1:
			move(S, to)
			move(C, to)
			report(len(S)+len(C), to)
			b.set("all-to-wrong-owner", cFail, cFail)
		default:
			move(C, usrNewOwner)
			report(len(C), usrNewOwner)
			b.set("closed-only", cFail, cFail)
		}
	case NoOp:
		b.set("nothing", cFail, cPass)
	}
}

func (b *builder) task003(beh Behaviour) {
	w, r := b.w, b.r
	// inWon is the first check: E in a world without a closed-won stage.
	inWon := func(stage int) checkStatus {
		switch {
		case w.won < 0:
			return cError
		case stage == w.won:
			return cPass
		}
		return cFail
	}
	first := w.opps[0]
	update := func(stage int, status string) *opp {
		o := b.edit(0)
		o.stage, o.status = stage, status
		b.call("update_opportunity", "id", o.id, "stageId", b.stageID(stage), "status", status)
		return o
	}
	report := func(stage int) {
		b.say(b.oneOf(
			"%[1]s is now in %[2]s.",
			"Updated %[1]s: stage %[3]s (%[2]s).",
			"Marked the deal %[1]s as %[2]s.",
		), first.id, w.stages[stage].name, b.stageID(stage))
	}
	if beh != NoOp {
		b.call("list_stages")
	}
	switch beh {
	case Correct:
		update(w.wonNamed, statusWon)
		report(w.wonNamed)
		b.set("closed-won", inWon(w.wonNamed), cPass, cPass)
	case Partial:
		if r.IntN(2) == 0 {
			o := update(w.wonNamed, statusWon)
			if o.cents%100 != 0 {
				o.cents -= o.cents % 100
			} else {
				o.cents -= o.cents / 10 / 100 * 100 // a 10% discount; amounts are at least $5,000
			}
			b.call("update_opportunity", "id", o.id, "amount", money(o.cents))
			report(w.wonNamed)
			b.set("amount-changed", inWon(w.wonNamed), cPass, cFail)
			return
		}
		update(w.wonNamed, statusOpen)
		report(w.wonNamed)
		b.set("status-left-open", inWon(w.wonNamed), cFail, cPass)
	case Wrong:
		if r.IntN(2) == 0 {
			update(w.lost, statusLost)
			report(w.lost)
			b.set("marked-lost", inWon(w.lost), cFail, cPass)
			return
		}
		decoy := w.renewal
		if decoy < 0 {
			decoy = w.open[len(w.open)-1]
		}
		update(decoy, statusWon)
		report(decoy)
		b.set("wrong-stage", inWon(decoy), cPass, cPass)
	case NoOp:
		b.set("nothing", inWon(first.stage), cFail, cPass)
	}
}

// appendTotal appends a total given in units of 1/10000 dollar in one of
// five styles: "$507,500.00", "507500.00", "507500" (only when within half
// a cent of a whole dollar), "507,500.5" and the exact "507500.1234".
func appendTotal(b []byte, v4 int64, style int) []byte {
	cents := (v4 + 50) / 100
	switch style {
	case 0:
		b = append(b, '$')
		b = appendGrouped(b, cents/100, true)
		return append(b, '.', byte('0'+cents%100/10), byte('0'+cents%10))
	case 2:
		if whole := (v4 + 5000) / 10000; v4-whole*10000 <= 50 && whole*10000-v4 <= 50 {
			return appendGrouped(b, whole, false)
		}
		fallthrough
	case 1:
		b = appendGrouped(b, cents/100, false)
		return append(b, '.', byte('0'+cents%100/10), byte('0'+cents%10))
	case 3:
		return appendCents(b, cents, true)
	default:
		b = appendGrouped(b, v4/10000, false)
		frac := v4 % 10000
		if frac == 0 {
			return b
		}
		digits := []byte{'.', byte('0' + frac/1000), byte('0' + frac/100%10), byte('0' + frac/10%10), byte('0' + frac%10)}
		for digits[len(digits)-1] == '0' {
			digits = digits[:len(digits)-1]
		}
		return append(b, digits...)
	}
}

func (b *builder) task004(beh Behaviour) {
	w, r := b.w, b.r
	e4 := w.weighted4
	answer := func(v4 int64) {
		total := string(appendTotal(nil, v4, r.IntN(5)))
		switch r.IntN(6) {
		case 0:
			b.say("%s", total)
		case 1:
			b.say("The weighted total is %s.", total)
		case 2:
			b.say("Weighted pipeline total: %s", total)
		case 3:
			b.say("Summing amount × stage probability over the open deals gives %s.", total)
		case 4:
			b.say("Weighted pipeline: %s across %d open deals.", total, w.openCount)
		default:
			b.say("I computed the weighted pipeline as %s (amount times stage probability, open deals only).", total)
		}
	}
	if beh != NoOp {
		b.call("list_stages")
		b.call("list_opportunities", "status", statusOpen)
	}
	switch beh {
	case Correct:
		answer(e4)
		b.set("right-total", cPass, cPass)
	case Partial:
		b.moveStage()
		answer(e4)
		b.set("right-total-world-changed", cPass, cFail)
	case Wrong:
		var v4 int64
		switch r.IntN(4) {
		case 0:
			v4 = w.openCents * 100
			b.variant = "unweighted"
		case 1:
			v4 = e4 + w.wonCents*100
			b.variant = "included-won"
		case 2:
			v4 = e4 * 100
			b.variant = "not-divided"
		default:
			d := max(e4*int64(5+r.IntN(46))/1000, 10*10000)
			if r.IntN(2) == 0 && e4 > d {
				d = -d
			}
			v4 = e4 + d
			b.variant = "slip"
		}
		if v4-e4 < 10000 && e4-v4 < 10000 { // never within a dollar
			v4 = e4 * 100
			b.variant = "not-divided"
		}
		answer(v4)
		b.set(b.variant, cFail, cPass)
	case NoOp:
		b.set("nothing", cFail, cPass)
	}
}

// moveStage moves a random open deal to another open stage: a change to
// the world that a read-only task should not make.
func (b *builder) moveStage() {
	w, r := b.w, b.r
	i := w.pick(r, func(_ int, o *opp) bool { return o.status == statusOpen })
	o := b.edit(i)
	for o.stage == w.opps[i].stage {
		o.stage = w.open[r.IntN(len(w.open))]
	}
	b.call("update_opportunity", "id", o.id, "stageId", b.stageID(o.stage))
}

// nameCase writes a name as-is, upper- or lower-cased.
func (b *builder) nameCase(name string) string {
	switch p := b.r.IntN(8); {
	case p == 0:
		return strings.ToUpper(name)
	case p == 1:
		return strings.ToLower(name)
	}
	return name
}

func (b *builder) task006(beh Behaviour) {
	w, r := b.w, b.r
	name := func(u int) string { return b.nameCase(w.users[u].name) }
	pipe := func(u int) string { return "$" + string(appendCents(nil, w.pipeline[u], true)) }
	answer := func(u int) {
		b.say(b.oneOf(
			"%[1]s",
			"%[1]s has the largest open pipeline among active reps (%[2]s).",
			"Top active rep by open pipeline: %[1]s.",
			"It's %[1]s, with %[2]s in open deals.",
			"The active rep with the biggest open pipeline is %[1]s at %[2]s.",
		), name(u), pipe(u))
	}
	if beh != NoOp {
		b.call("list_users")
		b.call("list_opportunities", "status", statusOpen)
	}
	switch beh {
	case Correct:
		answer(w.top)
		b.set("named-top", cPass, cPass, cPass)
	case Partial:
		from := w.trap
		if from < 0 {
			from = w.second
		}
		i := w.pick(r, func(_ int, o *opp) bool { return o.status == statusOpen && o.owner == from })
		if i < 0 {
			i = w.pick(r, func(_ int, o *opp) bool { return o.status == statusOpen && o.owner != w.top })
		}
		if i >= 0 {
			b.edit(i).owner = w.top
			b.call("update_opportunity", "id", w.opps[i].id, "ownerId", b.userID(w.top))
		} else {
			b.moveStage()
		}
		answer(w.top)
		b.set("named-top-world-changed", cPass, cPass, cFail)
	case Wrong:
		pick := 2
		if w.trap >= 0 {
			pick = r.IntN(3)
		}
		switch pick {
		case 0:
			b.say(b.oneOf(
				"%[1]s has the largest open pipeline (%[2]s).",
				"Top rep by open pipeline: %[1]s.",
			), name(w.trap), pipe(w.trap))
			b.set("named-trap", cFail, cFail, cPass)
		case 1:
			b.say(b.oneOf(
				"%[1]s leads with %[2]s, but the top active rep is %[3]s.",
				"Top active rep: %[3]s (%[1]s has more, but is inactive).",
			), name(w.trap), pipe(w.trap), name(w.top))
			b.set("named-both", cPass, cFail, cPass)
		default:
			answer(w.second)
			b.set("named-runner-up", cFail, cPass, cPass)
		}
	case NoOp:
		b.set("nothing", cFail, cPass, cPass)
	}
}
