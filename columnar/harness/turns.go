package harness

import (
	"cmp"
	"slices"
	"strconv"
	"sync"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// SetTurns sets whether the rollouts read next have the member "turns",
// the agent's turns (see turnWriter), as their last member. It is off by
// default.
func (r *Reader) SetTurns(on bool) {
	r.turns.on = on
	r.turns.log = &r.log
}

// turnWriter builds a rollout's turns: the agent's messages (or steps, or
// groups of output items), in order, each with the tool calls it made and
// the results those calls got.
//
//	{"index":0,"text":"...","tool_calls":[{"name":N,"kwargs":{...},"id":I}],
//	 "tool_results":[{"eventType":"tool_result","name":N,"content":"...","id":I}],
//	 "message_index":2}
//
// index counts the agent's turns from 0; text is the text of the turn's
// message (appendText), "" when it has none; a tool call is the log's
// tool_call event without eventType (and without a format's extra
// member, tau2's requestor); a tool result is the log's tool_result event
// as it is; message_index is the index, in the format's list of messages
// (or steps, or output items), of the turn's first one.
//
// A result goes to the turn whose call has its id; a result without an
// id, or with an id no call made so far, to the latest agent turn before
// it; a result of a call made outside the agent's turns (a tau2 user
// tool), and a result before the first agent turn, to none.
//
// The format's loop writes the log and tells the turnWriter where it is:
// agent or open when an agent message starts, other when a message that
// is not the agent's does, call and result after each event the log
// writes. Calls and results stay in the log's buffer, which the turns
// copy from when the rollout is done (appendTo): a result can belong to
// any earlier turn, so no turn is complete before the end.
type turnWriter struct {
	on  bool
	log *logWriter

	text    []byte // the turns' texts, bodies of JSON strings, one after another
	turns   []turnRec
	calls   []span       // the turns' tool calls, in log.b, turn after turn
	results []turnResult // the results that belong to a turn, in log.b
	cur     int          // the open turn, which calls are made in, or -1
	last    int          // the latest agent turn, or -1
	wrote   bool         // the open turn has a text
}

type turnRec struct {
	textStart, textEnd int // in text
	callStart, callEnd int // in calls
	msg                int // message_index
}

type span struct{ start, end int }

type turnResult struct {
	turn       int
	start, end int // in log.b
}

// reset starts a rollout's turns; log must have been reset.
func (t *turnWriter) reset() {
	if !t.on {
		return
	}
	t.text = t.text[:0]
	t.turns = t.turns[:0]
	t.calls = t.calls[:0]
	t.results = t.results[:0]
	t.cur, t.last = -1, -1
	t.wrote = false
	t.log.turn = -1
}

// agent starts a turn at message msg whose text is content's.
func (t *turnWriter) agent(msg int, content jsonview.Value) {
	if !t.on {
		return
	}
	t.start(msg)
	t.addText(content)
}

// open starts a turn at item msg unless one is open (NeMo Gym's output
// items of one turn).
func (t *turnWriter) open(msg int) {
	if t.on && t.cur < 0 {
		t.start(msg)
	}
}

func (t *turnWriter) start(msg int) {
	t.cur = len(t.turns)
	t.last = t.cur
	t.log.turn = t.cur
	t.wrote = false
	t.turns = append(t.turns, turnRec{textStart: len(t.text), textEnd: len(t.text),
		callStart: len(t.calls), callEnd: len(t.calls), msg: msg})
}

// addText adds the text of content to the open turn's, after a newline
// when it has one.
func (t *turnWriter) addText(content jsonview.Value) {
	if !t.on || t.cur < 0 {
		return
	}
	sep := ""
	if t.wrote {
		sep = `\n`
	}
	var wrote bool
	if t.text, wrote = appendText(t.text, content, sep); wrote {
		t.wrote = true
	}
	t.turns[t.cur].textEnd = len(t.text)
}

// other says that a message that is not the agent's starts: the calls
// after it are made outside the agent's turns.
func (t *turnWriter) other() {
	if !t.on {
		return
	}
	t.cur = -1
	t.log.turn = -1
}

// call takes the tool call the log has just written into the open turn.
func (t *turnWriter) call() {
	if !t.on || t.cur < 0 {
		return
	}
	t.calls = append(t.calls, span{t.log.callStart, t.log.callEnd})
	t.turns[t.cur].callEnd = len(t.calls)
}

// result takes the tool result the log has just written, of the call
// id, into its turn.
func (t *turnWriter) result(id jsonview.Value) {
	if !t.on {
		return
	}
	turn := t.last
	if k, ok := body(id); ok && len(k) > 0 {
		if c, ok := t.log.calls[string(k)]; ok {
			turn = c.turn
		}
	}
	if turn < 0 {
		return
	}
	t.results = append(t.results, turnResult{turn, t.log.evStart, t.log.evEnd})
}

// appendTo appends the JSON array of the turns to b.
func (t *turnWriter) appendTo(b []byte) []byte {
	lb := t.log.b
	// Results come in order of their turns but for a late result of an
	// earlier turn: sort them, keeping each turn's in order.
	if !slices.IsSortedFunc(t.results, cmpTurn) {
		slices.SortStableFunc(t.results, cmpTurn)
	}
	res := t.results
	b = append(b, '[')
	for i, tr := range t.turns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"text":"`...)
		b = append(b, t.text[tr.textStart:tr.textEnd]...)
		b = append(b, `","tool_calls":[`...)
		for j, c := range t.calls[tr.callStart:tr.callEnd] {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			b = append(b, lb[c.start:c.end]...)
			b = append(b, '}')
		}
		b = append(b, `],"tool_results":[`...)
		for j := 0; len(res) > 0 && res[0].turn == i; j++ {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, lb[res[0].start:res[0].end]...)
			res = res[1:]
		}
		b = append(b, `],"message_index":`...)
		b = strconv.AppendInt(b, int64(tr.msg), 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

func cmpTurn(a, b turnResult) int { return cmp.Compare(a.turn, b.turn) }

// appendTurns appends the member turns when turns are on.
func (r *Reader) appendTurns(o *object) {
	if r.turns.on {
		o.key("turns")
		o.b = r.turns.appendTo(o.b)
	}
}

// chatTurns is the state of ChatTurns and ResponseTurns, pooled.
type chatTurns struct {
	log   logWriter
	turns turnWriter
}

var chatTurnsPool = sync.Pool{New: func() any {
	c := &chatTurns{}
	c.turns.on = true
	c.turns.log = &c.log
	return c
}}

// ChatTurns appends to dst the JSON array of the agent's turns of msgs,
// OpenAI chat messages, as the messages format writes a rollout's member
// "turns": one turn per assistant message. msgs that is not an array
// gives []. It is safe for concurrent use.
func ChatTurns(dst []byte, msgs jsonview.Value) []byte {
	return pooledTurns(dst, msgs, false)
}

// ResponseTurns appends to dst the JSON array of the agent's turns of a
// Responses API response (its output items), as the nemo-gym format
// writes a rollout's member "turns": a run of consecutive agent items is
// one turn (responseEvents). A response whose output is not an array
// gives []. It is safe for concurrent use.
func ResponseTurns(dst []byte, resp jsonview.Value) []byte {
	return pooledTurns(dst, resp.Get("output"), true)
}

// pooledTurns appends to dst the turns of list, chat messages or (when
// response) a response's output items, with a pooled state.
func pooledTurns(dst []byte, list jsonview.Value, response bool) []byte {
	c := chatTurnsPool.Get().(*chatTurns)
	if response {
		responseEvents(&c.log, &c.turns, list)
	} else {
		chatEvents(&c.log, &c.turns, list)
	}
	dst = c.turns.appendTo(dst)
	// Keep nothing of the input in the pool.
	c.log.reset()
	c.log.argDoc.Reset()
	chatTurnsPool.Put(c)
	return dst
}
