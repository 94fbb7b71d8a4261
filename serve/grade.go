package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/pipeline"
)

// POST /v1/grade grades rollouts by the registered verifiers. The body is
// one rollout object, a JSON array of them, or JSON Lines
// (Content-Type: application/x-ndjson), with the input fields of
// docs/grading.md, "Input" (task_id, rollout_id, the states, output, log,
// metadata). The response is JSON Lines, one line per rollout in request
// order:
// {"rewards": <its rewards row>, "checks": [<its check rows>]}, the rows
// as `gavel grade --format jsonl` writes them, with source_file "request";
// when some rubric check gets more than one judgement (several judges or
// samples), also "judgements": [<its rows of the judgements table>].
//
// Arrays and JSON Lines are streamed: batches of rows are read, graded by
// parallel goroutines and written in order while the body is still being
// read, so memory does not grow with the request.

// streamBatch is the number of rows graded together in a stream.
const streamBatch = 256

// defaultKeep are the metadata columns kept when present, as in grade.
var defaultKeep = []string{"model", "run_id", "sample"}

// gradeReq is one /v1/grade request's state. It is reused from request to
// request (gradeReqs), with its documents and buffers.
type gradeReq struct {
	s     *Server
	set   *verifierSet
	w     http.ResponseWriter
	rc    *http.ResponseController // streams only
	st    *reqState
	ctx   context.Context // the request's
	keep  []string        // nil: probe the first rollout
	enc   *columnar.RowJSON
	wrote bool
	// encoding is the Content-Encoding of a JSON Lines body ("" when
	// none).
	encoding string

	// The single-object path's reusable state.
	doc   jsonview.Doc
	body  []byte
	body0 chargedReader
	raw   rawBody // the request's body, as the connection gives it
	// cut says a stream set the connection's read deadline to now, to
	// end a read of its body in progress.
	cut   bool
	rows  [1]columnar.Row
	batch columnar.Batch
}

// maxPooledBody is the largest body buffer kept for the next request.
const maxPooledBody = 1 << 20

var gradeReqs = sync.Pool{New: func() any { return new(gradeReq) }}

func (s *Server) handleGrade(w http.ResponseWriter, r *http.Request, st *reqState) {
	set := s.set.Load()
	if set == nil {
		writeError(w, http.StatusServiceUnavailable, "no verifiers loaded yet", "retry when /readyz answers 200")
		return
	}
	g := gradeReqs.Get().(*gradeReq)
	defer func() {
		if cap(g.body) > maxPooledBody || g.doc.Footprint() > maxPooledBody {
			*g = gradeReq{} // do not keep a large body's memory
		} else {
			g.doc.Reset()
			*g = gradeReq{doc: g.doc, body: g.body[:0]}
		}
		gradeReqs.Put(g)
	}()
	g.s, g.set, g.w, g.st, g.ctx = s, set, w, st, r.Context()
	if s.cfg.Judge != nil {
		// The judge's waits end at the deadline too.
		ctx, cancel := context.WithDeadline(g.ctx, st.acct.deadline)
		defer cancel()
		g.ctx = ctx
	}
	if r.URL.RawQuery != "" {
		if k, ok := r.URL.Query()["keep"]; ok {
			g.keep = []string{}
			for _, part := range k {
				for _, name := range strings.Split(part, ",") {
					if name = strings.TrimSpace(name); name == "" {
						continue
					}
					if gymFields.Is(name) {
						writeError(w, http.StatusBadRequest, fmt.Sprintf("keep %s: %s is a rollout field, not metadata", name, name), "?keep=model,run_id")
						return
					}
					if name == columnar.ColumnInputHash {
						writeError(w, http.StatusBadRequest, fmt.Sprintf("keep %s: %s is a rewards column (the hash of each rollout's input), not metadata", name, name), "?keep=model,run_id")
						return
					}
					g.keep = append(g.keep, name)
				}
			}
		}
	}
	if isJSONLines(r.Header.Get("Content-Type")) {
		g.rc = http.NewResponseController(w)
		g.jsonLines(r)
		return
	}
	g.raw = rawBody{ReadCloser: r.Body}
	g.body0 = chargedReader{r: http.MaxBytesReader(w, &g.raw, s.cfg.MaxBody), acct: &st.acct}
	var err error
	if g.body, err = st.acct.reserveLength(r.ContentLength, s.cfg.MaxBody, g.body); err != nil {
		g.readFailed(err, "")
		return
	}
	body := readerPool.Get().(*bufio.Reader)
	body.Reset(&g.body0)
	defer func() {
		body.Reset(nil)
		readerPool.Put(body)
	}()
	first, err := firstByte(body)
	if err != nil {
		g.readFailed(err, "")
		return
	}
	switch first {
	case '{':
		g.object(body)
	case '[':
		g.rc = http.NewResponseController(w)
		g.array(body)
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("request body: want a JSON object, a JSON array of objects or JSON Lines, found %q at byte 0", first),
			`one rollout {"task_id": ...}, an array [{...}, ...], or JSON Lines with Content-Type: application/x-ndjson`)
	}
}

// isJSONLines reports whether a request's body is JSON Lines, as its
// Content-Type says.
func isJSONLines(ctype string) bool {
	format, _ := columnar.Resolve(columnar.Source{HTTP: true, ContentType: ctype})
	return format == columnar.InputJSONL
}

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// firstByte returns the first byte that is not white space, unread.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF {
				return 0, errors.New("empty request body")
			}
			return 0, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c, br.UnreadByte()
	}
}

// readFailed answers a request whose body could not be read.
func (g *gradeReq) readFailed(err error, where string) {
	var mbe *http.MaxBytesError
	if !time.Now().Before(g.deadline()) {
		// Past the deadline, whatever failed first (a read cut by the
		// connection's deadline cancels the request's context).
		err = context.DeadlineExceeded
	}
	switch {
	case errors.As(err, &mbe):
		g.fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit), "raise --max-body, or send JSON Lines (Content-Type: application/x-ndjson; the limit is then per line)")
	case errors.Is(err, errMemory):
		if !g.wrote {
			g.w.Header().Set("Retry-After", "1")
		}
		g.fail(http.StatusServiceUnavailable, "server busy: the memory for requests is in use by others"+where, "retry after a second (the rest of the stream), or raise --max-memory")
	case isTimeout(err), errors.Is(err, context.DeadlineExceeded):
		g.fail(http.StatusServiceUnavailable, fmt.Sprintf("request took longer than %s (the request timeout)", g.s.cfg.RequestTimeout)+where, "send faster or less at once, or raise --request-timeout")
	case errors.Is(err, context.Canceled):
		// The client has gone: nobody reads the answer.
		g.fail(http.StatusServiceUnavailable, "request cancelled"+where, "the client closed the connection")
	case g.encoding != "":
		g.fail(http.StatusBadRequest, "request body"+where+": "+err.Error(), "send the body compressed with "+g.encoding+", as Content-Encoding says, or send it uncompressed without Content-Encoding")
	default:
		g.fail(http.StatusBadRequest, "request body"+where+": "+err.Error(), bodyHint)
	}
}

// fail answers with an error: a status and a JSON error before the
// response began, else a last line {"error", "hint"} in the stream.
func (g *gradeReq) fail(code int, msg, hint string) {
	if !g.wrote {
		writeError(g.w, code, msg, hint)
		return
	}
	b, _ := json.Marshal(errorBody{Error: msg, Hint: hint})
	g.w.Write(append(b, '\n'))
}

// object grades a body of one rollout. The body is parsed once here (a
// malformed one is a 400, and the kept columns are probed from it) and
// graded as the one row of a batch, the batch JSON Lines would give.
func (g *gradeReq) object(body io.Reader) {
	var err error
	if g.body, err = readAll(body, g.body[:0]); err != nil {
		g.readFailed(err, "")
		return
	}
	line := bytes.TrimSpace(g.body)
	g.doc.LimitIndex(indexPerByte, indexFloor)
	root, err := g.doc.Parse(line)
	if err != nil {
		var se *jsonview.SyntaxError
		if errors.As(err, &se) {
			g.fail(http.StatusBadRequest, fmt.Sprintf("request body: invalid JSON at byte %d: %s", se.Offset, se.Msg), bodyHint)
		} else {
			g.fail(http.StatusBadRequest, "request body: "+err.Error(), bodyHint)
		}
		return
	}
	if g.keep == nil {
		g.keep, g.enc = g.encoders().probe(root)
	} else {
		g.enc = g.encoders().get(g.keep)
	}
	// Grading indexes the rollout again: a large one's first index goes
	// before.
	g.doc.Shrink(maxPooledBody)
	g.rows[0] = columnar.Row{Line: line}
	g.batch = columnar.Batch{JSONLines: true, Rows: g.rows[:]}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	out, err := g.grade(g.ctx, &g.batch, (*bp)[:0])
	*bp = out[:0]
	if err != nil {
		g.gradeFailed(err)
		return
	}
	if time.Now().After(g.deadline()) {
		g.readFailed(context.DeadlineExceeded, "")
		return
	}
	g.w.Header()["Content-Type"] = ndjsonHeader
	g.w.Write(out)
}

var ndjsonHeader = []string{"application/x-ndjson"}

// readAll appends what r holds to buf.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// gradeFailed answers a request whose rollouts could not be graded: too
// many verifier calls are stuck.
func (g *gradeReq) gradeFailed(err error) {
	var se *pipeline.StuckError
	if errors.As(err, &se) {
		g.fail(http.StatusServiceUnavailable, err.Error(), "a verifier never returns: fix it, or restart the server")
		return
	}
	var pe *pipeline.ProbeError
	if errors.As(err, &pe) {
		hint := "check the judge's URL, model and API key (gavel serve --judge-*)"
		if strings.HasPrefix(pe.Error(), "remote verifier ") {
			hint = "check the remote verifier's service: its url and token_env in the spec, and that it is running"
		}
		g.fail(http.StatusBadGateway, err.Error(), hint)
		return
	}
	g.fail(http.StatusInternalServerError, err.Error(), bugHint(g.w))
}

// setKeep chooses the kept columns when the request did not: those of
// model, run_id and sample that the first rollout of b that is a JSON
// object has, as grade probes the first object line of a file.
func (g *gradeReq) setKeep(b *columnar.Batch) {
	if g.keep != nil {
		g.enc = g.encoders().get(g.keep)
		return
	}
	var doc jsonview.Doc
	doc.LimitIndex(indexPerByte, indexFloor)
	for i := range b.Rows {
		root, err := doc.Parse(b.Rows[i].Line)
		if err != nil || root.Kind() != jsonview.Object {
			continue
		}
		g.keep, g.enc = g.encoders().probe(root)
		return
	}
	g.keep, g.enc = g.encoders().probe(jsonview.Value{})
}

// encoders keeps the row encoders of the kept column sets seen, which are
// safe for concurrent use: building one per request costs more than
// grading a small rollout.
type encoders struct {
	flags  bool                      // the columns of a run with flags (pipeline.RowGrader.Flags)
	turns  bool                      // the columns of a run that scores turns (pipeline.RowGrader.Turns)
	probed [1 << 3]*columnar.RowJSON // by the bits of defaultKeep present
	keeps  [1 << 3][]string
	named  sync.Map // strings.Join(keep, "\x00"): *columnar.RowJSON
	count  atomic.Int32
}

// encoders returns the encoders of the request's verifier set: with the
// columns of a run with flags when a verifier of the set is flagged, and
// those of a run that scores turns when one scores turns.
func (g *gradeReq) encoders() *encoders {
	i := 0
	if g.set.grader.Flags() {
		i |= 1
	}
	if g.set.grader.Turns() {
		i |= 2
	}
	return g.s.encoders[i]
}

// maxNamedEncoders bounds the ?keep= sets kept.
const maxNamedEncoders = 256

func newEncoders(flags, turns bool) *encoders {
	e := &encoders{flags: flags, turns: turns}
	for mask := range e.probed {
		keep := []string{}
		for i, k := range defaultKeep {
			if mask&(1<<i) != 0 {
				keep = append(keep, k)
			}
		}
		e.keeps[mask], e.probed[mask] = keep, columnar.NewRowJSON(keep, e.flags, e.turns)
	}
	return e
}

// probe returns the default kept columns that root has, and their encoder.
func (e *encoders) probe(root jsonview.Value) ([]string, *columnar.RowJSON) {
	mask := 0
	if root.Kind() == jsonview.Object {
		for i, k := range defaultKeep {
			if root.Get(k).Exists() {
				mask |= 1 << i
			}
		}
	}
	return e.keeps[mask], e.probed[mask]
}

// get returns the encoder of a ?keep= set.
func (e *encoders) get(keep []string) *columnar.RowJSON {
	key := strings.Join(keep, "\x00")
	if enc, ok := e.named.Load(key); ok {
		return enc.(*columnar.RowJSON)
	}
	enc := columnar.NewRowJSON(keep, e.flags, e.turns)
	if e.count.Load() < maxNamedEncoders {
		if _, loaded := e.named.LoadOrStore(key, enc); !loaded {
			e.count.Add(1)
		}
	}
	return enc
}

// lineSink appends the response line of each graded rollout; its each is
// bound once, so that a request allocates no closure.
type lineSink struct {
	enc    *columnar.RowJSON
	out    []byte
	counts []statusCount
	each   func(rw *columnar.RewardRow, checks []columnar.CheckRow, judgements []columnar.JudgementRow) error
}

// statusCount counts graded rollouts of a status.
type statusCount struct {
	status string
	n      int
}

var lineSinks = sync.Pool{New: func() any {
	k := &lineSink{}
	k.each = k.add
	return k
}}

func (k *lineSink) add(rw *columnar.RewardRow, checks []columnar.CheckRow, judgements []columnar.JudgementRow) error {
	k.count(rw.Status)
	out := append(k.out, `{"rewards":`...)
	out = k.enc.AppendReward(out, rw)
	out = append(out, `,"checks":[`...)
	for i := range checks {
		if i > 0 {
			out = append(out, ',')
		}
		out = k.enc.AppendCheck(out, &checks[i])
	}
	out = append(out, ']')
	if len(judgements) > 0 {
		out = append(out, `,"judgements":[`...)
		for i := range judgements {
			if i > 0 {
				out = append(out, ',')
			}
			out = k.enc.AppendJudgement(out, &judgements[i])
		}
		out = append(out, ']')
	}
	k.out = append(out, "}\n"...)
	return nil
}

func (k *lineSink) count(status string) {
	for i := range k.counts {
		if k.counts[i].status == status {
			k.counts[i].n++
			return
		}
	}
	k.counts = append(k.counts, statusCount{status, 1})
}

// grade grades b and appends its response lines to out. It may run on
// several goroutines at once for one request.
func (g *gradeReq) grade(ctx context.Context, b *columnar.Batch, out []byte) ([]byte, error) {
	k := lineSinks.Get().(*lineSink)
	k.enc, k.out, k.counts = g.enc, out, k.counts[:0]
	err := g.set.grader.GradeJudged(ctx, b, g.keep, k.each)
	for _, c := range k.counts {
		g.s.metrics.graded(c.status, c.n)
		atomic.AddInt64(&g.st.rollouts, int64(c.n))
	}
	out = k.out
	k.enc, k.out = nil, nil
	lineSinks.Put(k)
	return out, err
}

// streamWorkers bounds the batches of one stream graded at once.
const streamWorkers = 8

// streamBatchBytes ends a stream's batch once its lines hold this many
// bytes: a stream holds a few batches, whatever its lines' lengths.
const streamBatchBytes = 1 << 20

// zstdMaxWindow bounds the window a zstd-compressed request may ask the
// decoder to keep (the zstd tool's levels 1 to 19 use at most 8 MiB).
const zstdMaxWindow = 8 << 20

// jsonLines grades a JSON Lines body; the body size limit applies to each
// line.
func (g *gradeReq) jsonLines(r *http.Request) {
	name := SourceFile
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity":
	case "gzip":
		name, g.encoding = name+".gz", "gzip"
	case "zstd":
		name, g.encoding = name+".zst", "zstd"
	default:
		g.fail(http.StatusUnsupportedMediaType, "unsupported Content-Encoding "+r.Header.Get("Content-Encoding"), "gzip, zstd or none")
		return
	}
	g.rc.SetReadDeadline(g.deadline())
	charged := &chargedReader{acct: &g.st.acct}
	g.raw = rawBody{ReadCloser: r.Body}
	// The bytes of lines too long to keep are given back as they are
	// read, not with their batch.
	var discarded int64
	rd, err := columnar.NewJSONLReader(name, &g.raw, columnar.Options{Fields: gymFields, MaxLineBytes: int(min(g.s.cfg.MaxBody, 1<<30)),
		MaxBatchBytes: streamBatchBytes, ZstdMaxWindow: zstdMaxWindow,
		Decoded:   func(r io.Reader) io.Reader { charged.r = r; return charged },
		Discarded: func(n int) { discarded += int64(n); g.st.acct.drop(int64(n)) }})
	if err != nil {
		g.readFailed(err, "")
		return
	}
	defer rd.Close()
	g.stream(func() (*columnar.Batch, int64, error) {
		before, dropped := rd.Offset(), discarded
		b, err := rd.Next(streamBatch)
		return b, rd.Offset() - before - (discarded - dropped), err
	})
}

// rawBody is a request's body, recording that it reached its end.
type rawBody struct {
	io.ReadCloser
	eof atomic.Bool
}

func (b *rawBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

// unblockReader ends a read of the body in progress, when the stream ends
// early. A body read to its end is not waited on (its reader stops at its
// next read, the context being done): cutting the connection's read then
// would cut net/http's own.
func (g *gradeReq) unblockReader() {
	if g.raw.eof.Load() {
		return
	}
	g.cut = true
	g.rc.SetReadDeadline(time.Now())
}

// deadline is when the request must end.
func (g *gradeReq) deadline() time.Time { return g.st.acct.deadline }

// arrayReader reads the elements of a JSON array as rows.
type arrayReader struct {
	dec   *json.Decoder
	body  *chargedReader
	index int64
	done  bool
	off   int64 // the decoder's input offset after the last batch
	// scanned counts the bytes the decoder's scanner read for the
	// elements decoded so far: the offset of a syntax error in an element
	// counts those, not the bracket, commas and spaces between elements
	// (see elementErr).
	scanned int64
}

// next returns the next batch, and the bytes of the body it consumed.
func (a *arrayReader) next() (*columnar.Batch, int64, error) {
	b, err := a.batch()
	off := a.dec.InputOffset()
	n := off - a.off
	a.off = off
	return b, n, err
}

func (a *arrayReader) batch() (*columnar.Batch, error) {
	if a.done {
		return nil, io.EOF
	}
	b := &columnar.Batch{JSONLines: true}
	for len(b.Rows) < streamBatch {
		if !a.dec.More() {
			if _, err := a.dec.Token(); err != nil { // the closing bracket
				return nil, a.err(err)
			}
			if _, err := a.dec.Token(); err != io.EOF {
				return nil, fmt.Errorf("invalid JSON at byte %d: data after the array", a.dec.InputOffset())
			}
			a.done = true
			break
		}
		// More left the decoder at the comma before the element (or at
		// the first element); Decode steps past the comma and scans the
		// element from there.
		start := a.dec.InputOffset()
		if a.index > 0 {
			start++
		}
		var raw json.RawMessage
		if err := a.dec.Decode(&raw); err != nil {
			return nil, a.elementErr(err, start)
		}
		a.scanned += a.dec.InputOffset() - start
		row := columnar.Row{Index: a.index, Line: raw}
		if what := notObject(raw); what != "" {
			// Named here: the row's decoder would speak of a line.
			row.Err = fmt.Errorf("element %d of the array: not a JSON object but %s", a.index+1, what)
		}
		b.Rows = append(b.Rows, row)
		a.index++
	}
	if len(b.Rows) == 0 {
		return nil, io.EOF
	}
	return b, nil
}

// notObject says what a JSON value is when it is not an object ("" when
// it is), from its first byte.
func notObject(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return ""
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// elementErr is err for an element whose scan began at byte start of the
// body: the decoder's syntax error counts the bytes its scanner read, over
// every element, which a.scanned counts up to this one.
func (a *arrayReader) elementErr(err error, start int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %s", start+se.Offset-a.scanned-1, se.Error())
	}
	return a.err(err)
}

func (a *arrayReader) err(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("invalid JSON at byte %d: unexpected end of the array", a.body.n+1)
	}
	return err
}

// array grades a JSON array body.
func (g *gradeReq) array(body io.Reader) {
	g.rc.SetReadDeadline(g.deadline())
	dec := json.NewDecoder(body)
	if _, err := dec.Token(); err != nil {
		g.readFailed(err, "")
		return
	}
	a := &arrayReader{dec: dec, body: &g.body0}
	g.stream(a.next)
}

// graded is one graded batch's response lines, or why it was not graded,
// and the body bytes it held.
type graded struct {
	buf   *[]byte
	err   error
	bytes int64
}

// stream reads batches with next, grades them on parallel goroutines and
// writes their lines in order. At most workers+2 batches are in memory:
// the one being read, those being graded, the one being written; and each
// is charged to the request's memory (next reads through a
// chargedReader) until it is written. Reading, grading and writing stop
// at the request's deadline, or when its client goes.
func (g *gradeReq) stream(next func() (*columnar.Batch, int64, error)) {
	acct := &g.st.acct
	first, n, err := next()
	if errors.Is(err, io.EOF) {
		g.w.Header()["Content-Type"] = ndjsonHeader
		g.w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		g.readFailed(err, "")
		return
	}
	g.setKeep(first)
	workers := min(runtime.GOMAXPROCS(0), streamWorkers)
	ctx, cancel := context.WithDeadline(g.ctx, g.deadline())
	defer cancel()
	futures := make(chan chan graded, workers)
	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(futures)
		b := first
		for {
			f := make(chan graded, 1)
			select {
			case futures <- f:
			case <-ctx.Done():
				b.Release()
				acct.drop(n)
				return
			}
			acct.batch(+1)
			wg.Add(1)
			go func(b *columnar.Batch, n int64) {
				defer wg.Done()
				bp := bufPool.Get().(*[]byte)
				var err error
				*bp, err = g.grade(ctx, b, (*bp)[:0])
				b.Release()
				f <- graded{buf: bp, err: err, bytes: n}
			}(b, n)
			if err := ctx.Err(); err != nil {
				readErr = context.Cause(ctx)
				return
			}
			var err error
			b, n, err = next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = err
				}
				return
			}
		}
	}()
	var writeErr, gradeErr error
	for f := range futures {
		res := <-f
		if res.err != nil && gradeErr == nil && writeErr == nil {
			gradeErr = res.err
			cancel()
			g.unblockReader()
		}
		if writeErr == nil && gradeErr == nil {
			if !g.wrote {
				// Lines are written while the body is still being read.
				g.rc.EnableFullDuplex()
				g.w.Header()["Content-Type"] = ndjsonHeader
				g.wrote = true
			}
			g.rc.SetWriteDeadline(g.deadline())
			if _, writeErr = g.w.Write(*res.buf); writeErr == nil {
				writeErr = g.rc.Flush()
			}
			if writeErr != nil {
				cancel()
				g.unblockReader()
			}
		}
		*res.buf = (*res.buf)[:0]
		bufPool.Put(res.buf)
		acct.drop(res.bytes)
		acct.batch(-1)
	}
	wg.Wait()
	if g.cut && g.raw.eof.Load() {
		// The body ended as its read was cut: the connection's read past
		// the body (net/http's, which watches for the client going) may
		// have been cut instead, and net/http would then cancel the
		// context of every later request on the connection. It is not
		// used again.
		if !g.wrote {
			g.w.Header().Set("Connection", "close")
		} else {
			defer panic(http.ErrAbortHandler)
		}
	}
	if gradeErr != nil && writeErr == nil {
		if err := acct.done(); err != nil {
			g.readFailed(err, fmt.Sprintf(" after %d rollouts", g.st.rollouts))
			return
		}
		g.gradeFailed(gradeErr)
		return
	}
	if readErr != nil && writeErr == nil {
		if err := acct.done(); err != nil {
			readErr = err
		}
		g.readFailed(readErr, fmt.Sprintf(" after %d rollouts", g.st.rollouts))
	}
}
