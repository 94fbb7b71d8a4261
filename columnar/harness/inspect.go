package harness

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// zipZstd is the zip compression method of Zstandard, which Inspect
// writes (older logs are deflated).
const zipZstd = 93

// evalHeader is what an Inspect log says of every sample: the eval's id,
// task and model, as bodies of JSON strings.
type evalHeader struct {
	evalID, task, model, runID []byte
	seen                       bool
}

// read takes the header from an EvalSpec object (the log's "eval").
func (h *evalHeader) read(spec jsonview.Value) {
	str := func(k string) []byte {
		b, _ := body(spec.Get(k))
		return bytes.Clone(b)
	}
	h.evalID, h.task, h.model, h.runID = str("eval_id"), str("task"), str("model"), str("run_id")
	if len(h.evalID) == 0 {
		h.evalID = h.runID
	}
	h.seen = true
}

// evalArchive reads the samples of an .eval archive, one member at a time,
// in the archive's order; a sample written twice is read once, where it
// was last written.
type evalArchive struct {
	name    string
	hdr     evalHeader
	samples []member
	i       int
	data    []byte
	m       memberReader
	ra      io.ReaderAt
	size    int64
	zr      *zip.Reader // archive/zip's directory, once needed
}

// NewEvalReader reads an Inspect .eval archive of size bytes; name is used
// in messages. The header (header.json, or _journal/start.json for a run
// that did not finish) is read here; a file that is not a complete zip
// archive, or has neither header, is an error.
func NewEvalReader(name string, ra io.ReaderAt, size int64) (*Reader, error) {
	a := &evalArchive{name: name, m: memberReader{ra: ra}, ra: ra, size: size}
	entries, ok := scanDir(ra, size)
	if !ok {
		zr, err := a.zip()
		if err != nil {
			return nil, fmt.Errorf("read %s: no zip directory at the end (byte %d): truncated or not an .eval archive: %w", name, size, err)
		}
		entries = make([]member, len(zr.File))
		for i, f := range zr.File {
			entries[i] = member{name: f.Name, idx: i}
		}
	}
	last := make(map[string]int, len(entries))
	for i, e := range entries {
		last[e.name] = i
	}
	var header, start *member
	for i := range entries {
		e := &entries[i]
		if last[e.name] != i {
			continue
		}
		switch {
		case e.name == "header.json":
			header = e
		case e.name == "_journal/start.json":
			start = e
		case strings.HasPrefix(e.name, "samples/") && strings.HasSuffix(e.name, ".json"):
			a.samples = append(a.samples, *e)
		}
	}
	r := &Reader{name: name, format: Inspect, src: a}
	if header == nil {
		header = start
	}
	if header == nil {
		return nil, fmt.Errorf("read %s: no header.json or _journal/start.json", name)
	}
	var err error
	if a.data, err = a.read(header, a.data); err != nil {
		return nil, fmt.Errorf("read %s: %s: %w", name, header.name, err)
	}
	root, err := r.doc.Parse(a.data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %s: %w", name, header.name, err)
	}
	if root.Get("eval").Kind() != jsonview.Object {
		return nil, fmt.Errorf("read %s: %s has no eval object", name, header.name)
	}
	a.hdr.read(root.Get("eval"))
	return r, nil
}

// zip returns archive/zip's reading of the directory, read on first use.
func (a *evalArchive) zip() (*zip.Reader, error) {
	if a.zr != nil {
		return a.zr, nil
	}
	zr, err := zip.NewReader(a.ra, a.size)
	if err != nil {
		return nil, err
	}
	zr.RegisterDecompressor(zip.Deflate, pooledInflater)
	zr.RegisterDecompressor(zipZstd, zstd.ZipDecompressor(zstd.WithDecoderMaxWindow(128<<20)))
	a.zr = zr
	return zr, nil
}

// read reads member e whole into buf: in place when it can (when the
// directory was read in place, and the member is read in place), and
// otherwise as archive/zip reads it, with its errors.
func (a *evalArchive) read(e *member, buf []byte) ([]byte, error) {
	if a.zr == nil {
		if body, ok := a.m.bodyOffset(e); ok {
			if b, ok := a.m.fast(e, body, buf); ok {
				return b, nil
			}
		}
	}
	zr, err := a.zip()
	if err != nil {
		return buf, err
	}
	if e.idx >= len(zr.File) || zr.File[e.idx].Name != e.name {
		return buf, errors.New("zip directory read two ways")
	}
	return a.m.read(zr.File[e.idx], buf)
}

// readAheadBytes is the window of an .eval file read at once.
const readAheadBytes = 1 << 20

// readAhead is an io.ReaderAt over a file read mostly in order, as an
// .eval archive's members are: reads are served from a window of the file
// read at once, so that each member's header and compressed bytes cost no
// system call of their own (a small sample cost three). Reads larger than
// half the window go to the file. It is not safe for concurrent use.
type readAhead struct {
	ra  io.ReaderAt
	buf []byte
	off int64 // file offset of buf[0]
}

func newReadAhead(ra io.ReaderAt, window int) *readAhead {
	return &readAhead{ra: ra, buf: make([]byte, 0, window)}
}

func (r *readAhead) ReadAt(p []byte, off int64) (int, error) {
	if len(p) > cap(r.buf)/2 {
		return r.ra.ReadAt(p, off)
	}
	if err := r.fill(off, len(p)); err != nil {
		return 0, err
	}
	n := copy(p, r.buf[off-r.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fill reads the window at off unless it holds the n bytes there.
func (r *readAhead) fill(off int64, n int) error {
	if off >= r.off && off+int64(n) <= r.off+int64(len(r.buf)) {
		return nil
	}
	m, err := r.ra.ReadAt(r.buf[:cap(r.buf)], off)
	if err != nil && err != io.EOF {
		r.buf = r.buf[:0]
		return err
	}
	r.buf, r.off = r.buf[:m], off
	return nil
}

// view returns the n bytes at off from the window, without copying them;
// ok is false when n is over half the window or the file ends first. The
// bytes are valid until the next read.
func (r *readAhead) view(off int64, n int) (b []byte, ok bool) {
	if n > cap(r.buf)/2 || r.fill(off, n) != nil || off+int64(n) > r.off+int64(len(r.buf)) {
		return nil, false
	}
	return r.buf[off-r.off : off-r.off+int64(n)], true
}

var inflaters sync.Pool

// inflater is a pooled deflate reader: one per member would allocate
// tens of kilobytes per sample.
type inflater struct{ io.ReadCloser }

func (f *inflater) Close() error {
	err := f.ReadCloser.Close()
	inflaters.Put(f)
	return err
}

func pooledInflater(r io.Reader) io.ReadCloser {
	if f, ok := inflaters.Get().(*inflater); ok {
		if f.ReadCloser.(flate.Resetter).Reset(r, nil) == nil {
			return f
		}
	}
	return &inflater{flate.NewReader(r)}
}

var zstdDecoders sync.Pool

// memberReader reads members of an archive whole. The common case (a
// stored, deflated or Zstandard member that decompresses to its size and
// checksum) is read from the compressed bytes in place, with a
// decompressor reused from member to member; any other case, and every
// error, is left to archive/zip (readMember), so that a member reads and
// fails as archive/zip has it.
type memberReader struct {
	ra    io.ReaderAt
	comp  []byte // compressed bytes not in a read-ahead window
	desc  [16]byte
	local [30]byte
	br    bytes.Reader
	fl    io.ReadCloser
}

// member is what the zip directory says of an archive member.
type member struct {
	name         string
	method       uint16
	flags        uint16
	crc          uint32
	csize, size  uint64
	headerOffset int64 // of its local header
	idx          int   // in the directory
}

// read reads member f whole into buf.
func (m *memberReader) read(f *zip.File, buf []byte) ([]byte, error) {
	body, err := f.DataOffset() // after the member's local header
	if err == nil {
		e := member{name: f.Name, method: f.Method, flags: f.Flags, crc: f.CRC32, csize: f.CompressedSize64, size: f.UncompressedSize64}
		if b, ok := m.fast(&e, body, buf); ok {
			return b, nil
		}
	}
	return readMember(f, buf)
}

// bodyOffset returns the offset of e's compressed bytes, after its local
// header.
func (m *memberReader) bodyOffset(e *member) (int64, bool) {
	h := m.local[:]
	if k, _ := m.ra.ReadAt(h, e.headerOffset); k < len(h) || binary.LittleEndian.Uint32(h) != 0x04034b50 {
		return 0, false
	}
	return e.headerOffset + 30 + int64(binary.LittleEndian.Uint16(h[26:])) + int64(binary.LittleEndian.Uint16(h[28:])), true
}

// fast is read for the common case, of member f whose compressed bytes
// are at body; ok is false for any other.
func (m *memberReader) fast(f *member, body int64, buf []byte) (b []byte, ok bool) {
	size, csize := f.size, f.csize
	if size > maxMember || csize > maxMember || strings.HasSuffix(f.name, "/") {
		return buf, false
	}
	var err error
	comp, ok := m.bytesAt(body, int(csize))
	if !ok {
		return buf, false
	}
	n := int(size)
	if cap(buf) < n+1 {
		buf = make([]byte, 0, n+1)
	}
	buf = buf[:n]
	switch f.method {
	case zip.Store:
		if len(comp) != n {
			return buf, false
		}
		copy(buf, comp)
	case zip.Deflate:
		m.br.Reset(comp)
		if m.fl == nil {
			m.fl = flate.NewReader(&m.br)
		} else if m.fl.(flate.Resetter).Reset(&m.br, nil) != nil {
			return buf, false
		}
		if _, err := io.ReadFull(m.fl, buf); err != nil {
			return buf, false
		}
		if k, err := io.ReadFull(m.fl, buf[n:n+1]); k != 0 || err != io.EOF {
			return buf, false
		}
	case zipZstd:
		d, _ := zstdDecoders.Get().(*zstd.Decoder)
		if d == nil {
			if d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(128<<20), zstd.WithDecoderMaxMemory(maxMember)); err != nil {
				return buf, false
			}
		}
		out, err := d.DecodeAll(comp, buf[:0])
		zstdDecoders.Put(d)
		if err != nil || len(out) != n || (n > 0 && &out[0] != &buf[0]) {
			return buf, false
		}
	default:
		return buf, false
	}
	sum := crc32.ChecksumIEEE(buf)
	if f.flags&0x8 != 0 { // a data descriptor follows the body
		k, _ := m.ra.ReadAt(m.desc[:], body+int64(csize))
		d := m.desc[:k]
		if len(d) >= 4 && binary.LittleEndian.Uint32(d) == 0x08074b50 { // its signature
			d = d[4:]
		}
		if len(d) < 12 || binary.LittleEndian.Uint32(d) != f.crc || sum != f.crc {
			return buf, false
		}
	} else if f.crc != 0 && sum != f.crc {
		return buf, false
	}
	return buf, true
}

// bytesAt returns the n bytes at off, in place in a read-ahead window or
// else read into m.comp.
func (m *memberReader) bytesAt(off int64, n int) ([]byte, bool) {
	if r, ok := m.ra.(*readAhead); ok {
		if b, ok := r.view(off, n); ok {
			return b, true
		}
	}
	if cap(m.comp) < n {
		m.comp = make([]byte, n)
	}
	b := m.comp[:n]
	if k, err := m.ra.ReadAt(b, off); k != n && err != nil {
		return nil, false
	}
	return b, true
}

// maxMember bounds the uncompressed size of one archive member.
const maxMember = 1 << 30

// readMember reads a member whole into buf.
func readMember(f *zip.File, buf []byte) ([]byte, error) {
	if f.UncompressedSize64 > maxMember {
		return buf, fmt.Errorf("%d bytes uncompressed, over the limit of %d", f.UncompressedSize64, maxMember)
	}
	rc, err := f.Open()
	if err != nil {
		return buf, err
	}
	defer rc.Close()
	buf = buf[:0]
	if n := int(f.UncompressedSize64); cap(buf) < n+1 {
		buf = make([]byte, 0, n+1)
	}
	w := bytes.NewBuffer(buf)
	_, err = w.ReadFrom(io.LimitReader(rc, maxMember+1))
	buf = w.Bytes()
	if err == nil && len(buf) > maxMember {
		err = errors.New("over the size limit")
	}
	return buf, err
}

func (a *evalArchive) next(r *Reader) (Item, error) {
	if a.i >= len(a.samples) {
		return Item{}, io.EOF
	}
	f := &a.samples[a.i]
	a.i++
	where := sampleWhere(f.name)
	var err error
	a.data, err = a.read(f, a.data)
	if err != nil {
		return Item{Err: fmt.Errorf("%s: %w", f.name, err), Where: where}, nil
	}
	root, err := r.doc.Parse(skipBOMBytes(a.data))
	if err != nil {
		return Item{Err: fmt.Errorf("%s: %w", f.name, err), Where: where}, nil
	}
	return r.inspectSample(&a.hdr, root, where), nil
}

// sampleWhere names the sample of member name in messages.
func sampleWhere(name string) string {
	where := strings.TrimSuffix(strings.TrimPrefix(name, "samples/"), ".json")
	if i := strings.LastIndex(where, "_epoch_"); i >= 0 {
		where = "sample " + where[:i] + " epoch " + where[i+len("_epoch_"):]
	}
	return where
}

func skipBOMBytes(b []byte) []byte {
	return bytes.TrimPrefix(b, bom)
}

// inspectJSON streams the samples of a .json EvalLog. The log's "eval"
// must come before its "samples", as Inspect writes it.
type inspectJSON struct {
	s       *stream
	hdr     evalHeader
	started bool
	inArray bool
	samples bool    // a samples array was found
	keys    keyList // the top-level keys, for a hint
	n       int
}

func (x *inspectJSON) next(r *Reader) (Item, error) {
	s := x.s
	if !x.started {
		x.started = true
		if err := s.delim("log", '{'); err != nil {
			return Item{}, hint(err, Inspect, s, nil)
		}
	}
	for {
		if x.inArray {
			ok, err := s.element("samples")
			if err != nil {
				return Item{}, err
			}
			if ok {
				x.n++
				root, err := r.doc.Parse(s.raw)
				if err != nil {
					return Item{Err: err, Where: fmt.Sprintf("element %d of samples", x.n-1)}, nil
				}
				return r.inspectSample(&x.hdr, root, ""), nil
			}
			x.inArray = false
		}
		key, end, err := s.key("log")
		if err != nil {
			return Item{}, err
		}
		if end {
			if err := s.end(); err != nil {
				return Item{}, hint(err, Inspect, s, x.keys)
			}
			if !x.hdr.seen && !x.samples {
				// Another format's object, read through: say so
				// rather than find nothing.
				if looks, desc := guess(Inspect, s, x.keys); looks != "" {
					return Item{}, &FormatError{Err: fmt.Errorf("read %s: no eval or samples", s.name), Looks: looks, Desc: desc}
				}
			}
			return Item{}, io.EOF
		}
		x.keys.add(key)
		switch key {
		case "eval":
			if err := s.value("eval"); err != nil {
				return Item{}, err
			}
			spec, err := r.doc.Parse(s.raw)
			if err != nil || spec.Kind() != jsonview.Object {
				return Item{}, fmt.Errorf("read %s: eval at byte %d is not an object", s.name, s.offset())
			}
			x.hdr.read(spec)
		case "samples":
			x.samples = true
			if x.inArray, err = s.arrayOrNull("samples"); err != nil {
				return Item{}, err
			}
			if x.inArray && !x.hdr.seen {
				return Item{}, fmt.Errorf("read %s: samples at byte %d come before the eval header", s.name, s.offset())
			}
		default:
			if err := s.value(key); err != nil {
				return Item{}, err
			}
		}
	}
}

// inspectSample maps one EvalSample.
func (r *Reader) inspectSample(h *evalHeader, smp jsonview.Value, where string) Item {
	if smp.Kind() != jsonview.Object {
		return Item{Err: fmt.Errorf("sample is %s, not an object", smp.Kind()), Where: where}
	}
	id, epoch := smp.Get("id"), smp.Get("epoch")
	if where == "" {
		where = "sample"
		if _, ok := appendIDBody(nil, id); ok {
			where = fmt.Sprintf("sample %s epoch %s", bytes.Trim(id.Raw(), `"`), epoch.Raw())
		}
	}
	// ids first: an error row still names its rollout.
	var o object
	o.begin(r.out[:0])
	o.key("rollout_id")
	o.b = append(o.b, '"')
	o.b = append(append(o.b, h.evalID...), '/')
	o.b, _ = appendIDBody(o.b, id)
	o.b = append(o.b, '/')
	o.b, _ = appendIDBody(o.b, epoch)
	o.b = append(o.b, '"')
	o.key("task_id")
	taskStart := len(o.b) + 1
	o.b = append(o.b, '"')
	o.b = append(append(o.b, h.task...), '/')
	o.b, _ = appendIDBody(o.b, id)
	taskEnd := len(o.b)
	o.b = append(o.b, '"')
	if _, ok := appendIDBody(nil, id); !ok {
		r.out = o.end()
		return Item{Rollout: r.out, Err: fmt.Errorf("sample id is %s, not a string or number", id.Kind()), Where: where}
	}
	if epoch.Kind() != jsonview.Number {
		r.out = o.end()
		return Item{Rollout: r.out, Err: fmt.Errorf("sample epoch is %s, not a number", epoch.Kind()), Where: where}
	}

	r.taskRow(o.b[taskStart:taskEnd], func(t *object) {
		for _, k := range []string{"input", "target", "choices", "metadata", "setup"} {
			t.rawIf(k, smp.Get(k))
		}
	})

	if st := smp.Get("store"); !st.IsNull() {
		o.raw("final_state", st)
	}
	o.key("output")
	o.b = append(o.b, '"')
	out := smp.Get("output")
	if c, ok := body(out.Get("completion")); ok && len(c) > 0 {
		o.b = append(o.b, c...)
	} else {
		o.b, _ = appendText(o.b, out.Get("choices").Index(0).Get("message").Get("content"), "")
	}
	o.b = append(o.b, '"')

	r.log.reset()
	r.turns.reset()
	i := 0
	for m := elems(smp.Get("messages")); m.Exists(); m, i = m.Next(), i+1 {
		role := m.Get("role")
		if !role.StrIs("assistant") {
			r.turns.other()
		}
		switch {
		case role.StrIs("assistant"):
			r.turns.agent(i, m.Get("content"))
			for c := elems(m.Get("tool_calls")); c.Exists(); c = c.Next() {
				r.log.call(c.Get("function"), c.Get("id"), c.Get("arguments"), c.Get("parse_error"), jsonview.Value{})
				r.turns.call()
			}
		case role.StrIs("tool"):
			id := m.Get("tool_call_id")
			r.log.result(m.Get("function"), id, m.Get("content"), false, m.Get("error"), jsonview.Value{})
			r.turns.result(id)
		}
	}
	o.key("log")
	o.b = append(o.b, r.log.done()...)

	if len(h.model) > 0 {
		o.key("model")
		o.b = append(append(append(o.b, '"'), h.model...), '"')
	}
	if len(h.runID) > 0 {
		o.key("run_id")
		o.b = append(append(append(o.b, '"'), h.runID...), '"')
	}
	o.raw("epoch", epoch)
	if r, ok := scoreValue(smp.Get("scores").First().Get("value")); ok {
		o.key("recorded_reward")
		o.b = append(o.b, r...)
	}
	o.rawIf("recorded_scores", smp.Get("scores"))
	if e := smp.Get("error"); !e.IsNull() {
		if m := e.Get("message"); m.Exists() {
			e = m
		}
		o.raw("recorded_error", e)
	}
	o.rawIf("termination_reason", smp.Get("limit").Get("type"))
	r.appendTurns(&o)
	r.out = o.end()
	return Item{Rollout: r.out, Where: where, Task: r.task(o.b[taskStart:taskEnd])}
}

// scoreValue returns a score's value as the text of a number, as Inspect's
// value_to_float reads it: a number as it is, true 1 and false 0, the
// letters C (correct) 1, I (incorrect) 0, P (partial) 0.5 and N (no
// answer) 0, yes and no, and a string holding a number. ok is false for
// other values (a list, an object, other text).
func scoreValue(v jsonview.Value) (string, bool) {
	switch v.Kind() {
	case jsonview.Number:
		return string(v.Raw()), true
	case jsonview.True:
		return "1", true
	case jsonview.False:
		return "0", true
	case jsonview.String:
	default:
		return "", false
	}
	b, _ := v.Str()
	s := strings.ToLower(strings.TrimSpace(string(b)))
	switch s {
	case "c", "yes", "true":
		return "1", true
	case "i", "n", "no", "false":
		return "0", true
	case "p":
		return "0.5", true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return "", false
}
