package gen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// The user ids the CRM tasks name (verifiers/crm), as indexes into
// world.users: USR-001 is index 0.
const (
	usrACMEOwner = 1 // USR-002, owner of the deal TASK-001 creates
	usrNewOwner  = 2 // USR-003, who takes over the departed rep's deals
	usrDeparted  = 3 // USR-004, the departed rep
	numUsers     = 8
)

// Deal statuses.
const (
	statusOpen = "open"
	statusWon  = "won"
	statusLost = "lost"
)

type user struct {
	id, name string
	active   bool
}

type stage struct {
	id, name string
	prob     int
	closed   bool
}

// opp is one opportunity. owner and stage index world.users and
// world.stages; amounts are held in cents so that every sum the
// expectations rest on is exact.
type opp struct {
	id, name     string
	owner, stage int
	status       string
	cents        int64
}

// world is one initial CRM state, serialized once, with the facts that the
// expected outcomes of its rollouts rest on, computed from the generator's
// own values (never by parsing the JSON or running a verifier).
//
// Invariants of every world (the constructions in behaviour.go rely on
// them): USR-002 and USR-003 are active; USR-004 owns at least two open
// deals and at least one closed one; OPP-0001 is open; at least six deals
// are open and at least one is won and one lost; open deals sit in open
// stages (probability below 100), won deals in a closed stage of
// probability 100, lost deals in the closed-lost stage; no user's
// lower-cased name contains another's.
type world struct {
	task   string
	users  []user
	stages []stage
	opps   []opp

	// won is the closed-won stage as VER-003 finds it (the first stage in
	// document order with isClosed true and probability 100), -1 when the
	// world has none (some TASK-003 worlds).
	won int
	// wonNamed is the stage won deals sit in: won, or in a world without a
	// closed-won stage the misconfigured stage named like one.
	wonNamed int
	lost     int
	// renewal is a second closed stage of probability 100 after won (-1
	// when absent): not the won stage by the rule, a trap for agents.
	renewal int
	open    []int // the open stages, in funnel order

	initial []byte   // the serialized state
	prefix  []byte   // initial up to and including `"opportunities":{`
	oppJSON [][]byte // each opportunity's `"ID":{...}` member

	departedOpen   []int // TASK-002: S, the open deals of USR-004
	departedClosed []int // TASK-002: the closed deals of USR-004

	// weighted4 is the TASK-004 expected total in units of 1/10000 dollar:
	// the sum over open deals of cents × stage probability.
	weighted4 int64
	openCents int64 // sum of open amounts
	wonCents  int64 // sum of won amounts
	openCount int

	pipeline []int64 // TASK-006: each user's open pipeline in cents
	top      int     // the active user with the largest pipeline
	second   int     // the runner-up among active users
	trap     int     // the trap user, -1 when there is no trap
}

// worldOptions are the task-specific choices of one world.
type worldOptions struct {
	noWon bool // no closed-won stage (TASK-003)
	trap  bool // aim for a trap (TASK-006)
}

func newWorld(r *rand.Rand, task string, o worldOptions) *world {
	w := &world{task: task, won: -1, renewal: -1}
	w.users = drawUsers(r)
	w.drawStages(r, o.noWon)
	w.drawOpps(r)
	w.enforceInvariants(r)
	if task == "TASK-001" {
		w.ensureACMEDeal(r)
	}
	if task == "TASK-006" {
		w.shapePipelines(r, o.trap)
	}
	w.derive()
	w.serialize()
	return w
}

// drawUsers draws eight users with distinct names of which none contains
// another (lower-cased), each reading back the same after upper-casing.
func drawUsers(r *rand.Rand) []user {
	users := make([]user, numUsers)
	lower := make([]string, 0, numUsers)
	for i := range users {
		for {
			name := firstNames[r.IntN(len(firstNames))] + " " + lastNames[r.IntN(len(lastNames))]
			l := strings.ToLower(name)
			if strings.ToLower(strings.ToUpper(name)) != l {
				continue
			}
			clash := false
			for _, other := range lower {
				if strings.Contains(other, l) || strings.Contains(l, other) {
					clash = true
					break
				}
			}
			if clash {
				continue
			}
			lower = append(lower, l)
			users[i] = user{id: fmt.Sprintf("USR-%03d", i+1), name: name, active: true}
			break
		}
	}
	// USR-002 and USR-003 stay active; USR-004 has usually been
	// deactivated; anyone else may have been.
	for i := range users {
		switch i {
		case usrACMEOwner, usrNewOwner:
		case usrDeparted:
			users[i].active = r.Float64() >= 0.85
		default:
			users[i].active = r.Float64() >= 0.2
		}
	}
	return users
}

// drawStages builds four to six open stages in funnel order and the closed
// ones, placed so that the won stage's id varies from world to world.
func (w *world) drawStages(r *rand.Rand, noWon bool) {
	k := 4 + r.IntN(3)
	kinds := r.Perm(len(openStageKinds))[:k]
	slices.Sort(kinds)
	var open []stage
	for _, ki := range kinds {
		sk := openStageKinds[ki]
		open = append(open, stage{
			name: sk.names[r.IntN(len(sk.names))],
			prob: sk.min + r.IntN(sk.max-sk.min+1),
		})
	}
	won := stage{name: wonStageNames[r.IntN(len(wonStageNames))], prob: 100, closed: true}
	if noWon {
		// Misconfigured: named like the won stage, but either not closed or
		// not at probability 100, so VER-003 finds no closed-won stage.
		if r.IntN(2) == 0 {
			won.closed = false
		} else {
			won.prob = 95 + r.IntN(5)
		}
	}
	lost := stage{name: lostStageNames[r.IntN(len(lostStageNames))], prob: 0, closed: true}
	var all []stage
	const (
		tagOpen = iota
		tagWon
		tagLost
		tagRenewal
	)
	var tags []int
	add := func(s stage, tag int) { all = append(all, s); tags = append(tags, tag) }
	switch r.IntN(4) {
	case 0, 1:
		for _, s := range open {
			add(s, tagOpen)
		}
		add(won, tagWon)
		add(lost, tagLost)
	case 2:
		for _, s := range open {
			add(s, tagOpen)
		}
		add(lost, tagLost)
		add(won, tagWon)
	case 3:
		add(won, tagWon)
		add(lost, tagLost)
		for _, s := range open {
			add(s, tagOpen)
		}
	}
	if !noWon && r.Float64() < 0.15 {
		add(stage{name: "Won - Renewal", prob: 100, closed: true}, tagRenewal)
	}
	for i := range all {
		all[i].id = fmt.Sprintf("STG-%03d", i+1)
		switch tags[i] {
		case tagOpen:
			w.open = append(w.open, i)
		case tagWon:
			w.wonNamed = i
			if !noWon {
				w.won = i
			}
		case tagLost:
			w.lost = i
		case tagRenewal:
			w.renewal = i
		}
	}
	w.stages = all
}

// drawAmount returns a deal amount in cents: usually whole thousands or
// quarters of a thousand, sometimes with cents.
func drawAmount(r *rand.Rand) int64 {
	dollars := 5000 + int64(r.ExpFloat64()*45000)
	if dollars > 400000 {
		dollars = 400000 - int64(r.IntN(50000))
	}
	switch p := r.Float64(); {
	case p < 0.5:
		return (dollars + 500) / 1000 * 1000 * 100
	case p < 0.7:
		return (dollars + 125) / 250 * 250 * 100
	default:
		return dollars*100 + int64(1+r.IntN(99))
	}
}

func (w *world) drawOpps(r *rand.Rand) {
	n := 20 + r.IntN(21)
	w.opps = make([]opp, n)
	for i := range w.opps {
		company := companies[r.IntN(len(companies))]
		kind := dealKinds[r.IntN(len(dealKinds))]
		sep := " - "
		if r.IntN(3) == 0 {
			sep = " "
		}
		o := opp{
			id:    fmt.Sprintf("OPP-%04d", i+1),
			name:  company + sep + kind,
			owner: r.IntN(numUsers),
			cents: drawAmount(r),
		}
		w.opps[i] = o
		w.setStatus(r, i, drawStatus(r))
	}
}

// drawStatus draws a deal status: mostly open.
func drawStatus(r *rand.Rand) string {
	switch p := r.Float64(); {
	case p < 0.65:
		return statusOpen
	case p < 0.85:
		return statusWon
	}
	return statusLost
}

// setStatus sets a deal's status and puts it in a stage that agrees.
func (w *world) setStatus(r *rand.Rand, i int, status string) {
	o := &w.opps[i]
	o.status = status
	switch status {
	case statusOpen:
		o.stage = w.open[r.IntN(len(w.open))]
	case statusWon:
		o.stage = w.wonNamed
		if w.renewal >= 0 && r.IntN(4) == 0 {
			o.stage = w.renewal
		}
	case statusLost:
		o.stage = w.lost
	}
}

func (w *world) count(pred func(o *opp) bool) int {
	n := 0
	for i := range w.opps {
		if pred(&w.opps[i]) {
			n++
		}
	}
	return n
}

// pick returns a random deal index satisfying pred, -1 when none does.
func (w *world) pick(r *rand.Rand, pred func(i int, o *opp) bool) int {
	var cand []int
	for i := range w.opps {
		if pred(i, &w.opps[i]) {
			cand = append(cand, i)
		}
	}
	if len(cand) == 0 {
		return -1
	}
	return cand[r.IntN(len(cand))]
}

func (w *world) enforceInvariants(r *rand.Rand) {
	w.setStatus(r, 0, statusOpen) // OPP-0001 is open
	for w.count(func(o *opp) bool { return o.status == statusOpen }) < 6 ||
		w.count(func(o *opp) bool { return o.status == statusWon }) == 0 ||
		w.count(func(o *opp) bool { return o.status == statusLost }) == 0 {
		for i := 1; i < len(w.opps); i++ {
			w.setStatus(r, i, drawStatus(r))
		}
	}
	for w.count(func(o *opp) bool { return o.owner == usrDeparted && o.status == statusOpen }) < 2 {
		i := w.pick(r, func(_ int, o *opp) bool { return o.owner != usrDeparted && o.status == statusOpen })
		w.opps[i].owner = usrDeparted
	}
	if w.count(func(o *opp) bool { return o.owner == usrDeparted && o.status != statusOpen }) == 0 {
		i := w.pick(r, func(_ int, o *opp) bool { return o.status != statusOpen })
		w.opps[i].owner = usrDeparted
	}
}

// ensureACMEDeal gives TASK-001 worlds an existing ACME Corp deal, which
// one wrong behaviour edits instead of creating the new one.
func (w *world) ensureACMEDeal(r *rand.Rand) {
	if w.count(func(o *opp) bool { return strings.HasPrefix(o.name, acmeCompany) }) > 0 {
		return
	}
	i := 1 + r.IntN(len(w.opps)-1)
	w.opps[i].name = acmeCompany + " - " + dealKinds[r.IntN(len(dealKinds))]
}

func (w *world) pipelines() []int64 {
	p := make([]int64, len(w.users))
	for _, o := range w.opps {
		if o.status == statusOpen {
			p[o.owner] += o.cents
		}
	}
	return p
}

// leaders returns the active user with the largest pipeline, the active
// runner-up, and the inactive user with the largest pipeline (-1 when
// none), ties going to the smaller id as in VER-006.
func (w *world) leaders(p []int64) (top, second, topInactive int) {
	top, second, topInactive = -1, -1, -1
	for i, u := range w.users {
		switch {
		case !u.active:
			if topInactive < 0 || p[i] > p[topInactive] {
				topInactive = i
			}
		case top < 0 || p[i] > p[top]:
			top, second = i, top
		case second < 0 || p[i] > p[second]:
			second = i
		}
	}
	return top, second, topInactive
}

// raise makes user u's pipeline exceed target by margin plus a random
// amount below margin, giving them an open deal first if they own none
// (never taking one of USR-004's).
func (w *world) raise(r *rand.Rand, u int, target, margin int64) {
	best := -1
	for i, o := range w.opps {
		if o.owner == u && o.status == statusOpen && (best < 0 || o.cents > w.opps[best].cents) {
			best = i
		}
	}
	if best < 0 {
		best = w.pick(r, func(_ int, o *opp) bool { return o.status == statusOpen && o.owner != usrDeparted })
		if best < 0 {
			best = w.pick(r, func(_ int, o *opp) bool { return o.owner != usrDeparted })
			w.setStatus(r, best, statusOpen)
		}
		w.opps[best].owner = u
	}
	delta := target - w.pipelines()[u] + margin + r.Int64N(margin)
	if delta > 0 {
		w.opps[best].cents += delta / 100 * 100
	}
}

// shapePipelines gives TASK-006 worlds a trap (an inactive user whose
// pipeline beats every active user's) when trap is set, and none
// otherwise, then separates the pipelines that decide the answer by at
// least a dollar so that summing in floating point cannot reorder them.
func (w *world) shapePipelines(r *rand.Rand, trap bool) {
	var inactive []int
	for i, u := range w.users {
		if !u.active {
			inactive = append(inactive, i)
		}
	}
	if trap && len(inactive) == 0 {
		w.users[usrDeparted].active = false
		inactive = append(inactive, usrDeparted)
	}
	p := w.pipelines()
	top, _, topInactive := w.leaders(p)
	const big = 5000 * 100 // cents
	switch {
	case trap:
		w.raise(r, inactive[r.IntN(len(inactive))], p[top], big)
	case topInactive >= 0 && p[topInactive] >= p[top]:
		w.raise(r, top, p[topInactive], big)
	}
	// Separate the pipelines compared by the rule by at least a dollar,
	// raising the larger of two near ones (or the intended winner of a
	// tie) by a little.
	const sep, small = 100, 1000 * 100 // cents
	near := func(a, b int64) bool { return a-b < sep && b-a < sep && (a != 0 || b != 0) }
	for range 100 {
		p = w.pipelines()
		top, second, topInactive := w.leaders(p)
		secondInactive := -1
		for i, u := range w.users {
			if !u.active && i != topInactive && (secondInactive < 0 || p[i] > p[secondInactive]) {
				secondInactive = i
			}
		}
		switch {
		case second >= 0 && near(p[top], p[second]):
			w.raise(r, top, p[second], small)
		case topInactive >= 0 && near(p[top], p[topInactive]):
			if trap {
				w.raise(r, topInactive, p[top], small)
			} else {
				w.raise(r, top, p[topInactive], small)
			}
		case secondInactive >= 0 && near(p[topInactive], p[secondInactive]):
			w.raise(r, topInactive, p[secondInactive], small)
		default:
			return
		}
	}
	panic("gen: could not separate TASK-006 pipelines")
}

// derive computes the facts of the finished world.
func (w *world) derive() {
	w.departedOpen, w.departedClosed = nil, nil
	w.weighted4, w.openCents, w.wonCents, w.openCount = 0, 0, 0, 0
	for i, o := range w.opps {
		switch o.status {
		case statusOpen:
			w.weighted4 += o.cents * int64(w.stages[o.stage].prob)
			w.openCents += o.cents
			w.openCount++
		case statusWon:
			w.wonCents += o.cents
		}
		if o.owner == usrDeparted {
			if o.status == statusOpen {
				w.departedOpen = append(w.departedOpen, i)
			} else {
				w.departedClosed = append(w.departedClosed, i)
			}
		}
	}
	w.pipeline = w.pipelines()
	var topInactive int
	w.top, w.second, topInactive = w.leaders(w.pipeline)
	w.trap = -1
	if topInactive >= 0 && w.pipeline[topInactive] > w.pipeline[w.top] {
		w.trap = topInactive
	}
}

func (w *world) serialize() {
	b := []byte(`{"users":{`)
	for i, u := range w.users {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonview.AppendJSONString(b, u.id)
		b = append(b, `:{"id":`...)
		b = jsonview.AppendJSONString(b, u.id)
		b = append(b, `,"name":`...)
		b = jsonview.AppendJSONString(b, u.name)
		b = append(b, `,"active":`...)
		b = fmt.Appendf(b, "%t}", u.active)
	}
	b = append(b, `},"stages":{`...)
	for i, s := range w.stages {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonview.AppendJSONString(b, s.id)
		b = append(b, `:{"id":`...)
		b = jsonview.AppendJSONString(b, s.id)
		b = append(b, `,"name":`...)
		b = jsonview.AppendJSONString(b, s.name)
		b = fmt.Appendf(b, `,"probability":%d,"isClosed":%t}`, s.prob, s.closed)
	}
	b = append(b, `},"opportunities":{`...)
	w.prefix = b
	w.oppJSON = make([][]byte, len(w.opps))
	for i := range w.opps {
		w.oppJSON[i] = w.appendOpp(nil, &w.opps[i])
	}
	w.initial = w.appendState(nil, nil, 0, nil)
}

// appendOpp appends the member `"ID":{...}` of one opportunity.
func (w *world) appendOpp(b []byte, o *opp) []byte {
	b = jsonview.AppendJSONString(b, o.id)
	b = append(b, `:{"id":`...)
	b = jsonview.AppendJSONString(b, o.id)
	b = append(b, `,"name":`...)
	b = jsonview.AppendJSONString(b, o.name)
	b = append(b, `,"ownerId":`...)
	b = jsonview.AppendJSONString(b, w.users[o.owner].id)
	b = append(b, `,"stageId":`...)
	b = jsonview.AppendJSONString(b, w.stages[o.stage].id)
	b = append(b, `,"status":`...)
	b = jsonview.AppendJSONString(b, o.status)
	b = append(b, `,"amount":`...)
	b = appendCents(b, o.cents, false)
	return append(b, '}')
}

// appendState appends the state with the deals marked in dirty replaced by
// their edited copies in edits (in any order) and the added deals last.
func (w *world) appendState(b []byte, edits []oppEdit, dirty uint64, added []opp) []byte {
	b = append(b, w.prefix...)
	for i := range w.opps {
		if i > 0 {
			b = append(b, ',')
		}
		if dirty&(1<<uint(i)) == 0 {
			b = append(b, w.oppJSON[i]...)
			continue
		}
		for k := range edits {
			if edits[k].i == i {
				b = w.appendOpp(b, &edits[k].o)
				break
			}
		}
	}
	for k := range added {
		b = append(b, ',')
		b = w.appendOpp(b, &added[k])
	}
	return append(b, '}', '}')
}

// oppEdit is the edited copy of deal i in a final state.
type oppEdit struct {
	i int
	o opp
}

// appendCents appends an amount given in cents as a decimal number without
// trailing zeros ("125000", "125000.5", "125000.25"), with thousands
// separators when commas is set.
func appendCents(b []byte, cents int64, commas bool) []byte {
	if cents < 0 {
		b = append(b, '-')
		cents = -cents
	}
	b = appendGrouped(b, cents/100, commas)
	switch c := cents % 100; {
	case c == 0:
	case c%10 == 0:
		b = append(b, '.', byte('0'+c/10))
	default:
		b = append(b, '.', byte('0'+c/10), byte('0'+c%10))
	}
	return b
}

// appendGrouped appends a non-negative integer, with thousands separators
// when commas is set.
func appendGrouped(b []byte, n int64, commas bool) []byte {
	if !commas {
		return strconv.AppendInt(b, n, 10)
	}
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], n, 10)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return b
}
