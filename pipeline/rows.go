package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// RowDecoder decodes single rows, given as JSON objects, into the rollouts
// a verifier sees, through the code that decodes the rows of a grading
// run: the field map, states held as JSON text in strings, the tasks
// table. `gavel verifier test` reads its fixtures with it, so that a
// fixture is graded as the same row in a run would be.
type RowDecoder struct {
	fields columnar.FieldNames
	tasks  Tasks
}

// NewRowDecoder returns a decoder that reads the rollout fields from the
// columns fields names (standard names by default) and, when tasksFile is
// not empty, looks tasks up in that tasks table.
func NewRowDecoder(fields columnar.FieldNames, tasksFile string) (*RowDecoder, error) {
	d := &RowDecoder{fields: fields}
	if tasksFile != "" {
		tasks, err := LoadTasks(tasksFile, fields)
		if err != nil {
			return nil, &ConfigError{Field: "TasksFile", Msg: err.Error()}
		}
		d.tasks = tasks
	}
	return d, nil
}

// Decode decodes text, one JSON object (it may span lines), as a JSON
// Lines row of the input name. The rollout owns its memory: nothing is
// reused by later calls. A row that a run would give status error, kind
// input, is an error carrying the same message.
func (d *RowDecoder) Decode(name string, text []byte) (*verifiers.Rollout, error) {
	var line bytes.Buffer
	if err := json.Compact(&line, text); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	line.WriteByte('\n')
	p := &plan{fields: d.fields.WithDefaults(), tasks: d.tasks, initials: jsonview.NewCache(initialCacheBytes)}
	p.skips = columnar.StateSkips(&p.fields, p.initials)
	rd, err := columnar.NewJSONLReader(name, &line, columnar.Options{Fields: p.fields})
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	b, err := rd.Next(1)
	if errors.Is(err, io.EOF) {
		return nil, errors.New("no row")
	}
	if err != nil {
		return nil, err
	}
	g := &grader{plan: p, timedOut: -1}
	var rw columnar.RewardRow
	if _, msg := g.decode(&Unit{Path: name, Format: columnar.InputJSONL}, b, &b.Rows[0], &rw); msg != "" {
		return nil, errors.New(msg)
	}
	r := g.rollout
	return &r, nil
}
