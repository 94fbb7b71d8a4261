package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// Config describes one grading run. Its zero value grades nothing: Inputs
// and Verifiers are needed; every other field has a working default.
type Config struct {
	// Inputs are the files, directories, globs or "-" to grade.
	Inputs []string
	// Out is the output directory ("gavel-out" when empty), or a URL of
	// object storage (s3://bucket/results/, gs://, azblob://, file://):
	// then the run writes into a staging directory and uploads each file
	// once it is complete (see Objects). StreamOut ("-") streams the
	// rewards to Stdout instead, and the checks to ChecksOut: no directory,
	// manifest or summary file is written.
	Out string
	// Format is the output format: parquet (default), arrow or jsonl.
	Format string
	// Verifiers are the verifiers to bind tasks to.
	Verifiers []*verifiers.Verifier
	// TasksFile is the tasks table, if any.
	TasksFile string
	// Fields maps rollout fields to input columns.
	Fields columnar.FieldNames
	// Keep names the metadata columns copied into the rewards; nil keeps
	// those of model, run_id and sample that the inputs have.
	Keep []string
	// Workers is the number of grading goroutines (0: the number of CPUs).
	Workers int
	// BatchSize is the number of rows per batch (0: 256). Results never
	// depend on it.
	BatchSize int
	// MaxErrors stops the run after that many rows with status error
	// (0: no limit).
	MaxErrors int64
	// Stdin is read for the input "-" (os.Stdin when nil).
	Stdin io.Reader
	// Stdout receives the rewards as an Arrow IPC stream when Out is
	// StreamOut (os.Stdout when nil).
	Stdout io.Writer
	// ChecksOut, with Out StreamOut, is the Arrow IPC file the checks are
	// written into; "" leaves them out.
	ChecksOut string
	// SummaryOut, with Out StreamOut, is the file the run's summary is
	// written into at its end, as summary.json is in a directory; ""
	// leaves it out.
	SummaryOut string
	// StdinFormat is the format standard input is read in, without From:
	// columnar.InputJSONL or columnar.InputArrowStream; "" tells them
	// apart by the first bytes (columnar.SniffStdin).
	StdinFormat string
	// Progress, when set, is told how many rows are done, and the total
	// when it becomes known.
	Progress Progress
	// Version is written into the manifest.
	Version string
	// Resume continues an interrupted run in Out: units whose part is
	// complete are skipped. Without a manifest in Out the run starts from
	// the beginning; with one written for other inputs, verifiers or
	// configuration (RunConfig) it is a ConfigError.
	Resume bool
	// Shard, when Count > 0, grades only the units of one shard; N shard
	// processes may write into one Out at once, and Commit joins them.
	Shard inputs.Shard
	// Timeout bounds one verifier call (0: 10s; negative: no limit). A row
	// whose verifier runs longer has status error, kind verifier.
	Timeout time.Duration
	// MaxStuck is the number of verifier calls that may be stuck past the
	// timeout at once before the run stops (0: Workers).
	MaxStuck int
	// RowGroupsPerUnit splits Parquet files with more row groups than this
	// into units of that many row groups (0: 16). It decides the parts
	// written, so it must be the same across shards and resumed runs.
	RowGroupsPerUnit int
	// MaxLineBytes bounds one JSON Lines line (0: 64 MiB); a longer line
	// is a row with status error.
	MaxLineBytes int
	// StructNulls says what a null field of a struct in a nested Parquet
	// or Arrow column (inputs and the tasks table) is to verifiers: a
	// member with value null (the zero value) or absent, as in JSON read
	// into structs whose fields are the union of every row's members
	// (columnar.StructNulls). It decides the states verifiers see, so it
	// is part of the run's identity (RunConfig).
	StructNulls columnar.StructNulls
	// Judge, when set, judges the rubric checks of judged verifiers
	// (verifiers.Verifier.Judged) with a language model; its Model may be
	// empty, then only verifiers naming their own model are judged. Nil:
	// rubric checks stay pending, and no judge is opened or probed. A
	// judge is started only when a verifier is judged.
	Judge *judge.Config
	// JudgeMaxRequests is the budget of judgements sent to the server
	// (0: no limit), spent in input order: the rubric checks beyond it
	// stay pending, and a later run answers them from the cache and asks
	// the next ones.
	JudgeMaxRequests int64
	// JudgePanel says how many judgements each rubric check gets (judge
	// models and samples) and how they make its verdict; its zero value
	// asks one. A run where some check gets more than one writes the
	// judgements table.
	JudgePanel JudgePanel
	// Remote configures the remote verifiers (verifiers.Verifier.Remote):
	// cache, --allow-impure, budget. Nil is the defaults.
	Remote *RemoteConfig
	// Health computes the health flags of every rollout (package health):
	// the run then has flags (the checks' kind, the rewards' flags).
	Health bool

	// From is the harness format (columnar.InputInspect, InputTauBench,
	// InputTau2 or InputMessages) that .json inputs are read in, and with
	// InputMessages JSON Lines inputs; standard input too. An .eval file
	// is an Inspect log whatever From is. "" reads every input by its
	// name's format.
	From string
	// Set is constant metadata added to every row; a key the row has too
	// takes the value given here. Keys are not rollout fields.
	Set []inputs.Constant

	// Reuse is the output directory of an earlier run whose results are
	// reused: a rollout with the same rollout_id and input_hash as the
	// earlier run's row of the same input unit and source row, bound to a
	// verifier whose fingerprint is unchanged, gets the earlier check rows
	// and verdict without running the verifier; a unit whose input and
	// every fingerprint are unchanged has its parts copied whole, unless
	// they hold rows whose result may differ when graded again (a
	// verifier timeout or panic, a failed judge call), which are graded
	// again either way. The parts are those of a full run. "" reuses
	// nothing.
	Reuse string

	// open opens input files (os.Open when nil); tests count opens with it.
	open columnar.OpenFunc
	// reusePath forces the path Reuse takes for unchanged units; tests
	// compare the two with it.
	reusePath reusePath
}

// Progress receives the progress of a run from one goroutine.
type Progress interface {
	// SetTotal gives the number of rows to grade, or -1 when unknown.
	SetTotal(total int64)
	// Add reports n more rows written.
	Add(n int)
	// Finish ends the display.
	Finish()
}

// ReuseProgress is a Progress that is also told how many of the rows done
// had their results reused (Config.Reuse), before they are added.
type ReuseProgress interface {
	Reused(n int)
}

// StreamOut is the Config.Out that streams the results: the rewards as an
// Arrow IPC stream on Config.Stdout, record batch by record batch as they
// are graded (at most columnar.DefaultStreamBatchRows rows each, ending
// where a record batch of an Arrow IPC stream input ends), and the checks
// into Config.ChecksOut. Memory stays bounded whatever the number of rows.
// A unit that cannot be read to the end stops the run (its first rows
// may have left already), and so does a failed write; the stream then
// lacks its end-of-stream marker.
const StreamOut = "-"

// ErrMaxErrors is returned, wrapped, when Config.MaxErrors stopped the run.
var ErrMaxErrors = errors.New("too many rows with status error")

// Result is what a run did.
type Result struct {
	// Summary counts every completed part of the run (of the shard, for a
	// sharded run), including parts completed by an earlier, resumed run.
	Summary *results.Summary
	// ErrorRows is the number of rows with status error in Summary.
	ErrorRows int64
	// Complete reports whether every unit of the run (of the shard) has
	// its part.
	Complete bool
}

// ErrInterrupted is returned, wrapped, when the run's context was
// cancelled (SIGINT, SIGTERM): the parts completed so far are in place and
// a run with Config.Resume continues it.
var ErrInterrupted = errors.New("interrupted")

// Run grades every input of cfg into cfg.Out. It returns after every
// goroutine it started has exited, except verifier calls abandoned past
// the timeout (see Config.MaxStuck) and a read of standard input given up
// when the run stopped itself (see StopReader). A ConfigError means
// nothing was written; any other error means the run stopped, with the
// parts completed so far in place and listed in the manifest, or, for
// StreamOut, the rewards sent so far in a stream without its end.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Stdin == nil {
		cfg.Stdin = os.Stdin
	}
	if f, ok := cfg.Stdin.(*os.File); ok && slices.Contains(cfg.Inputs, inputs.Stdin) {
		inputs.GrowPipe(f)
	}
	in := inputs.NewStopReader(cfg.Stdin)
	defer in.Stop()
	cfg.Stdin = in
	r, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	r.stopStdin = in.Stop
	defer inputs.RemoveSpools(r.units)
	if r.remote != nil {
		defer os.RemoveAll(r.cfg.Out)
		defer r.remote.Close()
	}
	res, err := r.run(ctx)
	if cErr := r.plan.closeAskers(); cErr != nil && err == nil {
		err = cErr
	}
	return res, err
}

// runner holds one run's state.
type runner struct {
	cfg      Config
	units    []inputs.Unit // every unit of the run, whatever the shard
	plan     *plan
	skipped  []string
	manifest *results.Manifest
	start    time.Time

	// stats holds the statistics of every completed part of this process's
	// units, by unit index; failed lists the units that could not be read.
	stats  map[int]*results.PartStats
	failed []results.FailedInput

	// remote is the output URL when Config.Out is one; cfg.Out is then
	// the staging directory. out is the output directory (nil when the
	// results are streamed).
	remote *results.Objects
	out    *results.OutDir

	// stream is the results stream when Config.Out is StreamOut.
	stream *columnar.ResultStream
	// stopStdin makes reads of standard input fail at once, so that a run
	// that stops itself is not held up by a pipe that stays open.
	stopStdin func()
}

// streaming reports whether the run streams its results (StreamOut).
func (r *runner) streaming() bool { return r.cfg.Out == StreamOut }

func prepare(cfg Config) (_ *runner, err error) {
	if cfg.Out == "" {
		cfg.Out = "gavel-out"
	}
	if err := checkStream(&cfg); err != nil {
		return nil, err
	}
	if cfg.Format == "" {
		cfg.Format = columnar.FormatParquet
	}
	switch cfg.Format {
	case columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL:
	default:
		return nil, &inputs.ConfigError{Field: "Format", Msg: fmt.Sprintf("unknown output format %q (want parquet, arrow or jsonl)", cfg.Format)}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.NumCPU()
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.Stdin == nil {
		cfg.Stdin = os.Stdin
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxStuck <= 0 {
		cfg.MaxStuck = cfg.Workers
	}
	if cfg.RowGroupsPerUnit <= 0 {
		cfg.RowGroupsPerUnit = inputs.DefaultRowGroupsPerUnit
	}
	if cfg.Shard.Count > 0 && (cfg.Shard.Index < 0 || cfg.Shard.Index >= cfg.Shard.Count) {
		return nil, &inputs.ConfigError{Field: "Shard", Msg: fmt.Sprintf("%d/%d: the index must be between 0 and %d", cfg.Shard.Index, cfg.Shard.Count, cfg.Shard.Count-1)}
	}
	if err := columnar.CheckFrom(cfg.From); err != nil {
		return nil, &inputs.ConfigError{Field: "From", Msg: err.Error()}
	}
	if err := columnar.CheckStdinFormat(cfg.StdinFormat); err != nil {
		return nil, &inputs.ConfigError{Field: "StdinFormat", Msg: err.Error()}
	}
	if cfg.StdinFormat != "" && cfg.From != "" {
		return nil, &inputs.ConfigError{Field: "StdinFormat", Msg: fmt.Sprintf("standard input is read as a %s log (From); an input format does not apply", cfg.From)}
	}
	files, skipped, err := inputs.Inputs(cfg.Inputs, cfg.From)
	if err != nil {
		return nil, err
	}
	stdins := 0
	for _, u := range files {
		if u.Path == inputs.Stdin {
			stdins++
		}
	}
	if stdins > 1 {
		return nil, &inputs.ConfigError{Msg: "standard input (-) is named more than once"}
	}
	if stdins > 0 && cfg.Shard.Count > 1 {
		return nil, &inputs.ConfigError{Field: "Shard", Msg: "cannot split standard input (-) between processes"}
	}
	units := inputs.Describe(files, cfg.RowGroupsPerUnit, cfg.open, cfg.From, cfg.StdinFormat, cfg.Stdin)
	defer func() {
		if err != nil {
			inputs.RemoveSpools(units)
		}
	}()
	p, err := newPlan(planConfig{fields: cfg.Fields, set: cfg.Set, tasksFile: cfg.TasksFile, structNulls: cfg.StructNulls,
		bind: true, verifiers: cfg.Verifiers, fileTasks: true})
	if err != nil {
		return nil, err
	}
	p.health = cfg.Health
	p.flags = p.flags || p.health
	p.keep = cfg.Keep
	if p.keep == nil {
		p.keep = inputs.DefaultKeep(units, p.fields, p.set)
	}
	for _, k := range p.keep {
		if p.fields.Is(k) {
			return nil, &inputs.ConfigError{Field: "Keep", Msg: fmt.Sprintf("%s is a rollout field, not metadata", k)}
		}
		if k == columnar.ColumnInputHash {
			return nil, &inputs.ConfigError{Field: "Keep", Msg: fmt.Sprintf("%s is a rewards column (the hash of each rollout's input), not metadata, and cannot be kept", k)}
		}
	}
	var bound []*verifiers.Verifier
	for _, v := range cfg.Verifiers {
		if len(v.Tasks) > 0 { // Bind gave every pattern to its verifier
			bound = append(bound, v)
		}
	}
	if p.judging, err = newJudging(cfg.Judge, cfg.JudgePanel, bound, cfg.JudgeMaxRequests); err != nil {
		return nil, err
	}
	if p.remoting, err = newRemoting(cfg.Remote, bound); err != nil {
		return nil, err
	}
	p.setAskers()
	if cfg.Out == StreamOut && p.judging != nil && p.judging.multi {
		return nil, &inputs.ConfigError{Field: "Out", Msg: "results on standard output have no judgements table: several judgements per rubric check need an output directory"}
	}
	if cfg.Reuse != "" {
		if p.reuse, err = openReuse(cfg, p); err != nil {
			return nil, err
		}
	}
	r := &runner{cfg: cfg, units: units, plan: p, skipped: skipped, stats: map[int]*results.PartStats{}}
	outName := cfg.Out
	r.manifest = newManifest(cfg, p, units)
	if store.IsURL(cfg.Out) {
		if r.remote, err = results.OpenObjects(context.Background(), cfg.Out); err != nil {
			if errors.Is(err, results.ErrUnwritable) {
				return nil, &inputs.ConfigError{Msg: err.Error()}
			}
			return nil, fmt.Errorf("output: %w", err)
		}
		outName = r.remote.Name()
		if r.cfg.Out, err = results.Stage(); err != nil {
			r.remote.Close()
			return nil, err
		}
	}
	if cfg.Out != StreamOut {
		r.out = &results.OutDir{Path: r.cfg.Out, Name: outName, Objects: r.remote, Shard: cfg.Shard.Index, Shards: cfg.Shard.Count}
	}
	return r, nil
}

// checkStream checks the settings of a run that streams its results
// (StreamOut), whose format defaults to arrow, and that ChecksOut and
// SummaryOut are given only to one.
func checkStream(cfg *Config) error {
	if cfg.Out != StreamOut {
		if cfg.ChecksOut != "" {
			return &inputs.ConfigError{Field: "ChecksOut", Msg: "a checks file is written only when the results are streamed (out -); an output directory has the checks parts"}
		}
		if cfg.SummaryOut != "" {
			return &inputs.ConfigError{Field: "SummaryOut", Msg: "a summary file is written only when the results are streamed (out -); an output directory has summary.json"}
		}
		return nil
	}
	if cfg.Format == "" {
		cfg.Format = columnar.FormatArrow
	}
	switch {
	case cfg.Format != columnar.FormatArrow:
		return &inputs.ConfigError{Field: "Out", Msg: fmt.Sprintf("results on standard output are an arrow ipc stream: format %s is not available", cfg.Format)}
	case cfg.Resume:
		return &inputs.ConfigError{Field: "Out", Msg: "a stream on standard output cannot be resumed: resume needs an output directory"}
	case cfg.Reuse != "":
		return &inputs.ConfigError{Field: "Out", Msg: "reusing earlier results needs an output directory, not standard output"}
	case cfg.Shard.Count > 1:
		return &inputs.ConfigError{Field: "Out", Msg: "shards write into one output directory, not standard output"}
	}
	return nil
}

// Bind returns the bindings of vs (verifiers.Bind): an id given twice, a
// bad task pattern or two verifiers with an equal pattern is a ConfigError
// naming both.
func Bind(vs []*verifiers.Verifier) (*verifiers.Bindings, error) {
	b, err := verifiers.Bind(vs)
	if err != nil {
		return nil, &inputs.ConfigError{Msg: err.Error()}
	}
	return b, nil
}

// jobKind says what a job carries.
type jobKind uint8

const (
	// jobBatch is a batch of a unit's rows; a worker grades it into res.
	jobBatch jobKind = iota
	// jobEnd ends a unit read to the end; rows is the unit's row count.
	jobEnd
	// jobFailed ends a unit that could not be read to the end; err says
	// why.
	jobFailed
)

// job is one unit of work: a batch of a unit, or the end of a unit. seq
// orders jobs across the whole run.
type job struct {
	kind  jobKind
	seq   int64
	unit  *inputs.Unit
	batch *columnar.Batch // jobBatch, until graded
	prev  []*prevRow      // jobBatch: the earlier run's rows (Config.Reuse)
	res   *batchResults   // jobBatch, once graded
	// batchEnd is set for a batch that ends a record batch of a stream
	// read as it arrives (columnar.Batch.EndsRecordBatch).
	batchEnd bool
	rows     int64 // jobEnd and jobFailed: rows read
	err      error // jobFailed
}

// todo returns the units this process grades: those of its shard whose
// part is not complete.
func (r *runner) todo() []*inputs.Unit {
	var units []*inputs.Unit
	for i := range r.units {
		u := &r.units[i]
		if r.cfg.Shard.Has(u.Index) && r.stats[u.Index] == nil {
			units = append(units, u)
		}
	}
	return units
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	r.start = time.Now()
	if r.streaming() {
		var err error
		r.stream, err = columnar.NewResultStream(r.stdout(), columnar.StreamOptions{Name: "standard output", Keep: r.plan.keep, Flags: r.plan.flags, Turns: r.plan.turns, ChecksPath: r.cfg.ChecksOut})
		if err != nil {
			return nil, err
		}
		defer r.stream.Abort() // after Close, nothing
	} else {
		if err := r.prepareOut(); err != nil {
			return nil, err
		}
		if err := r.writeManifest(); err != nil {
			return nil, err
		}
	}
	if err := r.copyUnits(); err != nil {
		return nil, err
	}
	if err := r.match(ctx); err != nil {
		return nil, err
	}
	defer r.plan.reuse.closeMatches()
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			// A run that stops itself gives up a read of standard input
			// that may never return. An interrupted run lets it finish:
			// its drain ends once the reader is given a row, or a second
			// signal ends the process.
			if outer.Err() == nil && r.stopStdin != nil {
				r.stopStdin()
			}
		case <-stopped:
		}
	}()

	todo := r.todo()
	workers := r.cfg.Workers
	// tokens bounds the batches in flight (read, being graded, or waiting
	// to be put in order), and so the memory, whatever the speed of each
	// stage.
	tokens := make(chan struct{}, workers+2)
	jobs := make(chan *job, workers)
	done := make(chan *job, workers+2)
	resultPool := &resultsFree{max: workers + 2}

	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		readErr = r.produce(ctx, todo, tokens, jobs)
	}()
	wp := &pool{r: r, jobs: jobs, done: done, results: resultPool, maxStuck: r.cfg.MaxStuck, base: time.Now(), cancel: cancel}
	if r.cfg.Timeout > 0 {
		wp.timeout = r.cfg.Timeout
	}
	wp.start(workers)
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		if wp.timeout > 0 {
			wp.supervise(stopWatch)
		}
	}()
	go func() {
		wp.wg.Wait()
		close(done)
	}()

	writeErr := r.write(ctx, done, tokens, resultPool)
	if writeErr != nil {
		cancel()
	}
	// Drain so that every goroutine can exit.
	for j := range done {
		if j.res != nil {
			resultPool.Put(j.res)
		}
	}
	close(stopWatch)
	<-watchDone
	wg.Wait()
	for _, a := range r.plan.askers {
		a.wait() // cancelled with ctx on an error
	}
	if r.cfg.Progress != nil {
		r.cfg.Progress.Finish()
	}

	err := wp.failure()
	if err == nil {
		err = writeErr
	}
	if err == nil && readErr != nil {
		err = readErr
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	var pe *ProbeError
	if errors.As(err, &pe) {
		if len(r.stats) == 0 {
			return nil, r.probeFailed(pe)
		}
		done, total := r.progress()
		err = fmt.Errorf("%w; %d of %d parts complete: run again with --resume to continue", err, done, total)
	}
	complete := err == nil && len(r.failed) == 0
	switch {
	case errors.Is(err, context.Canceled) && r.streaming():
		err = fmt.Errorf("%w: the results stream ends before the input's last rollout", ErrInterrupted)
	case errors.Is(err, context.Canceled):
		done, total := r.progress()
		err = fmt.Errorf("%w: %d of %d parts complete", ErrInterrupted, done, total)
	}
	if r.streaming() {
		if err == nil {
			err = r.stream.Close()
		}
	} else if mErr := r.writeManifest(); mErr != nil && err == nil {
		err = mErr
	}
	// A run that ended with inputs it could not read graded every other
	// unit: its duplicate ids are those of the parts it wrote.
	summary, sErr := r.finishSummary(err == nil)
	if sErr != nil && err == nil {
		err = sErr
	}
	if err == nil && len(r.failed) > 0 {
		msgs := make([]string, len(r.failed))
		for i, f := range r.failed {
			msgs[i] = f.Error
		}
		err = fmt.Errorf("%d input units could not be read (their parts are absent; the other inputs are graded):\n  %s", len(r.failed), strings.Join(msgs, "\n  "))
	}
	if complete && sErr == nil && !r.streaming() {
		if mErr := r.out.MarkSuccess(); mErr != nil && err == nil {
			err = mErr
		}
	}
	return &Result{Summary: summary, ErrorRows: summary.Error, Complete: complete}, err
}

// probeFailed removes what the run wrote when the judge's probe failed
// before any part was complete (a configuration error writes nothing:
// exit status 2), and returns the error as a ConfigError.
func (r *runner) probeFailed(pe *ProbeError) error {
	if r.streaming() {
		return &inputs.ConfigError{Field: "Judge", Msg: pe.Error()}
	}
	if r.out.Sharded() {
		r.out.Remove(r.out.ManifestPath())
		r.out.Remove(r.out.SummaryPath())
	} else {
		r.out.Clear()
	}
	for _, sub := range []string{"rewards", "checks", results.JudgementsDir, results.StatsDir, results.ShardsDir, ""} {
		os.Remove(filepath.Join(r.cfg.Out, sub)) // only if empty
	}
	return &inputs.ConfigError{Field: "Judge", Msg: pe.Error() + " (nothing was written)"}
}

// progress returns how many of this process's units have their part.
func (r *runner) progress() (done, total int) {
	for i := range r.units {
		if r.cfg.Shard.Has(i) {
			total++
			if r.stats[i] != nil {
				done++
			}
		}
	}
	return done, total
}

// produce reads the units in order and sends their batches, then an
// end-of-unit job, taking a token for each. A unit that cannot be opened
// or read to the end gets an end-of-unit job carrying the error, and the
// next unit is read; only cancellation stops it early.
func (r *runner) produce(ctx context.Context, units []*inputs.Unit, tokens chan struct{}, jobs chan<- *job) error {
	var seq int64
	send := func(j *job) bool {
		select {
		case tokens <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		j.seq = seq
		seq++
		select {
		case jobs <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	opts := columnar.Options{Fields: r.plan.fields, MaxLineBytes: r.cfg.MaxLineBytes, StructNulls: r.cfg.StructNulls, Turns: r.plan.turns}
	if r.cfg.Progress != nil {
		r.cfg.Progress.SetTotal(inputs.TotalRows(units))
	}
	for _, u := range units {
		rows, err, ok := r.produceUnit(u, opts, send)
		if !ok {
			return ctx.Err()
		}
		end := &job{kind: jobEnd, unit: u, rows: rows}
		if err != nil {
			end.kind, end.err = jobFailed, err
		}
		if !send(end) {
			return ctx.Err()
		}
	}
	return nil
}

// produceUnit sends the batches of one unit. ok is false when the run was
// cancelled; err is the unit's read error.
func (r *runner) produceUnit(u *inputs.Unit, opts columnar.Options, send func(*job) bool) (rows int64, err error, ok bool) {
	rd, err := r.open(u, opts)
	if err != nil {
		return 0, err, true
	}
	defer rd.Close()
	prev := r.plan.reuse.open(u, &r.manifest.Inputs[u.Index], r.plan.keep)
	defer prev.close()
	for {
		b, err := rd.Next(r.cfg.BatchSize)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rows, err, true
		}
		rows += int64(len(b.Rows))
		if !send(&job{kind: jobBatch, unit: u, batch: b, prev: prev.rows(b), batchEnd: b.EndsRecordBatch}) {
			b.Release()
			return rows, nil, false
		}
	}
	if err := rd.Close(); err != nil {
		return rows, fmt.Errorf("close %s: %w", u.Path, err), true
	}
	return rows, nil, true
}

// open returns the reader of a unit (OpenUnit).
func (r *runner) open(u *inputs.Unit, opts columnar.Options) (columnar.Reader, error) {
	return inputs.OpenUnit(u, opts)
}

// write puts finished jobs back in input order (a reorder buffer keyed by
// seq) and writes them: it is the only goroutine that touches parts, the
// part statistics and the manifest, so their contents follow input order
// whatever the order in which workers finish. Each job's token is returned
// once the job is in order: it is written then at once, or, when it waits
// on the judge, once its asks have finished (a FIFO bounded in rows; see
// judging), while the workers grade the next batches.
//
// A part is completed in this order: its statistics file is written, the
// part files are renamed into place (checks, then rewards), the manifest
// is rewritten. The rewards rename is the commit point: a part counts as
// complete when both its files and its statistics file exist, so a crash
// between any two steps leaves the unit either complete or to be redone.
func (r *runner) write(ctx context.Context, done <-chan *job, tokens <-chan struct{}, pool *resultsFree) (err error) {
	w := &writer{r: r, pool: pool}
	defer func() {
		if w.part != nil {
			w.part.Abort()
		}
		w.ids.Abort()
	}()
	pending := map[int64]*job{}
	var next int64
	// fifo holds the jobs taken in order and not yet written: a batch
	// waits there for its judge asks (see judging), and every job behind
	// it waits too. Without asks the FIFO holds one job at a time.
	var fifo []*job
	fifoRows := 0
	in := done
	for {
		// head is the first unfinished ask of the FIFO's head, taken
		// once: asking again below could find it finished and leave the
		// select below with nothing to wait on once the input is done.
		var head <-chan struct{}
	drain:
		for len(fifo) > 0 {
			j := fifo[0]
			if j.res != nil {
				for _, a := range r.plan.askers {
					if head = a.waiting(j.res); head != nil {
						break drain
					}
				}
			}
			fifo[0] = nil
			fifo = fifo[1:]
			if j.res != nil {
				fifoRows -= len(j.res.rewards)
			}
			if err := w.writeJob(j); err != nil {
				return err
			}
		}
		if in == nil && len(fifo) == 0 {
			return nil
		}
		recv := in
		if fifoRows >= judgeWindowRows {
			recv = nil
		}
		select {
		case j, ok := <-recv:
			if !ok {
				in = nil
				continue
			}
			pending[j.seq] = j
			for {
				j, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				next++
				for _, a := range r.plan.askers {
					if j.res == nil || !a.has(j.res) {
						continue
					}
					if err := a.start(ctx, j.res); err != nil {
						a.release(j.res)
						pool.Put(j.res)
						j.res = nil
						<-tokens
						return err
					}
				}
				fifo = append(fifo, j)
				if j.res != nil {
					fifoRows += len(j.res.rewards)
				}
				// The batch's results stay in the FIFO; its token lets the
				// reader and the workers go on with the next batches.
				<-tokens
			}
		case <-head:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// writer is the state of the write loop: the part being written and its
// counts.
type writer struct {
	r       *runner
	pool    *resultsFree
	part    *columnar.Part
	cur     *results.Summary // counts of the part being written
	errRows int64
	ids     results.IDWriter
	buf     []verifiers.Check
	// retry counts the part's retry rows (PartStats.RetryRows).
	retry int64
}

// writeJob writes one job, in input order.
func (w *writer) writeJob(j *job) error {
	r := w.r
	if r.stream != nil {
		return w.streamJob(j)
	}
	var err error
	if w.part == nil && j.kind != jobFailed {
		w.part, err = columnar.CreatePart(r.cfg.Out, j.unit.Index, columnar.PartOptions{Format: r.cfg.Format, Keep: r.plan.keep, Flags: r.plan.flags, Turns: r.plan.turns,
			Judgements: r.plan.judging != nil && r.plan.judging.multi})
		if err != nil {
			return err
		}
		w.cur = results.NewSummary(nil)
		w.retry = 0
		w.ids.Reset(r.cfg.Out, j.unit.Index)
	}
	switch j.kind {
	case jobBatch:
		// part is open: a unit's batches come before its end job.
		return w.writeBatch(j, w.part)
	case jobFailed:
		if w.part != nil {
			w.part.Abort()
			w.part = nil
		}
		w.ids.Abort()
		f := results.FailedInput{Path: j.unit.Path, Part: columnar.PartName(j.unit.Index, r.cfg.Format), Error: j.err.Error()}
		r.failed = append(r.failed, f)
		r.manifest.Inputs[j.unit.Index].Error = f.Error
		if err := r.writeManifest(); err != nil {
			return err
		}
	case jobEnd:
		ps := results.NewPartStats(j.unit.Index, j.unit.Path, j.rows, w.cur)
		retry := w.retry
		ps.RetryRows = &retry
		if err := w.ids.Finish(); err != nil {
			return err
		}
		if err := results.WriteStats(r.cfg.Out, ps); err != nil {
			return err
		}
		// A verdict in the part must survive the part: the cache is made
		// durable before the part is committed.
		if err := r.plan.syncAskers(); err != nil {
			return err
		}
		err := w.part.Close()
		w.part = nil
		if err != nil {
			os.Remove(results.StatsPath(r.cfg.Out, j.unit.Index))
			return err
		}
		if r.remote != nil {
			if err := r.remote.PutUnit(r.cfg.Out, j.unit.Index, r.cfg.Format); err != nil {
				return err
			}
		}
		r.stats[j.unit.Index] = ps
		r.manifest.Complete(j.unit.Index, j.rows)
		if err := r.writeManifest(); err != nil {
			return err
		}
	}
	return nil
}

// tables is where writeBatch puts the rows of a batch: the part being
// written, or the results stream.
type tables interface {
	WriteRewards([]columnar.RewardRow) error
	WriteChecks([]columnar.CheckRow) error
}

// writeBatch counts the rows of a graded batch and writes them to t.
func (w *writer) writeBatch(j *job, t tables) (err error) {
	r := w.r
	res := j.res
	j.res = nil
	defer w.pool.Put(res)
	for _, a := range r.plan.askers {
		if a.has(res) {
			if w.buf, err = a.finish(res, w.buf); err != nil {
				return err
			}
		}
	}
	// A row's check rows follow the previous row's.
	checks := res.checks
	for i := range res.rewards {
		rw := &res.rewards[i]
		n := rw.CheckRows()
		// A passed row is a retry row only when a failed judgement was
		// left out of its checks' verdicts: no lookup otherwise.
		if rw.Status != verifiers.StatusPassed || r.plan.judging.partial() {
			if v := r.plan.bindings.Lookup(rw.TaskID); v != nil && retryRow(rw, checks[:n], r.plan.judging, v) {
				w.retry++
			}
		}
		checks = checks[n:]
		w.cur.Add(rw)
		if rw.Status == verifiers.StatusError {
			w.errRows++
		}
		if r.stream == nil { // duplicate ids are looked for in an output directory only
			if err := w.ids.Add(rw.RolloutID); err != nil {
				return err
			}
		}
	}
	w.cur.AddChecks(res.checks)
	if err := t.WriteRewards(res.rewards); err != nil {
		return err
	}
	if err := t.WriteChecks(res.checks); err != nil {
		return err
	}
	if r.plan.judging != nil && r.plan.judging.multi {
		if err := w.part.WriteJudgements(res.judgements); err != nil {
			return err
		}
	}
	if r.cfg.Progress != nil {
		if rp, ok := r.cfg.Progress.(ReuseProgress); ok && res.reused > 0 {
			rp.Reused(res.reused)
		}
		r.cfg.Progress.Add(len(res.rewards))
	}
	if r.cfg.MaxErrors > 0 && w.errRows >= r.cfg.MaxErrors {
		return fmt.Errorf("%w: stopped after %d", ErrMaxErrors, w.errRows)
	}
	return nil
}

// streamJob writes one job, in input order, to the results stream: a
// batch's rows, its rewards sent at once when it ends a record batch of
// its input; at the end of a unit, the rewards held back and the unit's
// statistics, kept in memory. A unit that could not be read to the end
// stops the run.
func (w *writer) streamJob(j *job) error {
	r := w.r
	if w.cur == nil {
		w.cur = results.NewSummary(nil)
		w.retry = 0
	}
	switch j.kind {
	case jobBatch:
		flush := j.batchEnd
		if err := w.writeBatch(j, r.stream); err != nil {
			return err
		}
		if flush {
			return r.stream.Flush()
		}
	case jobFailed:
		return j.err
	case jobEnd:
		ps := results.NewPartStats(j.unit.Index, j.unit.Path, j.rows, w.cur)
		retry := w.retry
		ps.RetryRows = &retry
		w.cur = nil
		if err := r.plan.syncAskers(); err != nil {
			return err
		}
		if err := r.stream.Flush(); err != nil {
			return err
		}
		r.stats[j.unit.Index] = ps
	}
	return nil
}

// stdout returns the writer of the results stream.
func (r *runner) stdout() io.Writer {
	if r.cfg.Stdout != nil {
		return r.cfg.Stdout
	}
	return os.Stdout
}
