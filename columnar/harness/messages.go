package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// defaultMaxLine bounds one line of the messages format, as gavel bounds
// a JSON Lines line.
const defaultMaxLine = 64 << 20

// messages reads JSON Lines whose lines hold a task_id and OpenAI chat
// messages. Blank lines are skipped and counted.
type messages struct {
	br      *bufio.Reader
	maxLine int
	line    []byte
	n       int   // index of the next line
	off     int64 // byte offset of the next line, after a byte order mark
}

// errLong marks a line over the limit.
var errLong = errors.New("line too long")

// readLine reads one line into m.line, without its end. A line over the
// limit is consumed and reported as errLong.
func (m *messages) readLine() error {
	m.line = m.line[:0]
	long := false
	for {
		frag, err := m.br.ReadSlice('\n')
		m.off += int64(len(frag))
		if !long {
			if len(m.line)+len(frag) > m.maxLine+2 {
				long = true
				m.line = m.line[:0]
			} else {
				m.line = append(m.line, frag...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && (len(frag) > 0 || len(m.line) > 0 || long):
		case err != nil:
			return err
		}
		break
	}
	m.line = bytes.TrimRight(m.line, "\r\n")
	if long || len(m.line) > m.maxLine {
		return errLong
	}
	return nil
}

func (m *messages) next(r *Reader) (Item, error) {
	for {
		start := m.off
		err := m.readLine()
		index := m.n
		m.n++
		where := fmt.Sprintf("line %d", index+1)
		switch {
		case err == errLong:
			return Item{Rollout: r.defaultID(index), Err: fmt.Errorf("line %d is longer than the limit of %d bytes", index+1, m.maxLine), Where: where}, nil
		case err == io.EOF:
			return Item{}, io.EOF
		case err != nil:
			return Item{}, fmt.Errorf("read %s line %d (byte offset %d): %w", r.name, index+1, start, err)
		}
		if len(bytes.TrimSpace(m.line)) == 0 {
			continue
		}
		root, err := r.doc.Parse(m.line)
		if err != nil {
			var se *jsonview.SyntaxError
			if errors.As(err, &se) {
				err = fmt.Errorf("line %d: invalid JSON at byte %d of the line: %s", index+1, se.Offset, se.Msg)
			}
			return Item{Rollout: r.defaultID(index), Err: m.hint(index, err), Where: where}, nil
		}
		if root.Kind() != jsonview.Object {
			return Item{Rollout: r.defaultID(index), Err: m.hint(index, fmt.Errorf("line %d: not a JSON object", index+1)), Where: where}, nil
		}
		if index == 0 && !root.Get("messages").Exists() && !root.Get("output").Exists() {
			// A first line with nothing of a chat that is another
			// format's (NeMo Gym rollouts, ATIF trajectories) fails
			// the file: its rows would be graded with no output.
			if looks, desc := otherFormat(Messages, root); looks != "" {
				return Item{}, &FormatError{Err: fmt.Errorf("read %s: line 1: no messages or output", r.name), Looks: looks, Desc: desc}
			}
		}
		return r.messagesLine(root, index, where), nil
	}
}

// hint returns err, the error of line index, as a FormatError when the
// line is the first and the file looks like another format's: the line
// and the bytes buffered after it are the file's first bytes (a log
// written as one JSON text, on one line or many).
func (m *messages) hint(index int, err error) error {
	if index != 0 {
		return err
	}
	rest, _ := m.br.Peek(m.br.Buffered())
	prefix := append(append(bytes.Clone(m.line), '\n'), rest...)
	if looks, desc := sniff(prefix); looks != "" && looks != Messages {
		return &FormatError{Err: err, Looks: looks, Desc: desc}
	}
	return err
}

// defaultID returns a rollout holding only the default rollout_id of the
// line index, <name>#<line index>: what can be mapped of a line that is
// not a JSON object.
func (r *Reader) defaultID(index int) []byte {
	var o object
	o.begin(r.out[:0])
	r.appendDefaultID(&o, index)
	r.out = o.end()
	return r.out
}

// appendDefaultID appends the member rollout_id, <name>#<index>.
func (r *Reader) appendDefaultID(o *object, index int) {
	o.key("rollout_id")
	o.b = append(o.b, '"')
	o.b = appendStringBody(o.b, r.name)
	o.b = append(o.b, '#')
	o.b = strconv.AppendInt(o.b, int64(index), 10)
	o.b = append(o.b, '"')
}

// messagesLine maps one line: its rollout fields as they are (a missing
// rollout_id gets gavel's default, <name>#<line index>), the output and
// log derived from its messages unless the line has its own, and its
// other members as metadata. With turns on (Reader.SetTurns), the turns
// of its messages come last, in place of a member turns of the line's
// own, even when the line has its own log.
func (r *Reader) messagesLine(line jsonview.Value, index int, where string) Item {
	var o object
	o.begin(r.out[:0])
	if id := line.Get("rollout_id"); !id.IsNull() {
		o.raw("rollout_id", id)
	} else {
		o.key("rollout_id")
		o.b = append(o.b, '"')
		o.b = appendStringBody(o.b, r.name)
		o.b = append(o.b, '#')
		o.b = strconv.AppendInt(o.b, int64(index), 10)
		o.b = append(o.b, '"')
	}
	for _, k := range []string{"task_id", "initial_state", "final_state"} {
		if v := line.Get(k); v.Exists() {
			o.raw(k, v)
		}
	}
	msgs := line.Get("messages")
	if v := line.Get("output"); v.Exists() {
		o.raw("output", v)
	} else {
		r.chatOutput(&o, msgs, false)
	}
	if v := line.Get("log"); v.Exists() {
		o.raw("log", v)
		if r.turns.on {
			chatEvents(&r.log, &r.turns, msgs)
		}
	} else {
		r.chatLog(&o, msgs)
	}
	for mb := line.First(); mb.Exists(); mb = mb.Next() {
		switch {
		case mb.KeyIs("rollout_id"), mb.KeyIs("task_id"), mb.KeyIs("initial_state"),
			mb.KeyIs("final_state"), mb.KeyIs("output"), mb.KeyIs("log"), mb.KeyIs("messages"):
		case r.turns.on && mb.KeyIs("turns"):
			// The turns are the messages'.
		default:
			o.member(mb)
		}
	}
	r.appendTurns(&o)
	r.out = o.end()
	return Item{Rollout: r.out, Where: where}
}

// messageRows reads chat rows handed over one at a time as the text of
// JSON objects (the rows of a Parquet or Arrow chat dataset).
type messageRows struct {
	row func() (MessageRow, error)
}

// MessageRow is one row of a chat dataset for NewMessageRowReader.
type MessageRow struct {
	// Object is the row as the text of a JSON object; it need stay
	// valid only until the next row is asked for.
	Object []byte
	// Index is the row's 0-based index in its file.
	Index int64
	// Err is a problem of the row alone (the row then has status error).
	Err error
}

// NewMessageRowReader reads chat rows in the messages format, one row per
// call of next, which returns io.EOF after the last row; name is used in
// messages and in default rollout ids (<name>#<row index>). Close closes
// closer when it is not nil.
func NewMessageRowReader(name string, next func() (MessageRow, error), closer io.Closer) *Reader {
	return &Reader{name: name, format: Messages, src: &messageRows{row: next}, closer: closer}
}

func (m *messageRows) next(r *Reader) (Item, error) {
	row, err := m.row()
	if err != nil {
		return Item{}, err
	}
	index := int(row.Index)
	where := fmt.Sprintf("row %d", index)
	if row.Err != nil {
		return Item{Rollout: r.defaultID(index), Err: fmt.Errorf("%s: %w", where, row.Err), Where: where}, nil
	}
	root, err := r.doc.Parse(row.Object)
	if err != nil || root.Kind() != jsonview.Object {
		return Item{Rollout: r.defaultID(index), Err: fmt.Errorf("%s: not a JSON object", where), Where: where}, nil
	}
	return r.messagesLine(root, index, where), nil
}
