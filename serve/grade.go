package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
)

// POST /v1/grade grades rollouts by the registered verifiers. The body is
// one rollout object, a JSON array of them, or JSON Lines
// (Content-Type: application/x-ndjson), with the fields of SPEC 3. The
// response is JSON Lines, one line per rollout in request order:
// {"rewards": <its rewards row>, "checks": [<its check rows>]}, the rows
// as `gavel grade --format jsonl` writes them, with source_file "request".
//
// Arrays and JSON Lines are streamed: batches of rows are read, graded by
// parallel goroutines and written in order while the body is still being
// read, so memory does not grow with the request.

// streamBatch is the number of rows graded together in a stream.
const streamBatch = 256

// defaultKeep are the metadata columns kept when present, as in grade.
var defaultKeep = []string{"model", "run_id", "sample"}

var ndjsonTypes = map[string]bool{
	"application/x-ndjson": true, "application/ndjson": true, "application/jsonl": true,
	"application/x-jsonlines": true, "application/jsonlines": true, "application/x-jsonl": true,
}

// gradeReq is one /v1/grade request's state.
type gradeReq struct {
	s     *Server
	set   *verifierSet
	w     http.ResponseWriter
	rc    *http.ResponseController
	st    *reqState
	start time.Time
	keep  []string // nil: probe the first rollout
	enc   *columnar.RowJSON
	wrote bool
}

func (s *Server) handleGrade(w http.ResponseWriter, r *http.Request, st *reqState) {
	set := s.set.Load()
	if set == nil {
		writeError(w, http.StatusServiceUnavailable, "no verifiers loaded yet", "retry when /readyz answers 200")
		return
	}
	g := &gradeReq{s: s, set: set, w: w, rc: http.NewResponseController(w), st: st, start: time.Now()}
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
				g.keep = append(g.keep, name)
			}
		}
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ndjsonTypes[ct] {
		g.jsonLines(r)
		return
	}
	body := readerPool.Get().(*bufio.Reader)
	body.Reset(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
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
		g.array(body)
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("request body: want a JSON object, a JSON array of objects or JSON Lines, found %q at byte 0", first),
			`one rollout {"task_id": ...}, an array [{...}, ...], or JSON Lines with Content-Type: application/x-ndjson`)
	}
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
	switch {
	case errors.As(err, &mbe):
		g.fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit), "raise --max-body, or send JSON Lines (Content-Type: application/x-ndjson; the limit is then per line)")
	case isTimeout(err):
		g.fail(http.StatusServiceUnavailable, "request body not received within the request timeout"+where, "send faster, or raise --request-timeout")
	default:
		g.fail(http.StatusBadRequest, "request body"+where+": "+err.Error(), "")
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

// object grades a body of one rollout.
func (g *gradeReq) object(body *bufio.Reader) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := bytes.NewBuffer((*bp)[:0])
	if _, err := buf.ReadFrom(body); err != nil {
		g.readFailed(err, "")
		return
	}
	line := bytes.TrimSpace(buf.Bytes())
	var doc jsonview.Doc
	if _, err := doc.Parse(line); err != nil {
		var se *jsonview.SyntaxError
		if errors.As(err, &se) {
			g.fail(http.StatusBadRequest, fmt.Sprintf("request body: invalid JSON at byte %d: %s", se.Offset, se.Msg), "")
		} else {
			g.fail(http.StatusBadRequest, "request body: "+err.Error(), "")
		}
		return
	}
	b := &columnar.Batch{JSONLines: true, Rows: []columnar.Row{{Line: line}}}
	g.setKeep(b)
	out, _ := g.grade(b, nil)
	*bp = buf.Bytes()[:0]
	if time.Since(g.start) > g.s.cfg.RequestTimeout {
		g.fail(http.StatusServiceUnavailable, fmt.Sprintf("request took longer than %s", g.s.cfg.RequestTimeout), "raise --request-timeout")
		return
	}
	g.w.Header().Set("Content-Type", "application/x-ndjson")
	g.w.Write(out)
}

// setKeep chooses the kept columns when the request did not: those of
// model, run_id and sample that the first rollout of b that is a JSON
// object has, as grade probes the first object line of a file.
func (g *gradeReq) setKeep(b *columnar.Batch) {
	if g.keep == nil {
		g.keep = []string{}
		var doc jsonview.Doc
		for i := range b.Rows {
			root, err := doc.Parse(b.Rows[i].Line)
			if err != nil || root.Kind() != jsonview.Object {
				continue
			}
			for _, k := range defaultKeep {
				if root.Get(k).Exists() {
					g.keep = append(g.keep, k)
				}
			}
			break
		}
	}
	g.enc = columnar.NewRowJSON(g.keep)
}

// statusCounts counts graded rollouts by status.
type statusCounts map[string]int

// grade grades b and appends its response lines to out.
func (g *gradeReq) grade(b *columnar.Batch, out []byte) ([]byte, statusCounts) {
	counts := statusCounts{}
	g.set.grader.Grade(b, g.keep, func(rw *columnar.RewardRow, checks []columnar.CheckRow) error {
		counts[rw.Status]++
		out = append(out, `{"rewards":`...)
		out = g.enc.AppendReward(out, rw)
		out = append(out, `,"checks":[`...)
		for i := range checks {
			if i > 0 {
				out = append(out, ',')
			}
			out = g.enc.AppendCheck(out, &checks[i])
		}
		out = append(out, "]}\n"...)
		return nil
	})
	for st, n := range counts {
		g.s.metrics.rollouts.WithLabelValues(st).Add(float64(n))
		g.st.rollouts += n
	}
	return out, counts
}

// deadlineReader extends the connection's read deadline before each read,
// so that a stream's timeout applies to each piece of it, not the whole.
type deadlineReader struct {
	r       io.Reader
	rc      *http.ResponseController
	timeout time.Duration
	n       int64 // bytes read
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	d.rc.SetReadDeadline(time.Now().Add(d.timeout))
	n, err := d.r.Read(p)
	d.n += int64(n)
	return n, err
}

// jsonLines grades a JSON Lines body; the body size limit applies to each
// line.
func (g *gradeReq) jsonLines(r *http.Request) {
	name := SourceFile
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity":
	case "gzip":
		name += ".gz"
	case "zstd":
		name += ".zst"
	default:
		g.fail(http.StatusUnsupportedMediaType, "unsupported Content-Encoding "+r.Header.Get("Content-Encoding"), "gzip, zstd or none")
		return
	}
	body := &deadlineReader{r: r.Body, rc: g.rc, timeout: g.s.cfg.RequestTimeout}
	rd, err := columnar.NewJSONLReader(name, body, columnar.Options{Fields: gymFields, MaxLineBytes: int(min(g.s.cfg.MaxBody, 1<<30))})
	if err != nil {
		g.readFailed(err, "")
		return
	}
	defer rd.Close()
	g.stream(func() (*columnar.Batch, error) { return rd.Next(streamBatch) })
}

// arrayReader reads the elements of a JSON array as rows.
type arrayReader struct {
	dec   *json.Decoder
	body  *deadlineReader
	index int64
	done  bool
}

func (a *arrayReader) next() (*columnar.Batch, error) {
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
		var raw json.RawMessage
		if err := a.dec.Decode(&raw); err != nil {
			return nil, a.err(err)
		}
		b.Rows = append(b.Rows, columnar.Row{Index: a.index, Line: raw})
		a.index++
	}
	if len(b.Rows) == 0 {
		return nil, io.EOF
	}
	return b, nil
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
	dr := &deadlineReader{r: body, rc: g.rc, timeout: g.s.cfg.RequestTimeout}
	dec := json.NewDecoder(dr)
	if _, err := dec.Token(); err != nil {
		g.readFailed(err, "")
		return
	}
	a := &arrayReader{dec: dec, body: dr}
	g.stream(a.next)
}

// graded is one graded batch's response lines.
type graded struct {
	buf *[]byte
}

// stream reads batches with next, grades them on parallel goroutines and
// writes their lines in order. At most GOMAXPROCS+2 batches are in memory:
// the one being read, those being graded, the one being written.
func (g *gradeReq) stream(next func() (*columnar.Batch, error)) {
	first, err := next()
	if errors.Is(err, io.EOF) {
		g.w.Header().Set("Content-Type", "application/x-ndjson")
		g.w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		g.readFailed(err, "")
		return
	}
	g.setKeep(first)
	workers := runtime.GOMAXPROCS(0)
	ctx, cancel := context.WithCancel(context.Background())
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
				return
			}
			wg.Add(1)
			go func(b *columnar.Batch) {
				defer wg.Done()
				bp := bufPool.Get().(*[]byte)
				*bp, _ = g.grade(b, (*bp)[:0])
				b.Release()
				f <- graded{buf: bp}
			}(b)
			var err error
			b, err = next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = err
				}
				return
			}
		}
	}()
	var writeErr error
	for f := range futures {
		res := <-f
		if writeErr == nil {
			if !g.wrote {
				// Lines are written while the body is still being read.
				g.rc.EnableFullDuplex()
				g.w.Header().Set("Content-Type", "application/x-ndjson")
				g.wrote = true
			}
			g.rc.SetWriteDeadline(time.Now().Add(g.s.cfg.RequestTimeout))
			if _, writeErr = g.w.Write(*res.buf); writeErr == nil {
				writeErr = g.rc.Flush()
			}
			if writeErr != nil {
				cancel()
				g.rc.SetReadDeadline(time.Now()) // unblock the reader
			}
		}
		*res.buf = (*res.buf)[:0]
		bufPool.Put(res.buf)
	}
	wg.Wait()
	if readErr != nil && writeErr == nil {
		g.readFailed(readErr, fmt.Sprintf(" after %d rollouts", g.st.rollouts))
	}
}
