package inputs

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/store"
)

// DefaultRowGroupsPerUnit is Config.RowGroupsPerUnit when it is 0.
const DefaultRowGroupsPerUnit = 16

// Describe describes every input file, opening it once through open
// (os.Open when nil), .json files as logs of the harness format from, and
// standard input, read from stdin, as a log of that format too when from
// is given (its first trajectory read ahead; see
// columnar.DescribeStream), else as JSON Lines or an Arrow IPC stream
// (stdinFormat, "" to tell them apart by the first bytes; see
// columnar.DescribeStdin); it returns the units of the run numbered in
// input order: every Parquet file with more than perUnit row groups is
// cut into units of perUnit consecutive row groups (the last may hold
// fewer), other files are one unit each. The cut depends only on the files and perUnit,
// never on --shard, so that a sharded run writes exactly the parts of an
// unsharded one. A file that cannot be described stays one unit, which
// fails with that error when its turn to be read comes.
func Describe(files []Unit, perUnit int, open columnar.OpenFunc, from, stdinFormat string, stdin io.Reader) []Unit {
	var units []Unit
	for _, u := range files {
		u.rows = -1
		if u.Path == Stdin {
			if from != "" {
				u.input, u.spool, u.err = columnar.DescribeStream(Stdin, stdin, from)
			} else {
				u.input, u.err = columnar.DescribeStdin(Stdin, stdin, stdinFormat)
				if u.input != nil {
					u.Format = u.input.Format
				}
			}
			u.Index = len(units)
			units = append(units, u)
			continue
		}
		uopen := open
		if u.src != "" {
			uopen = u.openObject
		}
		in, err := columnar.Describe(u.Path, columnar.DescribeOptions{RowGroupsPerUnit: perUnit, Open: uopen, From: from})
		if err != nil {
			u.Index = len(units)
			u.err = err
			units = append(units, u)
			continue
		}
		for _, iu := range in.Units {
			r := u
			r.Index = len(units)
			r.FirstRowGroup, r.RowGroups, r.rows = iu.FirstRowGroup, iu.RowGroups, iu.Rows
			r.input = in
			units = append(units, r)
		}
	}
	return units
}

// Shard selects the input units of one shard process: those whose index
// modulo Count is Index. The zero value (Count 0) selects every unit.
type Shard struct {
	Index int
	Count int
}

// String returns "I/N", or "" for the zero Shard.
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Has reports whether the shard grades unit index.
func (s Shard) Has(index int) bool {
	return s.Count <= 1 || index%s.Count == s.Index
}

// arrayIndexVars are the environment variables that number the tasks of an
// array job, in the order they are tried. Slurm's is handled apart: its
// task ids need not start at 0.
var arrayIndexVars = []string{"JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX", "CLOUD_RUN_TASK_INDEX"}

// ParseShard parses "I/N" (0 <= I < N) or "auto/N", which takes I from the
// environment of an array job through getenv: JOB_COMPLETION_INDEX
// (Kubernetes Indexed Job), SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN
// (Slurm array), AWS_BATCH_JOB_ARRAY_INDEX (AWS Batch) or
// CLOUD_RUN_TASK_INDEX (Cloud Run jobs). getenv nil means os.Getenv.
func ParseShard(s string, getenv func(string) string) (Shard, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	is, ns, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 1 {
		return Shard{}, &ConfigError{Field: "Shard", Msg: fmt.Sprintf("%q: want I/N or auto/N with N >= 1", s)}
	}
	var i int
	if is == "auto" {
		i, err = shardFromEnv(getenv)
		if err != nil {
			return Shard{}, err
		}
	} else if i, err = strconv.Atoi(is); err != nil {
		return Shard{}, &ConfigError{Field: "Shard", Msg: fmt.Sprintf("%q: want I/N or auto/N with N >= 1", s)}
	}
	if i < 0 || i >= n {
		return Shard{}, &ConfigError{Field: "Shard", Msg: fmt.Sprintf("%d/%d: the index must be between 0 and %d", i, n, n-1)}
	}
	return Shard{Index: i, Count: n}, nil
}

func shardFromEnv(getenv func(string) string) (int, error) {
	atoi := func(name string) (int, error) {
		v := getenv(name)
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, &ConfigError{Field: "Shard", Msg: fmt.Sprintf("auto: %s=%q is not a number", name, v)}
		}
		return n, nil
	}
	for _, name := range arrayIndexVars {
		if getenv(name) != "" {
			return atoi(name)
		}
	}
	if getenv("SLURM_ARRAY_TASK_ID") != "" {
		id, err := atoi("SLURM_ARRAY_TASK_ID")
		if err != nil {
			return 0, err
		}
		lo := 0
		if getenv("SLURM_ARRAY_TASK_MIN") != "" {
			if lo, err = atoi("SLURM_ARRAY_TASK_MIN"); err != nil {
				return 0, err
			}
		}
		return id - lo, nil
	}
	return 0, &ConfigError{Field: "Shard", Msg: "auto: no array-job index in the environment (JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID, AWS_BATCH_JOB_ARRAY_INDEX or CLOUD_RUN_TASK_INDEX)"}
}

// openObject opens the unit's object; name is its redacted URL. The first
// open pins the object's ETag (and size): a later open finding another
// ETag fails, naming the object, so that every unit of an input reads
// the object the run was planned from.
func (u *Unit) openObject(name string) (columnar.File, error) {
	f, err := store.OpenFile(context.Background(), u.src)
	if err != nil {
		return nil, err
	}
	switch {
	case u.ETag == "" && u.input == nil:
		u.ETag = f.ETag()
		if u.Size != f.Size() {
			u.Size = f.Size()
		}
	case f.ETag() != u.ETag || f.Size() != u.Size:
		f.Close()
		return nil, fmt.Errorf("open %s: the object changed since the run started (ETag %s, size %d; now %s, %d)", name, u.ETag, u.Size, f.ETag(), f.Size())
	}
	return f, nil
}

// ChatWarnings returns a warning for each input file of units read as a
// table (Parquet, Arrow, JSON Lines; from, --from, is "") that has a messages
// column and no column output, the column of the output field: a file of
// chats graded as rows, every rollout against an empty output.
func ChatWarnings(units []Unit, output, from string) []string {
	if from != "" {
		return nil
	}
	output, _, _ = strings.Cut(output, ".") // a nested field's column
	var out []string
	seen := map[*columnar.Input]bool{}
	for _, u := range units {
		in := u.input
		if in == nil || seen[in] {
			continue
		}
		seen[in] = true
		switch in.Format {
		case columnar.InputParquet, columnar.InputArrow, columnar.InputJSONL, columnar.InputArrowStream:
		default:
			continue
		}
		if slices.Contains(in.Columns, "messages") && !slices.Contains(in.Columns, output) {
			out = append(out, fmt.Sprintf("%s: a messages column and no %s column: every rollout is graded against an empty output; read the file as chats with --from messages", u.Path, output))
		}
	}
	return out
}
