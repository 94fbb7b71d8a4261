package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/results"
)

const gradeExamples = `  gavel grade rollouts.parquet
  gavel grade --out results --format jsonl shards/
  gavel grade 'shards/*.jsonl.zst' --keep model,run_id
  gavel grade --map final_state=world_after,output=answer data.parquet
  gavel grade --tasks tasks.parquet rollouts.parquet
  gavel grade --spec specs/ --spec extra.yaml rollouts.parquet
  gavel grade --spec tau.yaml --from tau-bench --set model=gpt-4o results/
  gavel grade --spec inspect.yaml logs/2026-01-05T10-00-00_task.eval
  cat rollouts.jsonl | gavel grade -
  gavel grade --out - --checks-out checks.arrow - < rollouts.arrows > rewards.arrows`

// defaultMemoryLimit is the Go soft memory limit of a grading run when the
// GOMEMLIMIT environment variable does not set one.
const defaultMemoryLimit = 192 << 20

// defaultGCPercent is the Go collector's target of a grading run when the
// GOGC environment variable does not set one: the heap may grow by half the
// live memory between collections, not by all of it. On 1M generated
// rollouts this took the peak resident memory from about 205 MB to 156 MB
// for about 4% more CPU time.
const defaultGCPercent = 50

// setMemoryDefaults sets the collector's soft memory limit and target,
// unless GOMEMLIMIT and GOGC set them. Grading, comparing and the
// leaderboard bound their live memory (batches in flight, one partition,
// per-task aggregates); the soft limit keeps the collector from letting
// the heap grow to twice that before it runs.
func setMemoryDefaults() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func runGrade(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("grade", "gavel grade [flags] INPUT...\n\nGrades every rollout of the inputs (files, directories, globs, or - for standard input:\nJSON Lines or an Arrow IPC stream, told apart by the first bytes) with the verifiers\nbound to their tasks, and writes rewards and checks parts, summary.json and\nmanifest.json into --out. With --out -, the rewards go to standard output as an Arrow\nIPC stream, batch by batch as they are graded, the checks to --checks-out, and the\nsummary to standard error.\n\nExit status: 0 every row graded, none with status error; 3 some rows have status error;\n2 usage or configuration error (nothing written); 1 fatal error (completed parts stay),\nor with --baseline, regressions over --fail-on (this wins over 3); with --out -, also when\nstandard output is closed by its reader or standard input is cut short.", gradeExamples, stdout)
	out := fs.String("out", "gavel-out", "output `DIR`ectory, or - for the rewards as an Arrow IPC stream on standard output (no --resume, --reuse, --shard or --baseline)")
	format := fs.String("format", "parquet", "output format: parquet, arrow or jsonl (with --out -: arrow)")
	checksOut := fs.String("checks-out", "", "with --out -: write the checks into this Arrow IPC `FILE` (default: the checks are left out)")
	summaryFile := fs.String("summary-out", "", "with --out -: write the summary into this JSON `FILE`, as summary.json (default: only printed to standard error)")
	inputFormat := fs.String("input-format", "", "read standard input (-) as `FORMAT`: jsonl or arrow-stream (default: told apart by the first bytes)")
	var specs listFlag
	fs.Var(&specs, "spec", "declarative verifier `FILE` (YAML or JSON) or directory of them; repeatable; added to the built-in verifiers")
	tasks := fs.String("tasks", "", "tasks table `FILE` (task_id, initial_state, other fields)")
	mapping := fs.String("map", "", "read fields from other columns: `K=COL[.PATH],...` (final_state=world_after; in JSON Lines and logs, PATH is a member path inside COL: output=response.text; messages=COL names the chat messages turns are read from)")
	from := fs.String("from", "", "read .json inputs as logs of this harness `FORMAT`: inspect, tau-bench, tau2, messages, nemo-gym or atif (messages and nemo-gym: JSON Lines inputs; atif: trajectory*.json and JSON Lines); .eval files are Inspect logs without it")
	var sets listFlag
	fs.Var(&sets, "set", "add constant metadata `K=V` to every row (a string); repeatable")
	keep := fs.String("keep", "", "metadata `COLS` copied into the rewards (default: those of model,run_id,sample present)")
	workers := fs.Int("workers", 0, "grading goroutines (default: number of CPUs)")
	batch := fs.Int("batch-size", 0, "rows per batch (tuning only; results never depend on it) (default 256)")
	maxErrors := fs.Int64("max-errors", 0, "stop after `N` rows with status error (0: no limit)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	progress := fs.Bool("progress", false, "force a progress bar on standard error")
	shard := fs.String("shard", "", "grade only the input units of shard `I/N` (0-based), or auto/N to take I from an array job's environment; join the shards with gavel commit")
	resume := fs.Bool("resume", false, "continue an interrupted run in --out, skipping completed parts")
	reuse := fs.String("reuse", "", "take the results of rollouts whose input and verifier are unchanged from an earlier result `DIR` instead of grading them again")
	timeout := fs.Duration("timeout", pipeline.DefaultTimeout, "a verifier running longer than `D` on one rollout gives that row status error")
	maxLine := fs.Int("max-line-bytes", 0, "a JSON Lines line longer than `N` bytes is an input error for that row (default 64 MiB)")
	health := healthFlag(fs)
	structNulls := fs.String("struct-nulls", "member", "by `MODE`, a null field of a struct in a nested Parquet or Arrow column is a member with value null (member) or no member (absent: for structs inferred from JSON objects, as pyarrow.json and Polars' read_ndjson make them)")
	baseline := fs.String("baseline", "", "at the end, compare with an earlier result `DIR` as gavel diff does")
	failOn := fs.String("fail-on", "0", "with --baseline: exit 1 when the regressions exceed this `LIMIT` (a count, or a rate: 1% or 0.01)")
	tmp := fs.String("tmp", "", "with --baseline: spill partitions under `DIR` when the results do not line up (default: the system temporary directory)")
	prof := addProfileFlags(fs)
	jf := judgeFlags(fs)
	rf := newRemoteFlags(fs, true)
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	vs, err := loadVerifiers(specs)
	if err != nil {
		return err
	}
	if *maxLine < 0 {
		return usagef("gavel grade --max-line-bytes 1048576 ...", "--max-line-bytes %d: want a positive number of bytes", *maxLine)
	}
	nulls, err := columnar.ParseStructNulls(*structNulls)
	if err != nil {
		return usagef("gavel grade --struct-nulls absent rollouts.parquet", "--struct-nulls: unknown value %q (want member or absent)", *structNulls)
	}
	healthOn, err := health("gavel grade --health off rollouts.parquet")
	if err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("gavel grade rollouts.parquet", "no input given")
	}
	if *quiet && *progress {
		return usagef("gavel grade --help", "--quiet and --progress contradict each other")
	}
	streaming := *out == pipeline.StreamOut
	if streaming {
		if *baseline != "" {
			return usagef("gavel grade --out results/ --baseline BASELINE ..., or gavel diff BASELINE results/ after a run into a directory", "--baseline compares result directories: not with --out -")
		}
		if flagSet(fs, "format") && *format != columnar.FormatArrow {
			return usagef("gavel grade --out - INPUT (an Arrow IPC stream), or --out DIR --format "+*format, "--format %s: with --out -, the rewards are an Arrow IPC stream (--format arrow)", *format)
		}
		*format = columnar.FormatArrow
	}
	failTh, err := checkBaseline(*baseline, *out, *failOn)
	if err != nil {
		return err
	}
	if *baseline != "" && *shard != "" {
		return usagef("gavel commit OUT && gavel diff BASELINE OUT", "--baseline compares whole results: with --shard, run gavel diff after gavel commit")
	}
	fields, err := parseMap(*mapping)
	if err != nil {
		return err
	}
	constants, err := parseSet(sets)
	if err != nil {
		return err
	}
	cfg := pipeline.Config{
		Inputs:       fs.Args(),
		Out:          *out,
		Stdout:       stdout,
		ChecksOut:    *checksOut,
		SummaryOut:   *summaryFile,
		StdinFormat:  *inputFormat,
		Format:       *format,
		Verifiers:    vs,
		Health:       healthOn,
		TasksFile:    *tasks,
		Fields:       fields,
		Workers:      *workers,
		BatchSize:    *batch,
		MaxErrors:    *maxErrors,
		Version:      version,
		Resume:       *resume,
		Reuse:        *reuse,
		Timeout:      *timeout,
		MaxLineBytes: *maxLine,
		StructNulls:  nulls,
		From:         *from,
		Set:          constants,
	}
	if *keep != "" {
		cfg.Keep = splitList(*keep)
	}
	if cfg.Judge, cfg.JudgePanel, cfg.JudgeMaxRequests, err = jf.config(); err != nil {
		return err
	}
	if cfg.Remote, err = rf.config("gavel grade"); err != nil {
		return err
	}
	if *timeout <= 0 {
		return usagef("gavel grade --timeout 30s", "--timeout %s: want a positive duration", *timeout)
	}
	if *shard != "" {
		sh, err := inputs.ParseShard(*shard, nil)
		if err != nil {
			return gradeError(err, *maxErrors)
		}
		cfg.Shard = sh
	}
	setMemoryDefaults()
	summaryOut, outName := stdout, store.Redact(*out)
	if streaming {
		// The rewards own standard output; a reader that closes it early
		// makes writes fail (EPIPE) rather than end the process unheard.
		signal.Ignore(syscall.SIGPIPE)
		summaryOut, outName = stderr, "the stream on standard output"
		if *checksOut != "" {
			outName += " and " + *checksOut
		}
	} else if *progress || (!*quiet && isTerminal(os.Stderr)) {
		cfg.Progress = newProgressBar(stderr)
	}
	if err := prof.start(); err != nil {
		return err
	}
	res, err := pipeline.Run(ctx, cfg)
	if pErr := prof.stop(); pErr != nil {
		fmt.Fprintf(stderr, "gavel: %v\n", pErr)
	}
	if res != nil {
		for _, w := range res.Summary.Warnings {
			fmt.Fprintf(stderr, "gavel: warning: %s\n", w)
		}
		if ru := res.Summary.Reuse; ru != nil && ru.Note != "" {
			fmt.Fprintf(stderr, "gavel: --reuse: %s\n", ru.Note)
		}
		if streaming && err != nil {
			// A stream that ended in an error is cut short, and the
			// checks file is removed, not written.
			outName = "the stream on standard output, cut short"
			if *checksOut != "" {
				outName += " (" + *checksOut + " not written)"
			}
		}
		printSummary(summaryOut, "graded", res.Summary, outName)
	}
	if err != nil {
		if streaming && errors.Is(err, pipeline.ErrInterrupted) {
			return err // nothing to resume
		}
		return gradeError(err, *maxErrors)
	}
	if *baseline != "" {
		fmt.Fprintf(stdout, "\ncompared with baseline %s\n", *baseline)
		opts := compareOptions{tmp: *tmp, stderr: stderr, progress: cfg.Progress != nil}
		if err := diffAndReport(ctx, *baseline, *out, failTh, 10, "text", stdout, opts); err != nil {
			return baselineExit(err, res.ErrorRows)
		}
	}
	if res.ErrorRows > 0 {
		return &exitError{code: 3, msg: fmt.Sprintf("%d rows have status error (see error_kind and error in the rewards)", res.ErrorRows)}
	}
	return nil
}

// gradeError words an error of the pipeline with the flags of gavel grade:
// a ConfigError becomes a usage error naming the flag at fault, with a
// hint; an interrupted or stopped run says how to go on.
func gradeError(err error, maxErrors int64) error {
	var ce *inputs.ConfigError
	if errors.As(err, &ce) {
		switch ce.Field {
		case "Format":
			return usagef("gavel grade --format jsonl ...", "--format: %s", ce.Msg)
		case "Keep":
			return usagef("gavel grade --keep model,run_id ...", "--keep: %s", ce.Msg)
		case "Shard":
			return usagef("gavel grade --shard 0/4 ... or, in an array job, --shard auto/4", "--shard %s", ce.Msg)
		case "TasksFile":
			return usagef("gavel grade --tasks tasks.parquet rollouts.parquet", "--tasks: %s", ce.Msg)
		case "Resume":
			return usagef("give the inputs, verifiers and flags of the interrupted run, or drop --resume to start over", "--resume: %s", ce.Msg)
		case "From":
			return usagef("gavel grade --from tau-bench results/", "--from: %s", ce.Msg)
		case "Set":
			return usagef("gavel grade --set model=gpt-4o ...", "--set: %s", ce.Msg)
		case "Inputs":
			return usagef("gavel grade rollouts.parquet", "%s", ce.Msg)
		case "Reuse":
			return usagef("gavel grade --reuse last-night --out tonight ...", "--reuse: %s", ce.Msg)
		case "Judge":
			if strings.HasPrefix(ce.Msg, "remote verifier ") {
				return usagef("check the remote verifier's url and token_env in its spec, and that the service is running", "%s", ce.Msg)
			}
			return usagef("check --judge-url, --judge-model and the key in --judge-api-key-env", "%s", ce.Msg)
		case "Remote":
			return usagef("gavel spec check SPEC; gavel grade --allow-impure ...", "%s", ce.Msg)
		case "Out":
			return usagef("gavel grade --out - INPUT > rewards.arrows, or --out DIR", "--out -: %s", ce.Msg)
		case "ChecksOut":
			return usagef("gavel grade --out - --checks-out checks.arrow INPUT", "--checks-out: %s", ce.Msg)
		case "SummaryOut":
			return usagef("gavel grade --out - --summary-out summary.json INPUT", "--summary-out: %s", ce.Msg)
		case "StdinFormat":
			return usagef("gavel grade --input-format arrow-stream -", "--input-format: %s", ce.Msg)
		}
		return usagef("", "%s", ce.Msg)
	}
	switch {
	case errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("standard output was closed by its reader: the run stopped (%w)", err)
	case errors.Is(err, pipeline.ErrInterrupted):
		return fmt.Errorf("%w; run again with --resume to continue", err)
	case errors.Is(err, pipeline.ErrMaxErrors):
		return fmt.Errorf("%w (--max-errors %d)", err, maxErrors)
	}
	return err
}

// parseMap parses --map K=COL,... into field names.
func parseMap(s string) (columnar.FieldNames, error) {
	var n columnar.FieldNames
	if s == "" {
		return n, nil
	}
	for _, kv := range splitList(s) {
		k, col, ok := strings.Cut(kv, "=")
		if !ok || k == "" || col == "" {
			return n, usagef("--map final_state=world_after,output=answer", "--map %q: want FIELD=COLUMN", kv)
		}
		var dst *string
		switch k {
		case columnar.FieldID:
			dst = &n.ID
		case columnar.FieldTask:
			dst = &n.Task
		case columnar.FieldFinal:
			dst = &n.Final
		case columnar.FieldInitial:
			dst = &n.Initial
		case columnar.FieldOutput:
			dst = &n.Output
		case columnar.FieldLog:
			dst = &n.Log
		case columnar.FieldMessages:
			dst = &n.Messages
		default:
			return n, usagef("--map final_state=world_after", "--map: unknown field %q (want rollout_id, task_id, final_state, initial_state, output, log or messages)", k)
		}
		if *dst != "" {
			return n, usagef("", "--map: field %s mapped twice", k)
		}
		*dst = col
	}
	return n, nil
}

// parseSet parses the values of --set K=V.
func parseSet(sets []string) ([]inputs.Constant, error) {
	var out []inputs.Constant
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("gavel grade --set model=gpt-4o ...", "--set %q: want KEY=VALUE", kv)
		}
		out = append(out, inputs.Constant{Key: k, Value: v})
	}
	return out, nil
}

// plural returns n with the singular or plural noun.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// printSummary prints the run's counts, overall and per verifier; verb
// says what the run did ("graded"). A run that took results from --reuse
// says so in its first line: its throughput is not a grading speed.
func printSummary(w io.Writer, verb string, s *results.Summary, out string) {
	what := fmt.Sprintf("%s %d rollouts", verb, s.Rollouts)
	if ru := s.Reuse; ru != nil && ru.Reused > 0 {
		what = fmt.Sprintf("reused %d rollouts", s.Rollouts)
		if ru.Graded > 0 {
			what = fmt.Sprintf("%s %d and reused %d rollouts", verb, ru.Graded, ru.Reused)
		}
	}
	fmt.Fprintf(w, "%s (%d checks) in %.1fs, %.0f rollouts/s\n", what, s.Checks, s.ElapsedSeconds, s.RowsPerSecond)
	fmt.Fprintf(w, "passed %d  failed %d  pending %d  error %d", s.Passed, s.Failed, s.Pending, s.Error)
	if s.PassRate != nil {
		fmt.Fprintf(w, "  pass rate %.4f", *s.PassRate)
	}
	if s.MeanReward != nil {
		fmt.Fprintf(w, "  mean reward %.4f", *s.MeanReward)
	}
	fmt.Fprintln(w)
	if ru := s.Reuse; ru != nil {
		fmt.Fprintf(w, "reused %d rollouts (%d parts copied whole), graded %d\n", ru.Reused, ru.CopiedParts, ru.Graded)
	}
	if len(s.ErrorKinds) > 0 {
		fmt.Fprint(w, "errors by kind:")
		for _, k := range sortedKeys(s.ErrorKinds) {
			fmt.Fprintf(w, " %s %d", k, s.ErrorKinds[k])
		}
		fmt.Fprintln(w)
	}
	if s.Flags != nil {
		fmt.Fprintf(w, "flagged %d rollouts:", s.Flagged)
		for _, k := range sortedKeys(s.Flags) {
			if f := s.Flags[k]; f.Raised > 0 {
				fmt.Fprintf(w, " %s %d", k, f.Raised)
			}
		}
		fmt.Fprintln(w)
	}
	if len(s.Unextracted) > 0 {
		fmt.Fprint(w, "no answer found (failed, apart from wrong answers):")
		for _, k := range sortedKeys(s.Unextracted) {
			fmt.Fprintf(w, " %s %d", k, s.Unextracted[k])
		}
		fmt.Fprintln(w)
	}
	if len(s.Verifiers) > 0 {
		fmt.Fprintf(w, "\n%-10s %9s %9s %9s %9s %9s %9s\n", "verifier", "rollouts", "passed", "failed", "pending", "error", "pass rate")
		for _, id := range sortedKeys(s.Verifiers) {
			c := s.Verifiers[id]
			rate := "-"
			if c.PassRate != nil {
				rate = strconv.FormatFloat(*c.PassRate, 'f', 4, 64)
			}
			fmt.Fprintf(w, "%-10s %9d %9d %9d %9d %9d %9s\n", id, c.Rollouts, c.Passed, c.Failed, c.Pending, c.Error, rate)
		}
	}
	if j := s.Judge; j != nil {
		servers := "the server"
		if j.Probes > 1 { // one probe per judge server
			servers = "the servers"
		}
		fmt.Fprintf(w, "\njudge: %s of %s, %s, %s, %s, %s, %d prompt + %d completion tokens, %s pending by the budget\n",
			plural(j.Probes, "probe", "probes"), servers, plural(j.Requests, "request", "requests"), plural(j.CacheHits, "cache hit", "cache hits"),
			plural(j.Retries, "retry", "retries"), plural(j.Failures, "failure", "failures"),
			j.PromptTokens, j.CompletionTokens, plural(j.PendingBudget, "check", "checks"))
	}
	if r := s.Remote; r != nil {
		fmt.Fprintf(w, "\nremote verifiers: %s of /reverify_mode, %s, %s, %s, %s, %s pending by the budget\n",
			plural(r.Probes, "probe", "probes"), plural(r.Requests, "request", "requests"), plural(r.CacheHits, "cache hit", "cache hits"),
			plural(r.Retries, "retry", "retries"), plural(r.Failures, "failure", "failures"), plural(r.PendingBudget, "rollout", "rollouts"))
		if len(s.ImpureVerifiers) > 0 {
			fmt.Fprintf(w, "impure verifiers (--allow-impure; neither cached nor reused): %s\n", strings.Join(s.ImpureVerifiers, ", "))
		}
		if r.Repeats > 1 {
			fmt.Fprintf(w, "asked %d times per rollout (--verify-repeats); rollouts whose answers disagree (flaky):", r.Repeats)
			for _, k := range sortedKeys(r.Flaky) {
				fmt.Fprintf(w, " %s %d", k, r.Flaky[k])
			}
			fmt.Fprintln(w)
		}
	}
	if len(s.FilesSkipped) > 0 {
		fmt.Fprintf(w, "\nskipped %d unsupported files\n", len(s.FilesSkipped))
	}
	fmt.Fprintf(w, "\nresults in %s\n", out)
}

// healthFlag adds --health to fs; the function it returns reads it, or
// gives a usage error with example.
func healthFlag(fs *flag.FlagSet) func(example string) (bool, error) {
	health := fs.String("health", "on", "health flags (on or `off`): mark every rollout whose output is empty, that has a log without a turn of the agent, that its harness recorded as truncated or failed; they never move a reward (see docs/flags.md)")
	return func(example string) (bool, error) {
		if *health != "on" && *health != "off" {
			return false, usagef(example, "--health: unknown value %q (want on or off)", *health)
		}
		return *health == "on", nil
	}
}
