package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// StatsDir holds one statistics file per completed part, written before the
// part is renamed into place. summary.json is always the merge of these
// files in unit order, whether the parts were written by one process, by a
// resumed run or by shard processes, so the summary of any of these runs is
// the same, float for float.
const StatsDir = "_stats"

// maxDuplicateList bounds the duplicate rollout ids listed in the summary.
const maxDuplicateList = 100

// rawCounts is Counts with the sums that merging needs; float64 values
// survive the JSON round trip exactly.
type rawCounts struct {
	verifiers.Counts
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	RewardSum  float64          `json:"reward_sum"`
	RewardN    int64            `json:"reward_n"`
}

func (c *Counts) raw() rawCounts {
	return rawCounts{c.Counts, c.ErrorKinds, c.rewardSum, c.rewardN}
}

// merge adds r to c.
func (c *Counts) merge(r rawCounts) {
	c.Counts.Merge(r.Counts)
	for k, n := range r.ErrorKinds {
		if c.ErrorKinds == nil {
			c.ErrorKinds = map[string]int64{}
		}
		c.ErrorKinds[k] += n
	}
	c.rewardSum += r.RewardSum
	c.rewardN += r.RewardN
}

// PartStats are the statistics of one completed part.
type PartStats struct {
	Unit   int    `json:"unit"`
	Path   string `json:"path"`
	Rows   int64  `json:"rows"`
	Checks int64  `json:"checks"`
	// Unextracted is the summary's count of math checks that found no
	// answer, per "VERIFIER/CHECK"; absent when none.
	Unextracted map[string]int64 `json:"unextracted,omitempty"`
	// Flags and Flagged are the summary's counts of flags (absent in a
	// run without flags).
	Flags     map[string]*FlagCounts `json:"flags,omitempty"`
	Flagged   int64                  `json:"flagged,omitempty"`
	Total     rawCounts              `json:"total"`
	Verifiers map[string]rawCounts   `json:"verifiers"`
	Tasks     map[string]rawCounts   `json:"tasks"`
	// RetryRows counts the part's rows whose result may differ when they
	// are graded again (retryRow): --reuse copies a part whole only when
	// it has none. Nil in statistics written before it was counted: such
	// a part may hold some, so it is never copied whole.
	RetryRows *int64 `json:"retry_rows,omitempty"`
}

// NewPartStats returns the statistics of a part from the counts gathered
// while it was written; the caller sets RetryRows.
func NewPartStats(unit int, path string, rows int64, s *Summary) *PartStats {
	ps := &PartStats{Unit: unit, Path: path, Rows: rows, Checks: s.Checks, Unextracted: s.Unextracted,
		Flags: s.Flags, Flagged: s.Flagged, Total: s.Counts.raw(),
		Verifiers: map[string]rawCounts{}, Tasks: map[string]rawCounts{}}
	for k, c := range s.Verifiers {
		ps.Verifiers[k] = c.raw()
	}
	for k, c := range s.Tasks {
		ps.Tasks[k] = c.raw()
	}
	return ps
}

func StatsPath(dir string, unit int) string {
	return filepath.Join(dir, StatsDir, fmt.Sprintf("part-%05d.json", unit))
}

func WriteStats(dir string, ps *PartStats) error {
	if err := os.MkdirAll(filepath.Join(dir, StatsDir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(dir, StatsDir), err)
	}
	return WriteJSON(StatsPath(dir, ps.Unit), ps, false)
}

func ReadStats(dir string, unit int) (*PartStats, error) {
	data, err := os.ReadFile(StatsPath(dir, unit))
	if err != nil {
		return nil, err
	}
	var ps PartStats
	if err := json.Unmarshal(data, &ps); err != nil {
		return nil, fmt.Errorf("read %s: %w", StatsPath(dir, unit), err)
	}
	if ps.Unit != unit {
		return nil, fmt.Errorf("read %s: holds unit %d", StatsPath(dir, unit), ps.Unit)
	}
	return &ps, nil
}

// PartDone returns the statistics of unit's part, named name, when the
// part is complete in dir: its statistics file and both part files exist
// under their final names. It returns nil when the part is absent or
// incomplete.
func PartDone(dir string, unit int, name string) *PartStats {
	for _, sub := range []string{"rewards", "checks"} {
		if _, err := os.Stat(filepath.Join(dir, sub, name)); err != nil {
			return nil
		}
	}
	ps, err := ReadStats(dir, unit)
	if err != nil {
		return nil
	}
	return ps
}

// MergeStats merges part statistics, which must be in unit order, into a
// summary.
func MergeStats(parts []*PartStats, skipped []string) *Summary {
	s := NewSummary(skipped)
	for _, ps := range parts {
		s.Counts.merge(ps.Total)
		s.Checks += ps.Checks
		for k, n := range ps.Unextracted {
			if s.Unextracted == nil {
				s.Unextracted = map[string]int64{}
			}
			s.Unextracted[k] += n
		}
		for k, c := range ps.Flags {
			s.addFlag(k, verifiers.FlagRaised, c.Raised)
			s.addFlag(k, verifiers.FlagClear, c.Clear)
			s.addFlag(k, verifiers.CheckError, c.Error)
		}
		s.Flagged += ps.Flagged
		mergeGroups(s.Verifiers, ps.Verifiers)
		mergeGroups(s.Tasks, ps.Tasks)
	}
	s.finish()
	return s
}

// mergeGroups merges the counts of src into dst, group by group, in key
// order.
func mergeGroups(dst map[string]*Counts, src map[string]rawCounts) {
	for _, k := range sortedKeys(src) {
		c := dst[k]
		if c == nil {
			c = &Counts{}
			dst[k] = c
		}
		c.merge(src[k])
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FindDuplicates counts the rows of the rewards parts of units (of the
// given statistics) whose rollout id appeared in an earlier row, listing up
// to maxDuplicateList of the ids concerned in lexicographic order. Ids are
// first counted by their hashes (repeatedHashes); only when hashes repeat
// are the rewards read back and those ids compared.
//
// For an output URL (remote not nil), dir is the staging directory: the
// rewards parts it lacks are downloaded before they are read.
func FindDuplicates(dir, format string, parts []*PartStats, remote *Objects) (count int64, list []string, err error) {
	units := make([]int, len(parts))
	rows := make([]int64, len(parts))
	for i, ps := range parts {
		units[i], rows[i] = ps.Unit, ps.Rows
	}
	repeated, err := repeatedHashes(dir, format, units, rows)
	if err != nil || len(repeated) == 0 {
		return 0, []string{}, err
	}
	if remote != nil {
		for _, u := range units {
			if err := remote.Get(dir, "rewards/"+columnar.PartName(u, format)); err != nil {
				return 0, nil, err
			}
		}
	}
	ids := map[string]int{}
	err = eachRolloutID(dir, format, units, func(id []byte) {
		if !repeated[hashID(id)] {
			return
		}
		if n := ids[string(id)]; n > 0 {
			count++
		}
		ids[string(id)]++
	})
	if err != nil {
		return 0, nil, err
	}
	list = []string{}
	for id, n := range ids {
		if n > 1 {
			list = append(list, id)
		}
	}
	sort.Strings(list)
	if len(list) > maxDuplicateList {
		list = list[:maxDuplicateList]
	}
	return count, list, nil
}

// eachRolloutID calls fn with the rollout id of every row of the rewards
// parts of units, in order. The slice is valid only during the call.
func eachRolloutID(dir, format string, units []int, fn func(id []byte)) error {
	fields := columnar.FieldNames{}.WithDefaults()
	var doc jsonview.Doc
	for _, u := range units {
		path := filepath.Join(dir, "rewards", columnar.PartName(u, format))
		rd, err := columnar.Open(path, columnar.Options{})
		if err != nil {
			return fmt.Errorf("read back %s: %w", path, err)
		}
		for {
			b, err := rd.Next(1024)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rd.Close()
				return fmt.Errorf("read back %s: %w", path, err)
			}
			for i := range b.Rows {
				row := &b.Rows[i]
				if b.JSONLines {
					if _, err := columnar.DecodeLine(row, &fields, &doc); err != nil {
						b.Release()
						rd.Close()
						return fmt.Errorf("read back %s: %w", path, err)
					}
				}
				fn(row.ID.Data)
			}
			b.Release()
		}
		rd.Close()
	}
	return nil
}
