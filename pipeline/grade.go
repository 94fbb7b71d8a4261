package pipeline

import (
	"bytes"
	"fmt"
	"sync"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/harness"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/health"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// plan is what every worker shares, read-only, for a run.
type plan struct {
	fields   columnar.FieldNames // defaults applied
	bindings *verifiers.Bindings
	tasks    inputs.Tasks
	keep     []string
	// initials indexes each distinct initial-state text once, shared
	// read-only by all workers (nil: no cache).
	initials *jsonview.Cache
	// skips is what JSON Lines lines are indexed without
	// (columnar.StateSkips).
	skips jsonview.Skips
	// judging judges rubric checks (nil: they stay pending).
	judging *judging
	// remoting asks remote verifiers (nil: none is bound).
	remoting *remoting
	// askers are judging and remoting when set, in the order the writer
	// drives them (setAskers).
	askers []asker
	// fileTasks indexes the task rows harnesses' logs carry
	// (columnar.Row.TaskRow), by task id, each the first seen; used
	// when there is no tasks table (nil: none).
	fileTasks *sync.Map
	// set is the constant metadata of every row.
	set []inputs.Constant
	// reuse is the earlier run whose results are reused (nil: none).
	reuse *reuseSource
	// flags is set when some verifier may add flags (Verifier.Flagged)
	// or health is: the run writes the checks' kind column and the
	// rewards' flags.
	flags bool
	// health computes the health flags of every rollout (Config.Health).
	health bool
	// turns is set when some verifier scores turns (Verifier.Turns): the
	// rollouts' turns are read, and the run writes the rewards'
	// turn_rewards and turns and the checks' turn.
	turns bool
}

// planConfig is what every entry that reads rollouts (a run, a row grader,
// a row decoder, Scan) says about decoding them; newPlan makes the plan of
// it, the one place a plan is built.
type planConfig struct {
	fields columnar.FieldNames
	set    []inputs.Constant
	// tasksFile is the tasks table to load, or tasks the table loaded.
	tasksFile   string
	tasks       inputs.Tasks
	structNulls columnar.StructNulls
	// bind binds verifiers to their tasks (even none); without it rows
	// get no verifier.
	bind      bool
	verifiers []*verifiers.Verifier
	// fileTasks indexes the task rows of harnesses' logs (runs and Scan;
	// a row grader and a row decoder see single rows).
	fileTasks bool
}

// newPlan returns the plan of pc: the field names with their defaults,
// the constants checked, the tasks loaded, the verifiers bound and the
// cache of initial states. The caller adds what only it needs (kept
// columns, judging, remoting, reuse).
func newPlan(pc planConfig) (*plan, error) {
	p := &plan{fields: pc.fields.WithDefaults(), tasks: pc.tasks, initials: jsonview.NewCache(initialCacheBytes)}
	for _, v := range pc.verifiers {
		p.flags = p.flags || v.Flagged
		p.turns = p.turns || v.Turns
	}
	var err error
	if pc.bind {
		if p.bindings, err = Bind(pc.verifiers); err != nil {
			return nil, err
		}
	}
	if p.set, err = inputs.CheckSet(pc.set, &p.fields); err != nil {
		return nil, err
	}
	if pc.tasksFile != "" {
		if p.tasks, err = inputs.LoadTasksWith(pc.tasksFile, columnar.Options{Fields: pc.fields, StructNulls: pc.structNulls}); err != nil {
			return nil, &inputs.ConfigError{Field: "TasksFile", Msg: err.Error()}
		}
	}
	if pc.fileTasks {
		p.fileTasks = new(sync.Map)
	}
	p.skips = columnar.StateSkips(&p.fields, p.initials)
	return p, nil
}

// fileTask is a task row of a harness's log and its index.
type fileTask struct {
	text []byte
	task *inputs.Task
}

// task returns the task of the row: from the tasks table when there is
// one, else the row of the task its harness's log carries (nil: none).
func (p *plan) task(id string, row []byte) *inputs.Task {
	if p.tasks != nil || len(row) == 0 || p.fileTasks == nil {
		return p.tasks[id]
	}
	if v, ok := p.fileTasks.Load(id); ok {
		if ft := v.(*fileTask); bytes.Equal(ft.text, row) {
			return ft.task
		}
	}
	// The rows harnesses carry name their task in task_id, whatever the
	// field map.
	fields := columnar.FieldNames{}.WithDefaults()
	t, _, err := inputs.NewTask(row, &fields)
	if err != nil {
		return nil
	}
	v, _ := p.fileTasks.LoadOrStore(id, &fileTask{text: row, task: t})
	if ft := v.(*fileTask); bytes.Equal(ft.text, row) {
		return ft.task
	}
	return t
}

// initialCacheBytes bounds the initial-state texts kept indexed; their
// indexes take about as much again.
const initialCacheBytes = 8 << 20

// grader grades rows one at a time. Each worker owns one; its documents
// and buffers are reused from row to row, so grading a row allocates only
// the strings that go into the results.
type grader struct {
	plan *plan

	line, final, initial, log, meta jsonview.Doc
	metaBuf                         []byte
	setMeta                         jsonview.Doc // metadata with plan.set
	setBuf                          []byte
	checks                          verifiers.Checks
	rollout                         verifiers.Rollout
	hasher                          inputs.InputHasher
	rescoreBuf                      []verifiers.Check
	remoteBody                      []byte            // a remote verifier's request body
	remoteChecks                    []verifiers.Check // a remote verifier's checks
	turnsDoc                        jsonview.Doc      // the turns of a row's messages
	turnsBuf                        []byte
	turnBuf                         []verifiers.Check // scratch of turn rewards
	keepIdx                         []int             // per batch: index of each keep column in MetaNames, or -1
	// prev are the earlier run's rows of the batch, aligned with its rows
	// (see reuseSource; nil: none).
	prev []*prevRow
	// reused counts the rows of the batch whose results were reused,
	// undecoded those of them taken without decoding the row.
	reused, undecoded int

	// row is the index in its batch of the row being graded; timedOut is
	// the index of a row whose verifier ran past the timeout in an
	// abandoned worker (-1: none). watch and pool, when set, time each
	// verifier call (see pool).
	row      int
	timedOut int
	watch    *worker
	pool     *pool
}

// results are one batch's result rows.
type batchResults struct {
	rewards []columnar.RewardRow
	checks  []columnar.CheckRow
	// asks are the rubric checks left to the writer's judge, in order;
	// subs their judgements.
	asks []ask
	subs []sub
	// judgements are the rows of the judgements table (runs where some
	// check gets more than one judgement).
	judgements []columnar.JudgementRow
	// jends holds, in runs that write judgements, the end of each reward
	// row's judgements in judgements (for RowGrader, which has no budget
	// that would drop some).
	jends []int
	// rasks are the rollouts of remote verifiers left to the writer.
	rasks []rask
	// reused counts the rows whose results were reused (Config.Reuse).
	reused int
}

// resultsFree keeps batches' results for reuse, at most max of them (the
// batches in flight), with their storage: a sync.Pool would drop them at
// every collection, and those of runs with many checks are megabytes.
type resultsFree struct {
	mu   sync.Mutex
	list []*batchResults
	max  int
}

// Get returns results kept, or new ones.
func (f *resultsFree) Get() *batchResults {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.list); n > 0 {
		r := f.list[n-1]
		f.list = f.list[:n-1]
		return r
	}
	return new(batchResults)
}

// Put keeps r for reuse, unless max are kept already.
func (f *resultsFree) Put(r *batchResults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.list) < f.max {
		f.list = append(f.list, r)
	}
}

func (r *batchResults) reset() {
	clear(r.rewards)
	r.rewards = r.rewards[:0]
	clear(r.checks)
	r.checks = r.checks[:0]
	clear(r.asks)
	r.asks = r.asks[:0]
	clear(r.subs)
	r.subs = r.subs[:0]
	clear(r.judgements)
	r.judgements = r.judgements[:0]
	r.jends = r.jends[:0]
	clear(r.rasks)
	r.rasks = r.rasks[:0]
	r.reused = 0
}

// gradeBatch appends the results of the rows of b, from row from on, to
// out.
func (g *grader) gradeBatch(u *inputs.Unit, b *columnar.Batch, out *batchResults, from int) {
	if !b.JSONLines {
		g.keepIdx = g.keepIdx[:0]
		for _, k := range g.plan.keep {
			idx := -1
			for i, name := range b.MetaNames {
				if name == k {
					idx = i
					break
				}
			}
			g.keepIdx = append(g.keepIdx, idx)
		}
	}
	g.reused, g.undecoded = 0, 0
	for i := from; i < len(b.Rows); i++ {
		g.row = i
		g.gradeRow(u, b, &b.Rows[i], out)
	}
	out.reused += g.reused
	if rs := g.plan.reuse; rs != nil {
		rs.reused.Add(int64(g.reused))
		rs.undecoded.Add(int64(g.undecoded))
		rs.graded.Add(int64(len(b.Rows) - from - g.reused))
	}
}

func (g *grader) gradeRow(u *inputs.Unit, b *columnar.Batch, row *columnar.Row, out *batchResults) {
	rw := columnar.RewardRow{SourceFile: u.Path, SourceRow: row.Index}
	if len(g.plan.keep) > 0 {
		rw.Keep = make([]columnar.NullString, len(g.plan.keep))
	}
	var prev *prevRow
	if g.row < len(g.prev) {
		prev = g.prev[g.row]
	}
	var (
		v       *verifiers.Verifier
		verdict verifiers.Verdict
		checks  []verifiers.Check
	)
	reused := g.takeUnchanged(u, b, row, prev, &rw, out)
	if !reused {
		v, verdict, checks, reused = g.grade(u, b, row, &rw, prev, out)
	}
	if reused {
		g.reused++
		out.rewards = append(out.rewards, rw)
		g.endJudgements(out)
		return
	}
	results.SetVerdict(&rw, verdict)
	from := len(out.checks)
	for i := range checks {
		c := &checks[i]
		cr := columnar.CheckRow{
			RolloutID:  rw.RolloutID,
			TaskID:     rw.TaskID,
			VerifierID: rw.VerifierID,
			CheckIndex: int32(i),
			CheckID:    c.ID,
			Label:      c.Label,
			Required:   c.Required,
			Status:     c.StatusText(),
			Detail:     c.Detail,
			Turn:       int32(c.Turn),
			TurnValid:  c.OnTurn,
		}
		if c.Flag {
			cr.Kind = columnar.KindFlag
			rw.FlagRows++
			if c.Raised() {
				rw.Flags = append(rw.Flags, c.ID)
			}
		}
		if c.Actual != "" {
			cr.Actual = columnar.Str(c.Actual)
		}
		if c.Expected != "" {
			cr.Expected = columnar.Str(c.Expected)
		}
		if c.Scored { // a remote verifier's scores; a judge's are set below
			cr.Score, cr.ScoreValid = c.Score, true
		}
		out.checks = append(out.checks, cr)
	}
	if g.plan.health && verdict.ErrorKind != verifiers.KindInput {
		rw.Flags = health.Flags(&g.rollout, rw.Flags)
	}
	if g.plan.turns && verdict.ErrorKind != verifiers.KindInput && g.rollout.Turns.Kind() == jsonview.Array {
		rw.Turns, rw.TurnsValid = int32(g.rollout.Turns.Len()), true
	}
	turns := v != nil && v.Turns && g.plan.turns
	if turns {
		g.turnBuf = results.SetTurnRewards(&rw, checks, v.TurnReward, g.turnBuf)
	}
	if g.plan.judging != nil && v != nil && v.Judged && len(checks) > 0 {
		if g.judgeRow(v, checks, out, len(out.rewards), from) {
			g.rescoreBuf = results.Score(&rw, out.checks[from:], v.Reward, g.rescoreBuf)
			results.SetFlags(&rw, out.checks[from:])
			if turns {
				g.turnBuf = results.SetTurnRewards(&rw, g.rescoreBuf, v.TurnReward, g.turnBuf)
			}
		}
	}
	out.rewards = append(out.rewards, rw)
	g.endJudgements(out)
}

// endJudgements records where the judgements of the row just appended end.
func (g *grader) endJudgements(out *batchResults) {
	if js := g.plan.judging; js != nil && js.multi {
		out.jends = append(out.jends, len(out.judgements))
	}
}

// grade decodes one row, runs its verifier and returns the verifier (nil
// when none ran), the verdict and the checks to write (none on an input or
// verifier error). It fills the ids, the verifier id and the kept columns
// of rw. When the earlier run's row prev may be reused (grader.take),
// reused is true, rw has its verdict and out its check rows, and the
// verifier is not run.
func (g *grader) grade(u *inputs.Unit, b *columnar.Batch, row *columnar.Row, rw *columnar.RewardRow, prev *prevRow, out *batchResults) (_ *verifiers.Verifier, _ verifiers.Verdict, _ []verifiers.Check, reused bool) {
	v, inputErr := g.decode(u, b, row, rw)
	if inputErr != "" {
		return nil, verifiers.InputError(inputErr), nil, false
	}
	if v == nil {
		return nil, verifiers.NoVerifier(rw.TaskID), nil, false
	}
	if prev != nil && g.take(prev, v, rw, out) {
		return v, verifiers.Verdict{}, nil, true
	}
	if v.Remote != nil && g.plan.remoting != nil {
		verdict, checks := g.askRow(v, out, len(out.rewards), len(out.checks))
		return v, verdict, checks, false
	}
	verdict := g.verify(v, &g.rollout, &g.checks)
	return v, verdict, g.checks.List(), false
}

// decode decodes one row into g.rollout and returns the verifier bound to
// its task (nil when none), or why the row is not a valid input. It fills
// the ids, the verifier id and the kept columns of rw.
func (g *grader) decode(u *inputs.Unit, b *columnar.Batch, row *columnar.Row, rw *columnar.RewardRow) (v *verifiers.Verifier, inputErr string) {
	r := &g.rollout
	*r = verifiers.Rollout{}
	fields := &g.plan.fields

	if b.JSONLines {
		// The states are looked up in the cache of initial states (a
		// final state equal to its initial state is found there too), and
		// the metadata is the line's other members.
		var err error
		g.metaBuf, err = columnar.DecodeLineCached(row, fields, g.plan.skips, &g.line, &g.initial, g.metaBuf[:0])
		if err != nil {
			rw.RolloutID = inputs.FallbackID(u, row)
			if row.Err != nil {
				// A harness's element that could not be mapped: its ids,
				// when it has them.
				if id, p := inputs.IDText(row.ID); p == "" && len(id) > 0 {
					rw.RolloutID = string(id)
				}
				if task, p := inputs.IDText(row.Task); p == "" {
					rw.TaskID = string(task)
				}
			}
			// The constants are every row's, this one's too.
			for i, k := range g.plan.keep {
				for _, c := range g.plan.set {
					if c.Key == k {
						rw.Keep[i] = columnar.Str(c.Value)
					}
				}
			}
			return nil, err.Error()
		}
		if r.Meta, err = g.meta.Parse(g.metaBuf); err != nil { // cannot happen: members of a valid line
			panic(fmt.Sprintf("metadata object: %v", err))
		}
		g.applySet()
		for i, k := range g.plan.keep {
			rw.Keep[i] = keepValue(r.Meta.Get(k))
		}
	} else {
		g.buildMeta(b, row)
		g.applySet()
		for i, idx := range g.keepIdx {
			if idx >= 0 {
				rw.Keep[i] = keepCell(row.Meta[idx])
			}
		}
		for i, k := range g.plan.keep {
			if g.isSet(k) {
				rw.Keep[i] = keepValue(g.rollout.Meta.Get(k))
			}
		}
	}

	id, idErr := inputs.IDText(row.ID)
	switch {
	case idErr != "":
		rw.RolloutID = inputs.FallbackID(u, row)
	case row.ID.Kind == columnar.CellNull:
		rw.RolloutID = inputs.FallbackID(u, row)
	default:
		rw.RolloutID = string(id)
	}
	task, taskErr := inputs.IDText(row.Task)
	rw.TaskID = string(task)
	v = g.plan.bindings.Lookup(rw.TaskID)
	if v != nil {
		rw.VerifierID = columnar.Str(v.ID)
	}
	switch {
	case row.Err != nil:
		return nil, row.Err.Error()
	case idErr != "":
		return nil, fields.ID + ": " + idErr
	case taskErr != "":
		return nil, fields.Task + ": " + taskErr
	case len(task) == 0:
		return nil, fields.Task + ": missing, null or empty"
	}

	var err error
	// The initial state repeats across the rollouts of a task: the cache
	// indexes each distinct text once.
	var initErr error
	cached := false // r.Initial is held by the cache
	switch {
	case g.plan.initials != nil && (row.Initial.Kind == columnar.CellString || row.Initial.Kind == columnar.CellJSON && !b.JSONLines):
		if row.Initial.Stable {
			r.Initial, cached, initErr = g.plan.initials.ParseStable(&g.initial, row.Initial.Data)
		} else {
			r.Initial, cached, initErr = g.plan.initials.Parse(&g.initial, row.Initial.Data)
		}
		if initErr != nil {
			initErr = fmt.Errorf("%s: %w", fields.Initial, initErr)
		}
	case row.Initial.Kind == columnar.CellJSON && b.JSONLines:
		// Found in the cache, or indexed on its own, by DecodeLineCached:
		// the shared index of a repeated text lets the verifiers' memos
		// per world (verifiers.WorldMemo) hit.
		r.Initial = row.Initial.V
		// Its index lies in the line, or else in the cache.
		cached = g.plan.initials != nil && !inputs.Within(r.Initial.Raw(), row.Line)
	default:
		r.Initial, initErr = g.state(row.Initial, &g.initial, fields.Initial, b.JSONLines)
	}
	own := r.Initial // the row's own initial state, before the task's stands in
	t := g.plan.task(rw.TaskID, row.TaskRow)
	if t != nil && initErr == nil && r.Initial.IsNull() {
		r.Initial = t.Initial
	}
	// A final state byte-identical to the initial state's text (an agent
	// that changed nothing) shares its index, in tasks mode too.
	finalText := row.Final.Kind == columnar.CellString || row.Final.Kind == columnar.CellJSON && !b.JSONLines
	if initErr == nil && finalText && r.Initial.Exists() && bytes.Equal(row.Final.Data, r.Initial.Raw()) {
		r.Final = r.Initial
	} else if r.Final, err = g.state(row.Final, &g.final, fields.Final, b.JSONLines); err != nil {
		return nil, err.Error()
	}
	if initErr != nil {
		return nil, initErr.Error()
	}
	if r.Log, err = g.state(row.Log, &g.log, fields.Log, b.JSONLines); err != nil {
		return nil, err.Error()
	}
	if k := r.Log.Kind(); k != jsonview.Missing && k != jsonview.Null && k != jsonview.Array {
		return nil, fields.Log + ": not a JSON array"
	}
	switch row.Output.Kind {
	case columnar.CellNull:
	case columnar.CellString:
		r.Output = unsafe.String(unsafe.SliceData(row.Output.Data), len(row.Output.Data))
	default:
		return nil, fields.Output + ": not a string (" + row.Output.Kind.String() + ")"
	}
	if t != nil {
		r.Task = t.Fields
	}
	if g.plan.turns {
		if msg := g.turns(b); msg != "" {
			return nil, msg
		}
	}
	if r.Final.Kind() == jsonview.Null {
		r.Final = jsonview.Value{}
	}
	if r.Initial.Kind() == jsonview.Null {
		r.Initial = jsonview.Value{}
	}
	r.ID, r.TaskID = rw.RolloutID, rw.TaskID
	rw.InputHash, rw.InputHashValid = g.hasher.Sum(r, own, cached, t), true
	if g.plan.flags {
		rw.OutputHash, rw.OutputHashValid = xxhash.Sum64String(r.Output), true
	}
	return v, ""
}

// turns reads the agent's turns of the decoded rollout into g.rollout:
// a mapped rollout's (a harness's log, a chat dataset) are its metadata's
// member turns; those of a row of gavel's are read from its messages
// (the column --map messages= names), when it has them. It returns why
// the row is not a valid input, or "".
func (g *grader) turns(b *columnar.Batch) string {
	r := &g.rollout
	if b.Mapped {
		r.Turns = r.Meta.Get(columnar.FieldTurns)
		return ""
	}
	msgs := r.Meta.Get(g.plan.fields.Messages)
	switch msgs.Kind() {
	case jsonview.Missing, jsonview.Null:
		return ""
	case jsonview.String:
		// A chat held as JSON text in a string column.
		s, _ := msgs.Str()
		v, err := g.turnsDoc.Parse(s)
		if err != nil || v.Kind() != jsonview.Array {
			return g.plan.fields.Messages + ": not a JSON array of messages"
		}
		msgs = v
	case jsonview.Array:
	default:
		return g.plan.fields.Messages + ": not a JSON array of messages"
	}
	g.turnsBuf = harness.ChatTurns(g.turnsBuf[:0], msgs)
	v, err := g.turnsDoc.Parse(g.turnsBuf)
	if err != nil { // cannot happen: ChatTurns writes valid JSON
		panic(fmt.Sprintf("turns: %v", err))
	}
	r.Turns = v
	return ""
}

// verify runs the verifier on the current row, timed by the watchdog when
// there is one, and returns its verdict; c holds the checks. The row a
// stuck worker abandoned gets a timeout error without running the verifier
// again.
func (g *grader) verify(v *verifiers.Verifier, r *verifiers.Rollout, c *verifiers.Checks) verifiers.Verdict {
	if g.row == g.timedOut {
		c.Reset()
		return verifiers.Score(nil, fmt.Errorf("verifier %s timed out after %s", v.ID, g.pool.timeout))
	}
	if g.watch == nil {
		return verifiers.Run(v, r, c)
	}
	seq := g.watch.begin(g.pool)
	verdict := verifiers.Run(v, r, c)
	g.watch.end(g.pool, seq)
	return verdict
}

// state returns the view of a state or log cell: JSON text in a string,
// or the text of a nested column's value, is indexed with doc; a JSON
// Lines value is already indexed in its line.
func (g *grader) state(c columnar.Cell, doc *jsonview.Doc, field string, jsonLines bool) (jsonview.Value, error) {
	switch {
	case c.Kind == columnar.CellNull:
		return jsonview.Value{}, nil
	case c.Kind == columnar.CellString, c.Kind == columnar.CellJSON && !jsonLines:
		v, err := doc.Parse(c.Data)
		if err != nil {
			return jsonview.Value{}, fmt.Errorf("%s: %w", field, err)
		}
		return v, nil
	}
	if jsonLines {
		return c.V, nil
	}
	return jsonview.Value{}, fmt.Errorf("%s: column holds a %s, want JSON text in a string or binary column", field, c.Kind)
}

// buildMeta indexes a columnar row's metadata cells as one object, in a
// buffer reused from row to row.
func (g *grader) buildMeta(b *columnar.Batch, row *columnar.Row) {
	buf := append(g.metaBuf[:0], '{')
	n := 0
	for i, name := range b.MetaNames {
		c := row.Meta[i]
		if c.Kind == columnar.CellNull {
			continue
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		n++
		buf = jsonview.AppendJSONString(buf, name)
		buf = append(buf, ':')
		if c.Kind == columnar.CellString {
			buf = jsonview.AppendJSONString(buf, c.Data)
		} else {
			buf = append(buf, c.Data...)
		}
	}
	buf = append(buf, '}')
	g.metaBuf = buf
	v, err := g.meta.Parse(buf)
	if err != nil { // cannot happen: the text is built above
		panic(fmt.Sprintf("metadata object: %v", err))
	}
	g.rollout.Meta = v
}

// applySet puts the plan's constants into the rollout's metadata, first,
// in place of the members of their keys.
func (g *grader) applySet() {
	if len(g.plan.set) == 0 {
		return
	}
	buf := append(g.setBuf[:0], '{')
	for i, c := range g.plan.set {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonview.AppendJSONString(buf, c.Key)
		buf = append(buf, ':')
		buf = jsonview.AppendJSONString(buf, c.Value)
	}
	for m := g.rollout.Meta.First(); m.Exists(); m = m.Next() {
		if k := m.Key(); g.isSet(unsafe.String(unsafe.SliceData(k), len(k))) { // no copy: read at once
			continue
		}
		buf = append(buf, ',')
		buf = append(buf, m.RawMember()...)
	}
	buf = append(buf, '}')
	g.setBuf = buf
	v, err := g.setMeta.Parse(buf)
	if err != nil { // cannot happen: the text is built above
		panic(fmt.Sprintf("metadata object: %v", err))
	}
	g.rollout.Meta = v
}

// isSet reports whether key is one of the plan's constants.
func (g *grader) isSet(key string) bool {
	for _, c := range g.plan.set {
		if c.Key == key {
			return true
		}
	}
	return false
}

// keepValue returns a kept column's value: a string as it is, null or
// missing as null, anything else as its JSON text.
func keepValue(v jsonview.Value) columnar.NullString {
	switch v.Kind() {
	case jsonview.Missing, jsonview.Null:
		return columnar.NullString{}
	case jsonview.String:
		s, _ := v.Str()
		return columnar.Str(string(s))
	}
	return columnar.Str(string(v.Raw()))
}

func keepCell(c columnar.Cell) columnar.NullString {
	if c.Kind == columnar.CellNull {
		return columnar.NullString{}
	}
	return columnar.Str(string(c.Data))
}
