// Package gen generates synthetic rollout datasets of the CRM reference
// environment (its verifiers and their rules: verifiers/crm) for the demo,
// the end-to-end tests and the benchmarks, together with the verdicts that
// grading them must report.
//
// Every rollout draws a task (TASK-001, -002, -003, -004 or -006, in equal
// shares), a model, an initial world and an agent behaviour (correct,
// partial, wrong or no-op; see Behaviour for what each does per task and
// the checks it is known to pass). The expected status of each rollout is
// known by construction: the generator decides what the agent did and so
// which checks pass, and never runs a verifier. A share of rows can be
// replaced by bad rows (docs/grading.md, "Input"), expected to end in
// error.
//
// The same Config always produces byte-identical files.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package gen

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/internal/atomicfile"
)

// Config says what to generate. The zero value works: 1000 rollouts with
// seed 0 to rollouts.parquet.
type Config struct {
	// Out is the dataset path written by Run (default "rollouts.parquet").
	Out string
	// Format is the dataset format. Empty: the one Out's extension names
	// (Run), or Parquet (Generate).
	Format columnar.DatasetFormat
	// Rollouts is the number of rows (0: 1000).
	Rollouts int
	// Seed seeds every random draw.
	Seed uint64
	// BadShare is the share of rows, between 0 and 1, replaced by bad rows
	// of the kinds in BadKinds. The other rows do not depend on it.
	BadShare float64
	// TasksMode writes each task's initial state once, into a tasks table
	// (columns task_id, initial_state), and leaves initial_state out of
	// the rows. All rollouts of a task then share one world.
	TasksMode bool
	// Nested stores the states and logs of a Parquet dataset as nested
	// columns (stateType, logType) rather than as JSON text. Its bad rows
	// are of the kinds a typed column can hold: BadMissingTaskID and
	// BadUnknownTask.
	Nested bool
	// TasksOut is the tasks table path written by Run in tasks mode
	// (default: Out with ".tasks" before its extension).
	TasksOut string
	// ExpectedOut is the path of the expected counts that Run writes as
	// JSON (default: Out + ".expected.json").
	ExpectedOut string
	// ExpectedRowsOut, when set, is the path where Run writes each row's
	// expected verdict as JSON Lines (see Outputs.Rows).
	ExpectedRowsOut string
	// RowGroupRows is the number of rows per Parquet row group (0: 10000).
	RowGroupRows int
	// WorldsPerTask is the number of initial worlds generated per task, and
	// drawn from by its rollouts, when not in tasks mode (0: 64).
	WorldsPerTask int
	// UniqueWorlds generates a new initial world for every rollout, as
	// procedurally generated environments do, instead of drawing from a
	// pool per task; WorldsPerTask is then ignored. Parquet writes the
	// initial states in plain 1 MiB pages, without a dictionary. Not with
	// tasks mode. TASK-003 worlds lack a won stage, and TASK-006 worlds
	// have a trap, each with its share as probability.
	UniqueWorlds bool
	// Tasks restricts the tasks rollouts draw, in equal shares, to these
	// CRM task ids (nil: all five).
	Tasks []string
	// Models names the models rollouts are attributed to, in equal shares
	// (nil: four default names). Earlier models are stronger: model i
	// draws Correct with its Mix weight times max(0.5, 1.3 - 0.2 i).
	Models []string
	// Mix weighs the behaviours drawn (zero: DefaultMix).
	Mix Mix
	// NoWonStageShare is the share of TASK-003 worlds without a closed-won
	// stage, whose rollouts all end in error (0: 0.05, rounded to a whole
	// number of worlds, so none in tasks mode; negative: none).
	NoWonStageShare float64
	// TrapShare is the share of TASK-006 worlds generated with a trap, an
	// inactive rep whose pipeline beats every active rep's (0: 0.85;
	// negative: none).
	TrapShare float64
}

// Mix weighs the behaviours an agent shows. Weights are relative and must
// not be negative.
type Mix struct {
	Correct, Partial, Wrong, NoOp float64
}

// DefaultMix is the behaviour mix of a zero Config.Mix.
var DefaultMix = Mix{Correct: 0.45, Partial: 0.2, Wrong: 0.2, NoOp: 0.15}

// Outputs are the writers Generate writes to.
type Outputs struct {
	// Data receives the dataset.
	Data io.Writer
	// Tasks receives the tasks table; required in tasks mode.
	Tasks io.Writer
	// Rows, when not nil, receives one JSON object per row: row (0-based
	// index), rollout_id, task_id, verifier_id, model (null when the row
	// does not carry them), behaviour ("bad" for bad rows), variant (the
	// bad-row kind for bad rows), status, error_kind, reward (null unless
	// passed or failed) and checks (the check statuses in order; empty
	// when the verifier does not run).
	Rows io.Writer
}

// Bad-row kinds (docs/grading.md, "Input"). Every bad row is expected to
// have status error, of kind no_verifier for BadUnknownTask and input for
// the others.
const (
	// BadMissingTaskID is a row whose task_id is absent, null or empty.
	BadMissingTaskID = "missing_task_id"
	// BadFinalState is a row whose final_state is a string that is not
	// valid JSON (cut short, or followed by a stray brace).
	BadFinalState = "final_state_not_json"
	// BadLog is a row whose log is valid JSON but not an array.
	BadLog = "log_not_array"
	// BadUnknownTask is a row of task TASK-999, which no verifier binds.
	BadUnknownTask = "unknown_task"
	// BadLine is a JSON Lines line that is not a JSON object (a string,
	// number, array, null, or an object cut short). JSON Lines only.
	BadLine = "line_not_object"
	// BadOutput is a row whose output is a number, object, array or
	// boolean. JSON Lines only.
	BadOutput = "output_not_string"
)

// BadKinds lists the bad-row kinds; Parquet datasets use the first four.
var BadKinds = []string{BadMissingTaskID, BadFinalState, BadLog, BadUnknownTask, BadLine, BadOutput}

const unknownTask = "TASK-999"

// crmTasks are the tasks rollouts draw, with their verifier and which of
// its checks are required (in check order, as verifiers/crm adds them).
var crmTasks = []struct {
	id, verifier string
	required     []bool
}{
	{"TASK-001", "VER-001", []bool{true, false}},
	{"TASK-002", "VER-002", []bool{true, false}},
	{"TASK-003", "VER-003", []bool{true, true, false}},
	{"TASK-004", "VER-004", []bool{true, false}},
	{"TASK-006", "VER-006", []bool{true, true, false}},
}

func verifierOf(task string) string {
	for _, t := range crmTasks {
		if t.id == task {
			return t.verifier
		}
	}
	return ""
}

// crmTaskIDs returns the ids of the CRM tasks, in order.
func crmTaskIDs() []string {
	ids := make([]string, len(crmTasks))
	for i, t := range crmTasks {
		ids[i] = t.id
	}
	return ids
}

func taskOf(verifier string) string {
	for _, t := range crmTasks {
		if t.verifier == verifier {
			return t.id
		}
	}
	return ""
}

// Independent random streams, so that for example the bad share does not
// change the other rows.
const (
	streamWorlds = 0x67656e2d776f726c // "gen-worl"
	streamRows   = 0x67656e2d726f7773 // "gen-rows"
	streamBad    = 0x67656e2d62616421 // "gen-bad!"
	streamUnique = 0x67656e2d756e6971 // "gen-uniq"
)

// Validate reports the first problem with the configuration, in words fit
// for a usage error.
func (c Config) Validate() error {
	switch {
	case c.Rollouts < 0:
		return fmt.Errorf("rollouts must not be negative, got %d", c.Rollouts)
	case math.IsNaN(c.BadShare) || c.BadShare < 0 || c.BadShare > 1:
		return fmt.Errorf("bad share must be between 0 and 1, got %v", c.BadShare)
	case c.RowGroupRows < 0:
		return fmt.Errorf("row group rows must not be negative, got %d", c.RowGroupRows)
	case c.WorldsPerTask < 0:
		return fmt.Errorf("worlds per task must not be negative, got %d", c.WorldsPerTask)
	case c.Format != "" && !c.Format.Valid():
		return fmt.Errorf("unknown format %q (want parquet, jsonl or jsonl.zst)", c.Format)
	case c.TasksOut != "" && !c.TasksMode:
		return errors.New("a tasks table path needs tasks mode")
	case c.UniqueWorlds && c.TasksMode:
		return errors.New("unique worlds and tasks mode exclude each other")
	case math.IsNaN(c.NoWonStageShare) || c.NoWonStageShare > 1:
		return fmt.Errorf("no-won-stage share must be at most 1, got %v", c.NoWonStageShare)
	case math.IsNaN(c.TrapShare) || c.TrapShare > 1:
		return fmt.Errorf("trap share must be at most 1, got %v", c.TrapShare)
	}
	m := c.Mix
	for _, x := range []float64{m.Correct, m.Partial, m.Wrong, m.NoOp} {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return fmt.Errorf("behaviour weights must be finite and not negative, got %+v", m)
		}
	}
	seenTask := map[string]bool{}
	for _, id := range c.Tasks {
		if verifierOf(id) == "" || seenTask[id] {
			return fmt.Errorf("tasks must be distinct CRM task ids (%s), got %q", strings.Join(crmTaskIDs(), ", "), c.Tasks)
		}
		seenTask[id] = true
	}
	seen := map[string]bool{}
	for _, name := range c.Models {
		if name == "" || seen[name] {
			return fmt.Errorf("model names must be non-empty and distinct, got %q", c.Models)
		}
		seen[name] = true
	}
	if c.Out == "" && c.Format == "" {
		return nil
	}
	if c.Format == "" {
		if _, ok := columnar.DatasetFormatOf(c.Out); !ok {
			return fmt.Errorf("cannot tell the format of %s from its extension (want .parquet, .jsonl or .jsonl.zst)", c.Out)
		}
	}
	return nil
}

// withDefaults validates c and fills in every default but the paths.
func (c Config) withDefaults() (Config, error) {
	if err := c.Validate(); err != nil {
		return c, err
	}
	c.Rollouts = cmp.Or(c.Rollouts, 1000)
	c.RowGroupRows = cmp.Or(c.RowGroupRows, 10000)
	c.WorldsPerTask = cmp.Or(c.WorldsPerTask, 64)
	if c.TasksMode {
		c.WorldsPerTask = 1
	}
	if c.Format == "" {
		c.Format = columnar.DatasetParquet
		if f, ok := columnar.DatasetFormatOf(c.Out); ok {
			c.Format = f
		}
	}
	if len(c.Models) == 0 {
		c.Models = defaultModels
	}
	if c.Mix == (Mix{}) {
		c.Mix = DefaultMix
	}
	c.NoWonStageShare = cmp.Or(c.NoWonStageShare, 0.05)
	c.TrapShare = cmp.Or(c.TrapShare, 0.85)
	return c, nil
}

// Paths returns the dataset, tasks table (empty unless in tasks mode),
// expected counts and expected rows (empty unless asked for) paths that
// Run writes.
func (c Config) Paths() (data, tasks, expected, rows string) {
	data = cmp.Or(c.Out, "rollouts.parquet")
	if c.TasksMode {
		f := c.Format
		if f == "" {
			f, _ = columnar.DatasetFormatOf(data)
		}
		tasks = cmp.Or(c.TasksOut, trimDatasetExt(data)+".tasks"+f.Ext())
	}
	return data, tasks, cmp.Or(c.ExpectedOut, data+".expected.json"), c.ExpectedRowsOut
}

// trimDatasetExt returns path without its dataset extension, if any.
func trimDatasetExt(path string) string {
	l := strings.ToLower(path)
	for _, ext := range []string{".jsonl.zst", ".ndjson.zst", ".parquet", ".jsonl", ".ndjson"} {
		if strings.HasSuffix(l, ext) {
			return path[:len(path)-len(ext)]
		}
	}
	return path
}

// Run generates the dataset described by cfg into files: the dataset, the
// tasks table in tasks mode, the expected counts as JSON and, when asked,
// the expected rows. Each file is written under a temporary name and
// renamed into place once complete, so that no path ever holds a partial
// file. It returns the expected counts.
func Run(ctx context.Context, cfg Config) (*Expected, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	data, tasks, expected, rows := cfg.Paths()
	seen := map[string]bool{}
	for _, p := range []string{data, tasks, expected, rows} {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if seen[abs] {
			return nil, fmt.Errorf("two outputs share the path %s", p)
		}
		seen[abs] = true
	}
	cfg.Out = data
	if cfg.Format == "" {
		cfg.Format, _ = columnar.DatasetFormatOf(data)
	}

	var files []*pendingFile
	defer func() {
		for _, f := range files {
			f.abort()
		}
	}()
	create := func(path string) (*pendingFile, error) {
		f, err := createPending(path)
		if err == nil {
			files = append(files, f)
		}
		return f, err
	}
	var out Outputs
	df, err := create(data)
	if err != nil {
		return nil, err
	}
	out.Data = df.w
	if tasks != "" {
		tf, err := create(tasks)
		if err != nil {
			return nil, err
		}
		out.Tasks = tf.w
	}
	if rows != "" {
		rf, err := create(rows)
		if err != nil {
			return nil, err
		}
		out.Rows = rf.w
	}
	exp, err := Generate(ctx, cfg, out)
	if err != nil {
		return nil, err
	}
	exp.Dataset, exp.TasksTable = data, tasks
	ef, err := create(expected)
	if err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := ef.w.Write(append(js, '\n')); err != nil {
		return nil, fmt.Errorf("write %s: %w", expected, err)
	}
	for _, f := range files {
		if err := f.commit(); err != nil {
			return nil, err
		}
	}
	files = nil
	return exp, nil
}

// pendingFile is an output written under a temporary name in its
// directory until commit renames it into place.
type pendingFile struct {
	f *atomicfile.File
	w *bufio.Writer
}

// createPending starts path under a temporary name, creating its directory
// if needed (as grade creates --out).
func createPending(path string) (*pendingFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	f, err := atomicfile.Create(path, atomicfile.Options{Perm: 0o644})
	if err != nil {
		return nil, err
	}
	return &pendingFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (p *pendingFile) commit() error {
	if err := p.w.Flush(); err != nil {
		return err
	}
	return p.f.Commit()
}

// abort removes the temporary file unless commit renamed it into place.
func (p *pendingFile) abort() { p.f.Abort() }

// behaviourMix holds cumulative behaviour weights.
type behaviourMix [4]float64

func newBehaviourMix(m Mix, skill float64) behaviourMix {
	w := [4]float64{m.Correct * skill, m.Partial, m.Wrong, m.NoOp}
	var c behaviourMix
	sum := 0.0
	for i, x := range w {
		sum += x
		c[i] = sum
	}
	for i := range c {
		c[i] /= sum
	}
	return c
}

func (m *behaviourMix) draw(r *rand.Rand) Behaviour {
	x := r.Float64()
	for i, c := range m {
		if x < c {
			return Behaviour(i)
		}
	}
	return NoOp
}

// Column indexes of the rows Generate writes; initial_state is left out in
// tasks mode.
const (
	colID = iota
	colTask
	colFinal
	colInitial
	colOutput
	colLog
	colModel
	colRun
	colSample
	numCols
)

// The nested column types of Config.Nested. Log arguments a call does not
// pass are null members.
const (
	stateType = "struct<users: map<string, struct<id: string, name: string, active: bool>>, " +
		"stages: map<string, struct<id: string, name: string, probability: int64, isClosed: bool>>, " +
		"opportunities: map<string, struct<id: string, name: string, ownerId: string, stageId: string, status: string, amount: float64>>>"
	logType = "list<struct<eventType: string, tool: string, " +
		"args: struct<id: string, name: string, ownerId: string, stageId: string, status: string, amount: float64>>>"
)

// nestedColumn makes c a nested column of type t when nested is set; a
// Dictionary column keeps its dictionary, on every leaf.
func nestedColumn(c columnar.DatasetColumn, nested bool, t string) columnar.DatasetColumn {
	if nested {
		c.Type, c.Nested = columnar.DatasetNested, t
	}
	return c
}

func datasetColumns(tasksMode, uniqueWorlds, nested bool) []columnar.DatasetColumn {
	cols := []columnar.DatasetColumn{
		{Name: "rollout_id", Type: columnar.DatasetString},
		{Name: "task_id", Type: columnar.DatasetString, Dictionary: true},
		nestedColumn(columnar.DatasetColumn{Name: "final_state", Type: columnar.DatasetJSON}, nested, stateType),
		nestedColumn(columnar.DatasetColumn{Name: "initial_state", Type: columnar.DatasetJSON, Dictionary: true}, nested, stateType),
		{Name: "output", Type: columnar.DatasetString},
		nestedColumn(columnar.DatasetColumn{Name: "log", Type: columnar.DatasetJSON}, nested, logType),
		{Name: "model", Type: columnar.DatasetString, Dictionary: true},
		{Name: "run_id", Type: columnar.DatasetString, Dictionary: true},
		{Name: "sample", Type: columnar.DatasetInt64},
	}
	if uniqueWorlds {
		cols[colInitial].Dictionary = false
	}
	if tasksMode {
		cols = slices.Delete(cols, colInitial, colInitial+1)
	}
	return cols
}

// Generate writes the dataset described by cfg (whose paths it ignores)
// to out and returns the expected counts. It returns early with ctx's
// error when ctx is cancelled.
func Generate(ctx context.Context, cfg Config, out Outputs) (*Expected, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if out.Data == nil || (cfg.TasksMode && out.Tasks == nil) {
		return nil, errors.New("gen: missing output writer")
	}
	setup := rand.New(rand.NewPCG(cfg.Seed, streamWorlds))
	rows := rand.New(rand.NewPCG(cfg.Seed, streamRows))
	badRand := rand.New(rand.NewPCG(cfg.Seed, streamBad))

	// The tasks drawn, as indexes into crmTasks.
	var drawn []int
	for ti, task := range crmTasks {
		if len(cfg.Tasks) == 0 || slices.Contains(cfg.Tasks, task.id) {
			drawn = append(drawn, ti)
		}
	}
	pools := make([][]*world, len(crmTasks))
	for ti, task := range crmTasks {
		if cfg.UniqueWorlds {
			break // a world per rollout, drawn in the loop below
		}
		n := cfg.WorldsPerTask
		noWon := make([]bool, n)
		if task.id == "TASK-003" && cfg.NoWonStageShare > 0 {
			k := int(math.Floor(cfg.NoWonStageShare*float64(n) + 0.5))
			for _, j := range setup.Perm(n)[:k] {
				noWon[j] = true
			}
		}
		for k := range n {
			trap := task.id == "TASK-006" && setup.Float64() < cfg.TrapShare
			pools[ti] = append(pools[ti], newWorld(setup, task.id, worldOptions{noWon: noWon[k], trap: trap}))
		}
	}
	models := cfg.Models
	runIDs := make([]string, len(models))
	mixes := make([]behaviourMix, len(models))
	for i := range models {
		runIDs[i] = fmt.Sprintf("run-%08x", setup.Uint32())
		mixes[i] = newBehaviourMix(cfg.Mix, max(0.5, 1.3-0.2*float64(i)))
	}

	exp := &Expected{
		Format:        string(cfg.Format),
		Seed:          cfg.Seed,
		BadShare:      cfg.BadShare,
		TasksMode:     cfg.TasksMode,
		WorldsPerTask: cfg.WorldsPerTask,
		UniqueWorlds:  cfg.UniqueWorlds,
		TaskIDs:       cfg.Tasks,
	}
	if cfg.UniqueWorlds {
		exp.WorldsPerTask = 0
	}
	if cfg.TasksMode {
		if err := writeTasks(out.Tasks, cfg, pools); err != nil {
			return nil, err
		}
	}
	opts := columnar.DatasetOptions{RowGroupRows: cfg.RowGroupRows}
	var uniqueRand *rand.Rand
	if cfg.UniqueWorlds {
		opts.PageBytes = 1 << 20
		uniqueRand = rand.New(rand.NewPCG(cfg.Seed, streamUnique))
	}
	dw, err := columnar.NewDatasetWriter(out.Data, cfg.Format, datasetColumns(cfg.TasksMode, cfg.UniqueWorlds, cfg.Nested), opts)
	if err != nil {
		return nil, err
	}
	var rw *rowsWriter
	if out.Rows != nil {
		rw = &rowsWriter{w: bufio.NewWriterSize(out.Rows, 1<<20)}
	}
	t := newTally(exp)
	kinds := BadKinds[:4]
	switch {
	case cfg.Format != columnar.DatasetParquet:
		kinds = BadKinds
	case cfg.Nested:
		kinds = []string{BadMissingTaskID, BadUnknownTask}
	}
	width := max(7, len(strconv.Itoa(cfg.Rollouts-1)))
	samples := make([]int64, len(crmTasks)*len(models))
	b := &builder{r: rows}
	vals := make([]columnar.DatasetValue, numCols)
	tasksRow := make([]columnar.DatasetValue, numCols-1)
	taskIDs := make([][]byte, len(crmTasks))
	for i, task := range crmTasks {
		taskIDs[i] = []byte(task.id)
	}
	modelNames, runNames := make([][]byte, len(models)), make([][]byte, len(models))
	for i := range models {
		modelNames[i], runNames[i] = []byte(models[i]), []byte(runIDs[i])
	}
	var idBuf, badBuf []byte
	for i := range cfg.Rollouts {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ti := drawn[rows.IntN(len(drawn))]
		mi := rows.IntN(len(models))
		beh := mixes[mi].draw(rows)
		var w *world
		if cfg.UniqueWorlds {
			id := crmTasks[ti].id
			w = newWorld(uniqueRand, id, worldOptions{
				noWon: id == "TASK-003" && uniqueRand.Float64() < cfg.NoWonStageShare,
				trap:  id == "TASK-006" && uniqueRand.Float64() < cfg.TrapShare,
			})
		} else {
			pool := pools[ti]
			w = pool[rows.IntN(len(pool))]
		}
		sample := samples[ti*len(models)+mi]
		samples[ti*len(models)+mi]++
		b.build(w, beh)

		task := crmTasks[ti]
		idBuf = fmt.Appendf(idBuf[:0], "r-%0*d", width, i)
		text := func(s []byte) columnar.DatasetValue {
			return columnar.DatasetValue{Kind: columnar.DatasetText, Bytes: s}
		}
		raw := func(s []byte) columnar.DatasetValue {
			return columnar.DatasetValue{Kind: columnar.DatasetRaw, Bytes: s}
		}
		vals[colID] = text(idBuf)
		vals[colTask] = text(taskIDs[ti])
		vals[colFinal] = raw(b.final)
		vals[colInitial] = raw(w.initial)
		vals[colOutput] = text(b.output)
		vals[colLog] = raw(b.log)
		vals[colModel] = text(modelNames[mi])
		vals[colRun] = text(runNames[mi])
		vals[colSample] = columnar.DatasetValue{Kind: columnar.DatasetInt, Int: sample}

		rec := rowRecord{row: i, id: string(idBuf), task: task.id, model: models[mi]}
		var v verdict
		bad := ""
		if badRand.Float64() < cfg.BadShare {
			bad = kinds[badRand.IntN(len(kinds))]
			v = verdict{status: StatusError, kind: KindInput}
			switch bad {
			case BadMissingTaskID, BadLine:
				rec.task = ""
			case BadUnknownTask:
				rec.task = unknownTask
				v.kind = KindNoVerifier
			}
			if bad == BadLine {
				rec.id, rec.model = "", ""
			}
			badBuf = corrupt(badRand, bad, vals, badBuf, idBuf, taskIDs[ti], b.final)
		} else {
			v = score(b.checks, task.required)
		}

		if bad == BadLine {
			err = dw.WriteLine(badBuf)
		} else {
			row := vals
			if cfg.TasksMode {
				copy(tasksRow, vals[:colInitial])
				copy(tasksRow[colInitial:], vals[colInitial+1:])
				row = tasksRow
			}
			err = dw.Write(row)
		}
		if err != nil {
			return nil, err
		}
		if bad != "" {
			t.add(rec.task, &v, "", "", bad)
			rec.behaviour, rec.variant = "bad", bad
		} else {
			t.add(task.id, &v, beh.String(), b.variant, "")
			rec.behaviour, rec.variant = beh.String(), b.variant
			rec.checks = b.checks
		}
		if rw != nil {
			if err := rw.write(&rec, &v); err != nil {
				return nil, err
			}
		}
	}
	if err := dw.Close(); err != nil {
		return nil, err
	}
	if rw != nil {
		if err := rw.w.Flush(); err != nil {
			return nil, fmt.Errorf("write expected rows: %w", err)
		}
	}
	t.finish()
	return exp, nil
}

// corrupt makes the row in vals a bad row of the given kind, in one of a
// few seeded variants. For BadLine it leaves vals alone and returns the
// line to write instead; otherwise the returned buffer backs vals until
// the next call.
func corrupt(r *rand.Rand, kind string, vals []columnar.DatasetValue, buf, id, task, final []byte) []byte {
	text := func(s []byte) columnar.DatasetValue {
		return columnar.DatasetValue{Kind: columnar.DatasetText, Bytes: s}
	}
	raw := func(s string) columnar.DatasetValue {
		return columnar.DatasetValue{Kind: columnar.DatasetRaw, Bytes: []byte(s)}
	}
	buf = buf[:0]
	switch kind {
	case BadMissingTaskID:
		vals[colTask] = []columnar.DatasetValue{{Kind: columnar.DatasetAbsent}, {Kind: columnar.DatasetNull}, text([]byte{})}[r.IntN(3)]
	case BadFinalState:
		// A proper prefix of a JSON object is never valid JSON, and
		// neither is an object followed by a stray brace.
		if r.IntN(2) == 0 {
			buf = append(buf, final[:1+r.IntN(len(final)-1)]...)
		} else {
			buf = append(append(buf, final...), '}')
		}
		vals[colFinal] = text(buf)
	case BadLog:
		vals[colLog] = raw([]string{`{"eventType":"tool_call","tool":"list_users","args":{}}`, `42`, `true`}[r.IntN(3)])
	case BadUnknownTask:
		vals[colTask] = text([]byte(unknownTask))
	case BadOutput:
		vals[colOutput] = raw([]string{`42`, `{"answer":"done"}`, `["done"]`, `true`}[r.IntN(4)])
	case BadLine:
		switch r.IntN(5) {
		case 0:
			buf = fmt.Appendf(buf, `["%s","%s"]`, id, task)
		case 1:
			buf = fmt.Appendf(buf, `"%s"`, id)
		case 2:
			buf = append(buf, "42"...)
		case 3:
			buf = append(buf, "null"...)
		default: // cut short
			buf = fmt.Appendf(buf, `{"rollout_id":"%s","task_id":"%s`, id, task)
		}
	}
	return buf
}

// writeTasks writes the tasks table: one row per task with its world.
func writeTasks(w io.Writer, cfg Config, pools [][]*world) error {
	tw, err := columnar.NewDatasetWriter(w, cfg.Format, []columnar.DatasetColumn{
		{Name: "task_id", Type: columnar.DatasetString},
		nestedColumn(columnar.DatasetColumn{Name: "initial_state", Type: columnar.DatasetJSON}, cfg.Nested, stateType),
	}, columnar.DatasetOptions{})
	if err != nil {
		return err
	}
	for ti, task := range crmTasks {
		if err := tw.Write([]columnar.DatasetValue{
			{Kind: columnar.DatasetText, Bytes: []byte(task.id)},
			{Kind: columnar.DatasetRaw, Bytes: pools[ti][0].initial},
		}); err != nil {
			return err
		}
	}
	return tw.Close()
}

// rowRecord is one row's entry in the expected rows.
type rowRecord struct {
	row                int
	id, task, model    string
	behaviour, variant string
	checks             []checkStatus
}

type rowsWriter struct {
	w   *bufio.Writer
	buf []byte
}

func (rw *rowsWriter) write(rec *rowRecord, v *verdict) error {
	str := func(b []byte, s string) []byte {
		if s == "" {
			return append(b, "null"...)
		}
		return jsonview.AppendJSONString(b, s)
	}
	b := fmt.Appendf(rw.buf[:0], `{"row":%d,"rollout_id":`, rec.row)
	b = str(b, rec.id)
	b = append(b, `,"task_id":`...)
	b = str(b, rec.task)
	b = append(b, `,"verifier_id":`...)
	b = str(b, verifierOf(rec.task))
	b = append(b, `,"model":`...)
	b = str(b, rec.model)
	b = append(b, `,"behaviour":`...)
	b = str(b, rec.behaviour)
	b = append(b, `,"variant":`...)
	b = str(b, rec.variant)
	b = append(b, `,"status":`...)
	b = str(b, v.status)
	b = append(b, `,"error_kind":`...)
	b = str(b, v.kind)
	b = append(b, `,"reward":`...)
	if v.hasReward {
		b = strconv.AppendFloat(b, v.reward(), 'g', -1, 64)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"checks":[`...)
	for i, c := range rec.checks {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonview.AppendJSONString(b, c.String())
	}
	b = append(b, "]}\n"...)
	rw.buf = b
	if _, err := rw.w.Write(b); err != nil {
		return fmt.Errorf("write expected rows: %w", err)
	}
	return nil
}

// sortBy sorts s by the string key of each element.
func sortBy[T any](s []T, key func(T) string) {
	slices.SortFunc(s, func(a, b T) int { return strings.Compare(key(a), key(b)) })
}
