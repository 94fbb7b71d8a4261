package inputs

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
)

// Task is one row of the tasks table, indexed once and then shared
// read-only by every worker (a jsonview.Doc may be read concurrently after
// Parse).
type Task struct {
	// Fields is the task's row as an object.
	Fields jsonview.Value
	// Initial is the task's initial state (missing when the row has none).
	Initial jsonview.Value
	// hash is the row's part of its rollouts' input hash (taskHash).
	hash uint64
}

// Tasks maps task ids to their rows.
type Tasks map[string]*Task

// LoadTasks reads a tasks table (the table of --tasks: task_id,
// initial_state, other fields) in any input format. Every row
// needs a task_id; a task id given twice, a row without one, or an
// initial_state that is not valid JSON is an error naming the file and row.
func LoadTasks(path string, fields columnar.FieldNames) (Tasks, error) {
	return LoadTasksWith(path, columnar.Options{Fields: fields})
}

// LoadTasksWith is LoadTasks reading with opts: its fields, and how nested
// initial states render null struct fields.
func LoadTasksWith(path string, opts columnar.Options) (Tasks, error) {
	fields := opts.Fields.WithDefaults()
	r, err := columnar.Open(path, columnar.Options{Fields: fields, StructNulls: opts.StructNulls})
	if err != nil {
		return nil, fmt.Errorf("tasks table: %w", err)
	}
	defer r.Close()
	tasks := Tasks{}
	var lineDoc jsonview.Doc
	for {
		b, err := r.Next(256)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("tasks table: %w", err)
		}
		for i := range b.Rows {
			row := &b.Rows[i]
			where := fmt.Sprintf("tasks table %s row %d", path, row.Index)
			var text []byte
			if b.JSONLines {
				where = fmt.Sprintf("tasks table %s line %d", path, row.Index+1)
				if _, err := columnar.DecodeLine(row, &fields, &lineDoc); err != nil {
					b.Release()
					return nil, fmt.Errorf("%s: %w", where, err)
				}
				text = append([]byte(nil), row.Line...)
			} else {
				if row.Err != nil {
					b.Release()
					return nil, fmt.Errorf("%s: %w", where, row.Err)
				}
				text = rowObject(row, b.MetaNames, &fields)
			}
			t, id, err := NewTask(text, &fields)
			if err != nil {
				b.Release()
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if _, dup := tasks[id]; dup {
				b.Release()
				return nil, fmt.Errorf("%s: task %q is listed twice", where, id)
			}
			tasks[id] = t
		}
		b.Release()
	}
	return tasks, nil
}

// NewTask indexes one task row given as an object's JSON text (which it
// keeps).
func NewTask(text []byte, fields *columnar.FieldNames) (*Task, string, error) {
	doc := new(jsonview.Doc)
	root, err := doc.Parse(text)
	if err != nil {
		return nil, "", err
	}
	doc.Share() // read by every rollout of the task; memos key on it
	idv := root.Get(fields.Task)
	var id string
	switch idv.Kind() {
	case jsonview.String:
		s, _ := idv.Str()
		id = string(s)
	case jsonview.Number:
		id = string(idv.Raw())
	}
	if id == "" {
		return nil, "", fmt.Errorf("%s is missing or empty", fields.Task)
	}
	t := &Task{Fields: root, hash: taskHash(root, fields.Initial)}
	init := root.Get(fields.Initial)
	switch init.Kind() {
	case jsonview.String:
		s, _ := init.Str()
		s = append([]byte(nil), s...)
		d := new(jsonview.Doc)
		v, err := d.Parse(s)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", fields.Initial, err)
		}
		d.Share()
		t.Initial = v
	case jsonview.Missing, jsonview.Null:
	default:
		t.Initial = init
	}
	return t, id, nil
}

// rowObject writes a columnar row as the JSON text of an object: states
// and logs held as JSON text quoted, as other strings are; numbers,
// booleans and nested values as they are.
func rowObject(row *columnar.Row, metaNames []string, fields *columnar.FieldNames) []byte {
	return columnar.AppendRowObject(nil, row, metaNames, fields)
}

// TaskIDs reads the task ids of the rollouts of inputs as a grading run
// reads them (Inputs with from, the fields' columns; "-" reads stdin) and
// returns the distinct ids, sorted, and how many rows have no valid task
// id (missing, null, empty, not a string or number, or a line that is not
// a JSON object). Only the ids are used: states are not parsed.
func TaskIDs(inputs []string, from string, fields columnar.FieldNames, stdin io.Reader) (ids []string, invalid int64, err error) {
	if err := columnar.CheckFrom(from); err != nil {
		return nil, 0, &ConfigError{Field: "From", Msg: err.Error()}
	}
	files, _, err := Inputs(inputs, from)
	if err != nil {
		return nil, 0, err
	}
	fields = fields.WithDefaults()
	opts := columnar.Options{Fields: fields, Columns: []string{}}
	seen := map[string]bool{}
	var doc jsonview.Doc
	units := Describe(files, DefaultRowGroupsPerUnit, nil, from, "", stdin)
	defer RemoveSpools(units)
	err = EachBatch(units, opts, func(_ *Unit, b *columnar.Batch) error {
		for i := range b.Rows {
			row := &b.Rows[i]
			if b.JSONLines && row.Err == nil {
				if _, err := columnar.DecodeLine(row, &fields, &doc); err != nil {
					invalid++
					continue
				}
			}
			// A harness's element that could not be mapped keeps its
			// task id when it has one, as grading does.
			id, problem := IDText(row.Task)
			if problem != "" || len(id) == 0 {
				invalid++
				continue
			}
			if !seen[string(id)] {
				seen[string(id)] = true
				ids = append(ids, string(id))
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(ids)
	return ids, invalid, nil
}

// IDText returns the text of an id cell: a string as it is, a number in
// its decimal form. problem is set for other types.
func IDText(c columnar.Cell) (text []byte, problem string) {
	switch c.Kind {
	case columnar.CellNull, columnar.CellString:
		return c.Data, ""
	case columnar.CellNumber:
		return decimalText(c.Data), ""
	}
	return nil, "want a string or a number, got " + c.Kind.String()
}

// decimalText returns a number's plain decimal form: "7" for 7.0 or 7e0.
// Numbers that are already plain integers are returned as they are.
func decimalText(num []byte) []byte {
	plain := true
	for _, ch := range num {
		if (ch < '0' || ch > '9') && ch != '-' {
			plain = false
			break
		}
	}
	if plain {
		return num
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return num
	}
	return strconv.AppendFloat(nil, f, 'f', -1, 64)
}

// FallbackID names a row without a usable rollout id: its unit's path
// and its row index, "PATH#ROW".
func FallbackID(u *Unit, row *columnar.Row) string {
	return u.Path + "#" + strconv.FormatInt(row.Index, 10)
}
