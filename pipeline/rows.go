package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/verifiers"
)

// RowDecoder decodes single rows, given as JSON objects, into the rollouts
// a verifier sees, through the code that decodes the rows of a grading
// run: the field map, states held as JSON text in strings, the tasks
// table. `gavel verifier test` reads its fixtures with it, so that a
// fixture is graded as the same row in a run would be.
type RowDecoder struct {
	fields columnar.FieldNames
	tasks  inputs.Tasks
}

// NewRowDecoder returns a decoder that reads the rollout fields from the
// columns fields names (standard names by default) and, when tasksFile is
// not empty, looks tasks up in that tasks table.
func NewRowDecoder(fields columnar.FieldNames, tasksFile string) (*RowDecoder, error) {
	d := &RowDecoder{fields: fields}
	if tasksFile != "" {
		tasks, err := inputs.LoadTasks(tasksFile, fields)
		if err != nil {
			return nil, &inputs.ConfigError{Field: "TasksFile", Msg: err.Error()}
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
	p, err := newPlan(planConfig{fields: d.fields, tasks: d.tasks})
	if err != nil {
		return nil, err
	}
	// A fixture of a verifier that scores turns has its turns, read from
	// its messages, as a row graded in a run that scores turns.
	p.turns = true
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
	if _, msg := g.decode(&inputs.Unit{Path: name, Format: columnar.InputJSONL}, b, &b.Rows[0], &rw); msg != "" {
		return nil, errors.New(msg)
	}
	r := g.rollout
	return &r, nil
}

// ScanConfig says which rollouts Scan reads and how: as a grading run
// with the same settings (Config) reads them.
type ScanConfig struct {
	Inputs    []string
	From      string
	Fields    columnar.FieldNames
	Set       []inputs.Constant
	TasksFile string
	Stdin     io.Reader
	// Verifiers, when set, are bound to their tasks, and each rollout is
	// given with the verifier bound to its task.
	Verifiers []*verifiers.Verifier
}

// Scan reads the rollouts of the inputs in input order, decoded as a
// grading run decodes them, and calls fn with each: where it is (its id,
// or file and row), its verifier (nil when none is bound to its task) and
// the rollout, or, for a row a run would give status error, kind input,
// the message in problem and a nil rollout. The rollout is valid only
// during the call: its strings point into buffers that are reused. Scan
// returns the first error of reading or of fn.
func Scan(cfg ScanConfig, fn func(where string, v *verifiers.Verifier, r *verifiers.Rollout, problem string) error) error {
	if err := columnar.CheckFrom(cfg.From); err != nil {
		return &inputs.ConfigError{Field: "From", Msg: err.Error()}
	}
	files, _, err := inputs.Inputs(cfg.Inputs, cfg.From)
	if err != nil {
		return err
	}
	p, err := newPlan(planConfig{fields: cfg.Fields, set: cfg.Set, tasksFile: cfg.TasksFile,
		bind: len(cfg.Verifiers) > 0, verifiers: cfg.Verifiers, fileTasks: true})
	if err != nil {
		return err
	}
	units := inputs.Describe(files, inputs.DefaultRowGroupsPerUnit, nil, cfg.From, "", cfg.Stdin)
	defer inputs.RemoveSpools(units)
	g := &grader{plan: p, timedOut: -1}
	return inputs.EachBatch(units, columnar.Options{Fields: p.fields, Turns: p.turns}, func(u *inputs.Unit, b *columnar.Batch) error {
		for i := range b.Rows {
			row := &b.Rows[i]
			var rw columnar.RewardRow
			where := inputs.FallbackID(u, row)
			v, msg := g.decode(u, b, row, &rw)
			ro := &g.rollout
			if msg != "" {
				v, ro = nil, nil
			}
			if err := fn(where, v, ro, msg); err != nil {
				return err
			}
		}
		return nil
	})
}
