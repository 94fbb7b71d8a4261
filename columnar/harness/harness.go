// Package harness reads the trajectories other harnesses write and maps
// each one to a gavel rollout: a JSON object in gavel's JSON Lines input
// schema (docs/grading.md, "Input"), one line of text, which the JSON
// Lines decode path grades as it grades any other line. The task
// definitions the files carry are returned apart, as a tasks table (the
// table of --tasks: task_id, initial_state, other fields).
//
// Formats:
//
//   - Inspect: an .eval archive (a zip holding header.json, or
//     _journal/start.json for a run that did not finish, and one
//     samples/{id}_epoch_{n}.json per sample and epoch), read member by
//     member; or a .json EvalLog, whose samples array is streamed.
//   - tau-bench: the result file, a JSON array of
//     {task_id, trial, reward, info, traj}, streamed.
//   - tau2: the results file {info, tasks, simulations}, the
//     simulations streamed.
//   - messages: JSON Lines whose lines hold a task_id and OpenAI chat
//     messages.
//   - NeMo Gym: rollouts.jsonl and its _failures.jsonl, JSON Lines of
//     verify responses, read line by line, with the task fields of the
//     _materialized_inputs.jsonl beside them (nemogym.go).
//   - ATIF: Harbor's trajectory documents (trajectory.json), read value by
//     value, or JSON Lines of them (atif.go).
//
// A rollout is mapped as follows:
//
//	field           Inspect                         tau-bench                       tau2                            messages
//	rollout_id      <eval id>/<sample id>/<epoch>   <file stem>/<task_id>/<trial>   the simulation's id             the line's rollout_id, or <name>#<line index>
//	task_id         <task>/<sample id>              task_id as text                 task_id as text                 the line's task_id
//	initial_state   -                               -                               -                               the line's, if any
//	final_state     the sample's store              -                               -                               the line's, if any
//	output          output.completion (else the     every assistant text, joined    every assistant text, joined    the last assistant message's text
//	                first choice's text)            with "\n"                       with "\n"
//	log             tool calls and results of       of traj                         of messages (user tools too,    of messages
//	                messages                                                        with "requestor")
//	model           eval.model                      -                               info.agent_info.llm             (the line's other members,
//	run_id          eval.run_id                     -                               -                               as they are)
//	epoch / trial   epoch                           trial                           trial
//	recorded_reward the first score's value (C 1,      reward                          reward_info.reward
//	                I 0, P 0.5, N 0, as Inspect)
//	recorded_scores scores                          info.reward_info                reward_info
//	recorded_error  error.message                   info.error                      -
//	termination_reason limit.type                   -                               termination_reason
//	task row        input, target, choices,         info.task (user_id, actions,    the task definition (without    -
//	                metadata, setup                 instruction, outputs)           its id)
//
// NeMo Gym and ATIF rollouts are mapped as nemoGymRow and
// atifTrajectory say. Absent values are left out. Texts are joined with a newline; a
// message's content is a string or a list of parts, of which the text
// parts count. Lists (messages, parts, tool calls) are JSON arrays: an
// object in the place of one reads as an empty list. Log events (see logWriter) are, in order:
//
//	{"eventType":"tool_call","name":N,"kwargs":{...},"id":I}
//	{"eventType":"tool_result","name":N,"content":"...","id":I}
//
// A tool call's arguments that are not a JSON object (OpenAI writes them
// as a string of JSON text) give "kwargs_raw", the arguments as written,
// and "kwargs_error", what is wrong with them, in place of "kwargs". A
// failed tool result has "is_error": true and, when recorded, "error".
//
// Turns: with Reader.SetTurns(true), a rollout has, as its last member,
// "turns", the agent's turns in order (see turnWriter):
//
//	{"index":0,"text":"...","tool_calls":[{"name":N,"kwargs":{...},"id":I}],"tool_results":[<tool_result event>],"message_index":2}
//
// index counts the turns from 0; text is the turn's text, joined as
// above; tool_calls are the log's tool_call events of the turn without
// eventType (nor tau2's requestor); tool_results are the log's
// tool_result events, as the log has them, that answer them (matched by
// id; a result without one, or with an id no call made, goes to the
// latest turn before it, and one before any turn to none);
// message_index is the place of the turn in the format's list. A row
// that could not be mapped (Item.Err) has no turns. Per format:
//
//   - Inspect, tau-bench, messages (and ChatTurns): each assistant message
//     of the sample's messages, of traj, of the line's messages is a
//     turn. A messages line's own "turns" is left out, and its turns are
//     written even when it has its own log.
//   - tau2: each assistant message; the tool calls of user messages (user
//     tools) and the results with requestor "user" belong to no turn.
//   - NeMo Gym: the agent's output items (reasoning, function_call, a
//     message with role assistant) one after another in response.output
//     are one turn, ended by a function_call_output or a message of
//     another role (items of other types neither start nor end one);
//     message_index is the turn's first item's. A row's own "turns" is
//     left out.
//   - ATIF: each step whose source is agent, with its observation's
//     results; a result without source_call_id in a later step goes to
//     the agent step before it.
//
// A harness's own record of a failure (recorded_error, a
// termination_reason) is data: the rollout is mapped and the record kept
// beside it, for the grader to decide.
//
// A file read in one format that is clearly another's (a tau-bench array
// read as tau2, an Inspect log read as tau-bench) fails with a
// FormatError naming the format to read it in (see sniff.go).
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// Format names a harness's file format.
type Format string

// Formats.
const (
	// Inspect is an Inspect AI log: an .eval archive or a .json EvalLog.
	Inspect Format = "inspect"
	// TauBench is a tau-bench result file.
	TauBench Format = "tau-bench"
	// Tau2 is a tau2-bench results file.
	Tau2 Format = "tau2"
	// Messages is JSON Lines of OpenAI chat messages.
	Messages Format = "messages"
	// NemoGym is NeMo Gym's rollouts: JSON Lines of verify responses.
	NemoGym Format = "nemo-gym"
	// ATIF is Harbor's Agent Trajectory Interchange Format: one
	// trajectory document per file, or JSON Lines of them.
	ATIF Format = "atif"
)

// Formats lists every Format, as ParseFormat accepts them.
var Formats = []Format{Inspect, TauBench, Tau2, Messages, NemoGym, ATIF}

// ParseFormat returns the Format named s.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown harness format %q (want inspect, tau-bench, tau2, messages, nemo-gym or atif)", s)
}

// IsEvalArchive reports whether path names an Inspect .eval archive.
func IsEvalArchive(path string) bool {
	return strings.EqualFold(filepath.Ext(path), ".eval")
}

// IsZip reports whether prefix, a file's first bytes, starts a zip
// archive (an .eval archive, for Inspect).
func IsZip(prefix []byte) bool {
	return bytes.HasPrefix(prefix, zipMagic)
}

// Item is one trajectory of a harness's file.
type Item struct {
	// Rollout is the rollout, the text of a JSON object on one line. It
	// is valid until the next call to Next.
	Rollout []byte
	// Err is why the trajectory could not be mapped: the row has status
	// error, kind input. Rollout then holds what could be mapped (its
	// rollout_id and task_id, when known), or is nil.
	Err error
	// Where locates the trajectory in the file, for messages: "sample 12
	// epoch 2", "element 37", "simulation 3", "line 5".
	Where string
	// Task is the row of the trajectory's task in the tasks table (see
	// Reader.Task) when the file has given it by then, or nil. It is
	// never written again, and may be kept and read from any goroutine.
	Task []byte
}

// source is a format's reader.
type source interface {
	next(r *Reader) (Item, error)
}

// Reader reads the trajectories of one harness's file.
//
// It holds one trajectory at a time, with the tasks table, and, for
// tau2, the run's info: memory is bounded by the largest trajectory, not
// the file. The tasks table holds each task's row, in the order first
// seen; tasks are small beside their trajectories.
type Reader struct {
	name   string
	format Format
	src    source
	closer io.Closer

	doc   jsonview.Doc
	log   logWriter
	turns turnWriter
	out   []byte
	buf   []byte // scratch for texts built before the rollout

	tasks     map[string][]byte
	taskOrder []string
	done      bool
}

// Open opens the file at path in format f. An Inspect file that is a zip
// (by its first bytes) is read as an .eval archive; other files whose
// name ends in .gz or .zst are decompressed.
func Open(path string, f Format) (*Reader, error) {
	if _, err := ParseFormat(string(f)); err != nil {
		return nil, err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := OpenFile(path, file, f)
	if err != nil {
		file.Close()
		return nil, err
	}
	return r, nil
}

// File is a log file open for reading: *os.File, or an object read with
// range requests.
type File interface {
	io.Reader
	io.ReaderAt
	io.Closer
	Stat() (fs.FileInfo, error)
}

// OpenFile is Open for a file already open, named path; the Reader's
// Close closes it. On an error the file is left open.
func OpenFile(path string, file File, f Format) (*Reader, error) {
	if f == Inspect {
		var magic [4]byte
		n, _ := file.ReadAt(magic[:], 0)
		if IsEvalArchive(path) || IsZip(magic[:n]) {
			st, err := file.Stat()
			if err != nil {
				return nil, err
			}
			r, err := NewEvalReader(path, newReadAhead(file, readAheadBytes), st.Size())
			if err != nil {
				return nil, err
			}
			r.closer = file
			return r, nil
		}
	}
	in, closer, err := decompress(path, file)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(path, in, f)
	if err != nil {
		return nil, err
	}
	r.closer = closer
	if f == NemoGym {
		// The task fields of the run's materialized inputs, beside the
		// file, fill those the rollouts lack.
		if err := r.src.(*nemoGym).joinInputs(path); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// decompress returns the reader of file, named path: decompressed when
// the name ends in .gz or .zst, and what closes it (and file).
func decompress(path string, file io.ReadCloser) (io.Reader, io.Closer, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".gz":
		zr, err := gzip.NewReader(file)
		if err != nil {
			return nil, nil, fmt.Errorf("open %s: gzip: %w", path, err)
		}
		return zr, file, nil
	case ".zst":
		zr, err := zstd.NewReader(file, zstd.WithDecoderMaxWindow(128<<20), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, fmt.Errorf("open %s: zstd: %w", path, err)
		}
		return zr.IOReadCloser(), closers{zr.IOReadCloser(), file}, nil
	}
	return file, file, nil
}

type closers []io.Closer

func (c closers) Close() error {
	var errs []error
	for _, x := range c {
		errs = append(errs, x.Close())
	}
	return errors.Join(errs...)
}

// NewReader reads a stream in format f; name is used in messages, in the
// default rollout ids of the messages format, and, for tau-bench, its
// stem in every rollout id (stdin for "-", standard input). An Inspect
// stream is a .json EvalLog: use NewEvalReader for an .eval archive.
func NewReader(name string, in io.Reader, f Format) (*Reader, error) {
	r := &Reader{name: name, format: f}
	switch f {
	case Inspect:
		r.src = &inspectJSON{s: newStream(name, in)}
	case TauBench:
		r.src = &tauBench{s: newStream(name, in), stem: fileStem(name)}
	case Tau2:
		r.src = &tau2{s: newStream(name, in)}
	case Messages:
		br, _ := skipBOM(in)
		r.src = &messages{br: br, maxLine: defaultMaxLine}
	case NemoGym:
		br, _ := skipBOM(in)
		r.src = &nemoGym{lines: messages{br: br, maxLine: defaultMaxLine}, stem: fileStem(name)}
	case ATIF:
		r.src = newATIF(name, in)
	default:
		_, err := ParseFormat(string(f))
		return nil, err
	}
	return r, nil
}

// Next returns the next trajectory. It returns io.EOF after the last one,
// and an error of the file (a truncated or malformed archive or array,
// naming the byte offset) when no more can be read; the items read
// before stay valid results.
func (r *Reader) Next() (Item, error) {
	if r.done {
		return Item{}, io.EOF
	}
	it, err := r.src.next(r)
	if err != nil {
		r.done = true
	}
	return it, err
}

// Task returns the task row of taskID, a JSON object whose first member
// is task_id. The rows of a file that writes its tasks before its
// trajectories (as the harnesses do) are known from the start; others
// are complete once Next has returned io.EOF.
func (r *Reader) Task(taskID string) ([]byte, bool) {
	t, ok := r.tasks[taskID]
	return t, ok
}

// TaskIDs returns the ids of the tasks read so far, in the order first
// seen.
func (r *Reader) TaskIDs() []string { return r.taskOrder }

// Close closes the file Open opened.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	err := r.closer.Close()
	r.closer = nil
	return err
}

// addTask keeps the row of a task first seen; idBody is its id as the
// body of a JSON string, and row is copied.
func (r *Reader) addTask(idBody []byte, row []byte) {
	id := unescapeID(idBody)
	if _, ok := r.tasks[string(id)]; ok {
		return
	}
	if r.tasks == nil {
		r.tasks = make(map[string][]byte)
	}
	k := string(id)
	r.tasks[k] = bytes.Clone(row)
	r.taskOrder = append(r.taskOrder, k)
}

// task returns the row of task idBody kept so far, or nil; idBody is its
// id as the body of a JSON string.
func (r *Reader) task(idBody []byte) []byte {
	return r.tasks[string(unescapeID(idBody))]
}

// hasTask reports whether the row of a task is kept; idBody is its id as
// the body of a JSON string.
func (r *Reader) hasTask(idBody []byte) bool {
	_, ok := r.tasks[string(unescapeID(idBody))]
	return ok
}

// taskRow appends the row of task idBody, when not kept yet: task_id,
// then what fill appends.
func (r *Reader) taskRow(idBody []byte, fill func(t *object)) {
	if r.hasTask(idBody) {
		return
	}
	var t object
	t.begin(r.buf[:0])
	t.key("task_id")
	t.b = append(append(append(t.b, '"'), idBody...), '"')
	fill(&t)
	r.buf = t.end()
	r.addTask(idBody, r.buf)
}

// stdinStem is the stem of the name "-", standard input, in rollout ids.
const stdinStem = "stdin"

// fileStem is a file's base name without its extensions (.json, and .gz
// or .zst before it); that of "-", standard input, is stdinStem.
func fileStem(name string) string {
	if name == "-" {
		return stdinStem
	}
	base := filepath.Base(name)
	for _, ext := range []string{".gz", ".zst", ".json", ".jsonl", ".ndjson"} {
		if len(base) > len(ext) && strings.EqualFold(base[len(base)-len(ext):], ext) {
			base = base[:len(base)-len(ext)]
		}
	}
	return base
}

// unescapeID returns the text of an id built as the body of a JSON string.
func unescapeID(b []byte) []byte {
	if bytes.IndexByte(b, '\\') < 0 {
		return b
	}
	var d jsonview.Doc
	q := append(append([]byte{'"'}, b...), '"')
	v, err := d.Parse(q)
	if err != nil {
		return b
	}
	s, _ := v.Str()
	return s
}
