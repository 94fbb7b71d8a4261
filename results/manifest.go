package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/verifiers"
)

// Files of the output directory besides the parts.
const (
	ManifestFile = "manifest.json"
	SummaryFile  = "summary.json"
	SuccessFile  = "_SUCCESS"
	ShardsDir    = "_shards"
)

// Manifest is manifest.json: what produced the results and which parts
// are complete. A shard process writes its own manifest under _shards; it
// lists every unit of the run, complete or not, and Commit joins them.
type Manifest struct {
	Version   string             `json:"gavel_version"`
	Shard     string             `json:"shard,omitempty"`
	Verifiers []ManifestVerifier `json:"verifiers"`
	Config    RunConfig          `json:"config"`
	Inputs    []ManifestInput    `json:"inputs"`
	// ImpureVerifiers lists the remote verifiers asked although not
	// declared stateless (--allow-impure): their rows are never reused.
	ImpureVerifiers []string `json:"impure_verifiers,omitempty"`
}

// RunConfig is the part of a run's configuration that decides its results
// and parts, normalised: a default left implicit and the same value given
// explicitly are equal, and tuning (workers, batch size, progress) is not
// in it. With the verifiers and the inputs it is a run's identity: a
// resumed run and the shards of one run must have equal RunConfigs.
type RunConfig struct {
	// Format is the output format.
	Format string `json:"format"`
	// Fields are the input columns of the rollout fields.
	Fields RunFields `json:"fields"`
	// Keep are the metadata columns copied into the rewards, as resolved.
	Keep []string `json:"keep"`
	// Flags is set when the run wrote the columns of a run with flags
	// (the checks' kind, the rewards' flags).
	Flags bool `json:"flags,omitempty"`
	// Health is set when the run computed the health flags (--health on).
	Health bool `json:"health,omitempty"`
	// Turns is set when the run wrote the columns of a run that scores
	// turns (the rewards' turn_rewards and turns, the checks' turn).
	Turns bool `json:"turns,omitempty"`
	// TasksFile is the tasks table ("" when none).
	TasksFile string `json:"tasks_file"`
	// MaxLineBytes bounds one JSON Lines line.
	MaxLineBytes int `json:"max_line_bytes"`
	// StructNulls is "absent" when null struct fields of nested columns
	// are absent members, and "" for the default, members with value
	// null (so that manifests written before the setting existed match).
	StructNulls string `json:"struct_nulls,omitempty"`
	// Timeout bounds one verifier call ("none" when unbounded).
	Timeout string `json:"timeout"`
	// From is the harness format .json inputs are read in ("" when none).
	From string `json:"from,omitempty"`
	// Set is the constant metadata of every row, as K=V.
	Set []string `json:"set,omitempty"`
	// Shards is the number of shard processes of a sharded run; a
	// committed run's manifest, like a single process's, has none.
	Shards int `json:"shards,omitempty"`
	// Judge is the run's judge of rubric checks (absent when none judges).
	Judge *RunJudge `json:"judge,omitempty"`
	// Rewards are the reward formulas by verifier id of the verifiers
	// whose formula is not fraction (absent when none has one).
	Rewards map[string]verifiers.Formula `json:"rewards,omitempty"`
}

// RunJudge is the run's judge as manifest.json records it: never the API
// key, and the URL without user information or query. A verifier's own
// judge settings are in its fingerprint.
type RunJudge struct {
	// Model is the run's judge model ("" when only verifiers name one).
	Model string `json:"model"`
	// URL is the server's API root.
	URL string `json:"url"`
	// Threshold is the score a rubric check needs to pass.
	Threshold float64 `json:"threshold"`
	// Template is the prompt template's version and fingerprint.
	Template string `json:"template"`
	// The fields below are set only by runs where some rubric check gets
	// more than one judgement (a one-judge run's manifest has none).
	// Models are the run's judge models, in order.
	Models []string `json:"models,omitempty"`
	// URLs are the API roots of the models not at URL.
	URLs map[string]string `json:"urls,omitempty"`
	// Samples is the number of judgements asked of each model.
	Samples int `json:"samples,omitempty"`
	// Temperature is the temperature of samples 1 and later.
	Temperature float64 `json:"temperature,omitempty"`
	// Aggregate makes a check's score of its judgements' scores.
	Aggregate string `json:"aggregate,omitempty"`
	// Partial is "ok" when a check aggregates the judgements that
	// succeeded, "error" when a failed judgement makes it an error.
	Partial string `json:"partial,omitempty"`
}

// RunFields are columnar.FieldNames as written in manifest.json.
type RunFields struct {
	ID      string `json:"rollout_id"`
	Task    string `json:"task_id"`
	Final   string `json:"final_state"`
	Initial string `json:"initial_state"`
	Output  string `json:"output"`
	Log     string `json:"log"`
	// Messages is the column of rows' chat messages, read for their
	// turns; set only in a run that scores turns.
	Messages string `json:"messages,omitempty"`
}

// differences lists how o, written by an earlier run, differs from c, one
// "name: o's value there, c's given" per differing setting.
func (c *RunConfig) Differences(o *RunConfig) []string {
	var out []string
	diff := func(name, mine, theirs string) {
		if mine != theirs {
			out = append(out, fmt.Sprintf("%s: %s there, %s given", name, orNone(theirs), orNone(mine)))
		}
	}
	diff("format", c.Format, o.Format)
	fields := func(f RunFields) [][2]string {
		return [][2]string{{columnar.FieldID, f.ID}, {columnar.FieldTask, f.Task}, {columnar.FieldFinal, f.Final},
			{columnar.FieldInitial, f.Initial}, {columnar.FieldOutput, f.Output}, {columnar.FieldLog, f.Log}, {columnar.FieldMessages, f.Messages}}
	}
	mine, theirs := fields(c.Fields), fields(o.Fields)
	for i := range mine {
		diff(mine[i][0]+" column", mine[i][1], theirs[i][1])
	}
	diff("kept columns", strings.Join(c.Keep, ","), strings.Join(o.Keep, ","))
	diff("tasks file", c.TasksFile, o.TasksFile)
	diff("line limit", strconv.Itoa(c.MaxLineBytes), strconv.Itoa(o.MaxLineBytes))
	structNulls := func(s string) string {
		if s == "" {
			return columnar.StructNullsMember.String()
		}
		return s
	}
	diff("struct nulls", structNulls(c.StructNulls), structNulls(o.StructNulls))
	diff("timeout", c.Timeout, o.Timeout)
	diff("harness format", c.From, o.From)
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	diff("health flags", onOff(c.Health), onOff(o.Health))
	diff("constant metadata", strings.Join(c.Set, ","), strings.Join(o.Set, ","))
	diff("shards", strconv.Itoa(max(c.Shards, 1)), strconv.Itoa(max(o.Shards, 1)))
	judgeText := func(j *RunJudge) string {
		if j == nil {
			return ""
		}
		t := fmt.Sprintf("model %s at %s, threshold %g, template %s", orNone(j.Model), j.URL, j.Threshold, j.Template)
		if len(j.Models) > 0 {
			var urls []string
			for _, m := range sortedKeys(j.URLs) {
				urls = append(urls, m+"="+j.URLs[m])
			}
			t += fmt.Sprintf(", models %s (at %s), %d samples at temperature %g, aggregate %s, partial %s",
				strings.Join(j.Models, ","), strings.Join(urls, ","), j.Samples, j.Temperature, j.Aggregate, j.Partial)
		}
		return t
	}
	diff("judge", judgeText(c.Judge), judgeText(o.Judge))
	rewardsText := func(r map[string]verifiers.Formula) string {
		var parts []string
		for _, id := range sortedKeys(r) {
			parts = append(parts, id+" "+r[id].String())
		}
		return strings.Join(parts, ", ")
	}
	diff("reward formulas", rewardsText(c.Rewards), rewardsText(o.Rewards))
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ManifestVerifier identifies one loaded verifier.
type ManifestVerifier struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Tasks       []string `json:"tasks"`
	Source      string   `json:"source"`
	Fingerprint string   `json:"fingerprint"`
}

// ManifestInput is one input unit and the state of its part.
type ManifestInput struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// ETag pins an object of object storage as the run found it (absent
	// for a local file): a resumed run or a commit refuses an input whose
	// ETag changed.
	ETag string `json:"etag,omitempty"`
	// FirstRowGroup and RowGroups give the row-group range of a unit that
	// is part of a large Parquet file (absent: the whole file).
	FirstRowGroup int `json:"first_row_group,omitempty"`
	RowGroups     int `json:"row_groups,omitempty"`
	// Rows is the number of rows read (null until the part is complete).
	Rows     *int64 `json:"rows"`
	Part     string `json:"part"`
	Complete bool   `json:"complete"`
	// Error says why the unit could not be graded, when it could not.
	Error string `json:"error,omitempty"`
	// ModTime and Digest identify the file's content as it was read: its
	// modification time and a fast digest (inputDigest); a later run with
	// Config.Reuse copies the unit's parts whole when they are unchanged.
	ModTime string `json:"mod_time,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

func (m *Manifest) Complete(unit int, rows int64) {
	m.Inputs[unit].Rows = &rows
	m.Inputs[unit].Complete = true
	m.Inputs[unit].Error = ""
}

// ErrNoConfig is sameRun's answer for a manifest written before manifests
// recorded the run's configuration: such a run cannot be resumed.
var ErrNoConfig = errors.New("its manifest predates the config section that identifies a run; it cannot be continued, grade it again from the start")

// SameRun reports how o, read from an output directory, differs from m in
// what decides the results (nil when it does not).
func (m *Manifest) SameRun(o *Manifest) error {
	strip := func(in []ManifestInput) []ManifestInput {
		out := make([]ManifestInput, len(in))
		for i, x := range in {
			out[i] = ManifestInput{Path: x.Path, Size: x.Size, ETag: x.ETag, FirstRowGroup: x.FirstRowGroup, RowGroups: x.RowGroups, Part: x.Part}
		}
		return out
	}
	switch {
	case m.Version != o.Version:
		return fmt.Errorf("gavel version %s, not %s", o.Version, m.Version)
	case o.Config.Format == "":
		return ErrNoConfig
	case !reflect.DeepEqual(m.Verifiers, o.Verifiers):
		return fmt.Errorf("other verifiers (%s)", verifierDifference(m.Verifiers, o.Verifiers))
	}
	if d := m.Config.Differences(&o.Config); len(d) > 0 {
		return fmt.Errorf("other configuration (%s)", strings.Join(d, "; "))
	}
	if mine, theirs := strip(m.Inputs), strip(o.Inputs); !reflect.DeepEqual(mine, theirs) {
		for i := range min(len(mine), len(theirs)) {
			a, b := theirs[i], mine[i]
			if a.Path == b.Path && (a.Size != b.Size || a.ETag != b.ETag) {
				return fmt.Errorf("other inputs: %s changed (size %d, ETag %s there; size %d, ETag %s now)", a.Path, a.Size, orNone(a.ETag), b.Size, orNone(b.ETag))
			}
		}
		return errors.New("other inputs (paths, sizes or row groups differ)")
	}
	// A file rewritten to the same size: its digest (recorded for local
	// files; absent from manifests written before it) tells.
	for i := range m.Inputs {
		a, b := o.Inputs[i], m.Inputs[i]
		if a.Digest != "" && b.Digest != "" && a.Digest != b.Digest {
			return fmt.Errorf("other inputs: %s changed (its content differs)", a.Path)
		}
	}
	return nil
}

// SameModTimes reports, as an error naming the first, a local input whose
// modification time differs from the one o records: a file rewritten in
// place may keep its size and the bytes the digest reads (its first and
// last MiB), but not its time. --resume checks it; gavel commit does not,
// as shards on other machines may read copies of a file made at other
// times.
func (m *Manifest) SameModTimes(o *Manifest) error {
	for i := range min(len(m.Inputs), len(o.Inputs)) {
		a, b := o.Inputs[i], m.Inputs[i]
		if a.ModTime != "" && b.ModTime != "" && a.ModTime != b.ModTime {
			return fmt.Errorf("other inputs: %s changed (modified at %s there, %s now)", a.Path, a.ModTime, b.ModTime)
		}
	}
	return nil
}

// verifierDifference names the first verifier that differs between
// theirs, read from an output directory, and mine, in the words of
// RunConfig.differences.
func verifierDifference(mine, theirs []ManifestVerifier) string {
	short := func(fp string) string { return fp[:min(len(fp), 12)] }
	for i := range max(len(mine), len(theirs)) {
		switch {
		case i >= len(mine):
			return fmt.Sprintf("%s there, not given", theirs[i].ID)
		case i >= len(theirs):
			return fmt.Sprintf("%s given, not there", mine[i].ID)
		}
		a, b := theirs[i], mine[i]
		switch {
		case a.ID != b.ID:
			return fmt.Sprintf("%s there, %s given", a.ID, b.ID)
		case a.Fingerprint != b.Fingerprint:
			return fmt.Sprintf("%s: fingerprint %s there, %s given", a.ID, short(a.Fingerprint), short(b.Fingerprint))
		case !reflect.DeepEqual(a, b):
			return fmt.Sprintf("%s: name, tasks or source differ", a.ID)
		}
	}
	return "none differs"
}

func ReadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &m, nil
}

// ShardBase returns the file name prefix of a shard's manifest and summary.
func ShardBase(index, count int) string {
	return fmt.Sprintf("shard-%d-of-%d", index, count)
}

// Rows returns the rows the manifest counts in every unit, or -1 when
// a unit's are unknown.
func (m *Manifest) Rows() int64 {
	var n int64
	for _, in := range m.Inputs {
		if in.Rows == nil {
			return -1
		}
		n += *in.Rows
	}
	return n
}
