package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/internal/store"
)

// Errors of Commit, returned wrapped with the details.
var (
	// ErrNoShards: the directory holds no shard manifest.
	ErrNoShards = errors.New("no shard manifests")
	// ErrIncomplete: a shard lacks parts.
	ErrIncomplete = errors.New("incomplete")
)

var shardManifestName = regexp.MustCompile(`^shard-(\d+)-of-(\d+)\.manifest\.json$`)

// Commit joins the shards of a sharded run in dir: it checks that every
// shard's manifest is there and describes the same run, and that every
// unit's part is complete; then it writes manifest.json and summary.json,
// as one process grading every unit would have (the timing fields aside:
// elapsed_seconds is the longest shard's), and finally _SUCCESS. A missing
// shard or part is an error that names them, and nothing is written.
//
// dir may be an output URL: the shards' files are then read from its
// listing, and the joined files uploaded, _SUCCESS last.
func Commit(dir string) (*Summary, error) {
	if !store.IsURL(dir) {
		return commit(dir, dir, nil)
	}
	remote, err := OpenObjects(context.Background(), dir)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", store.Redact(dir), err)
	}
	defer remote.Close()
	local, err := Stage()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(local)
	for rel := range remote.keys {
		if sub, name, ok := strings.Cut(rel, "/"); ok && sub == ShardsDir && !strings.Contains(name, "/") && strings.HasPrefix(name, "shard-") {
			if err := remote.Get(local, rel); err != nil {
				return nil, fmt.Errorf("commit %s: %w", remote.name, err)
			}
		}
	}
	return commit(remote.name, local, remote)
}

// commit is Commit of the directory local, named name in messages; for an
// output URL local is a staging directory and remote its listing.
func commit(name, local string, remote *Objects) (*Summary, error) {
	dir := local
	shardsName := filepath.Join(name, ShardsDir)
	if remote != nil {
		shardsName = strings.TrimSuffix(name, "/") + "/" + ShardsDir
	}
	entries, err := os.ReadDir(filepath.Join(dir, ShardsDir))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("commit %s: %w", name, err)
	}
	manifests := map[int]*Manifest{}
	count := 0
	for _, e := range entries {
		m := shardManifestName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		if count != 0 && n != count {
			return nil, fmt.Errorf("commit %s: shards of two runs (of %d and of %d shards) in %s", name, count, n, shardsName)
		}
		count = n
		mf, err := ReadManifest(filepath.Join(dir, ShardsDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", name, err)
		}
		manifests[i] = mf
	}
	if count == 0 {
		return nil, fmt.Errorf("commit %s: %w in %s", name, ErrNoShards, shardsName)
	}
	var missing []string
	for i := 0; i < count; i++ {
		if manifests[i] == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i, count))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("commit %s: shard %s missing: no manifest (did every shard run?)", name, strings.Join(missing, ", "))
	}
	base := manifests[0]
	for i := 1; i < count; i++ {
		// Shard 0 is the reference: its values are "there", shard i's
		// "given".
		if err := manifests[i].SameRun(base); err != nil {
			return nil, fmt.Errorf("commit %s: shard %d/%d is of another run than shard 0/%d: %w", name, i, count, count, err)
		}
	}

	merged := *base
	merged.Shard = ""
	merged.Config.Shards = 0
	// A remote verifier found impure by any shard is impure for the run:
	// a later --reuse must not take its rows.
	var impure []string
	for i := 0; i < count; i++ {
		impure = append(impure, manifests[i].ImpureVerifiers...)
	}
	merged.ImpureVerifiers = sortedSet(impure)
	merged.Inputs = make([]ManifestInput, len(base.Inputs))
	var stats []*PartStats
	incomplete := map[int][]string{}
	for u, in := range base.Inputs {
		var ps *PartStats
		if remote != nil {
			ps = remote.PartDone(dir, u, in.Part)
		} else {
			ps = PartDone(dir, u, in.Part)
		}
		if ps == nil {
			incomplete[u%count] = append(incomplete[u%count], in.Part)
			continue
		}
		in.Rows, in.Complete, in.Error = &ps.Rows, true, ""
		merged.Inputs[u] = in
		stats = append(stats, ps)
	}
	if len(incomplete) > 0 {
		var msgs []string
		shards := make([]int, 0, len(incomplete))
		for s := range incomplete {
			shards = append(shards, s)
		}
		sort.Ints(shards)
		for _, s := range shards {
			parts := incomplete[s]
			more := ""
			if len(parts) > 5 {
				more = fmt.Sprintf(" and %d more", len(parts)-5)
				parts = parts[:5]
			}
			msgs = append(msgs, fmt.Sprintf("shard %d/%d lacks %s%s", s, count, strings.Join(parts, ", "), more))
		}
		return nil, fmt.Errorf("commit %s: %w: %s", name, ErrIncomplete, strings.Join(msgs, "; "))
	}

	var skipped, warnings []string
	var elapsed float64
	var counters Summary // the shards' judge, remote and reuse counters, summed
	for i := 0; i < count; i++ {
		path := filepath.Join(dir, ShardsDir, ShardBase(i, count)+".summary.json")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("commit %s: shard %d/%d: %w", name, i, count, err)
		}
		var s Summary
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("commit %s: read %s: %w", name, path, err)
		}
		if i == 0 {
			skipped, warnings = s.FilesSkipped, s.Warnings
		}
		elapsed = max(elapsed, s.ElapsedSeconds)
		counters.addCounters(&s)
	}
	format := strings.TrimPrefix(filepath.Ext(base.Inputs[0].Part), ".")
	s := MergeStats(stats, skipped)
	s.Warnings = warnings // the inputs' (inputs.ChatWarnings): every shard's
	s.DuplicateIDs, s.DuplicateIDList, err = FindDuplicates(dir, format, stats, remote)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", name, err)
	}
	// A shard lists the same impure verifiers in its summary as in its
	// manifest.
	s.Judge, s.Remote, s.Reuse, s.ImpureVerifiers = counters.Judge, counters.Remote, counters.Reuse, merged.ImpureVerifiers
	s.ElapsedSeconds = elapsed
	if elapsed > 0 {
		s.RowsPerSecond = float64(s.Rollouts) / elapsed
	}
	if err := removeStale(dir, base.Inputs, remote); err != nil {
		return nil, fmt.Errorf("commit %s: %w", name, err)
	}
	if err := WriteJSON(filepath.Join(dir, ManifestFile), &merged, true); err != nil {
		return nil, err
	}
	if err := WriteJSON(filepath.Join(dir, SummaryFile), s, true); err != nil {
		return nil, err
	}
	if err := WriteSuccess(dir); err != nil {
		return nil, err
	}
	if remote != nil {
		for _, f := range []string{ManifestFile, SummaryFile, SuccessFile} {
			if err := remote.Put(dir, f); err != nil {
				return nil, fmt.Errorf("commit %s: %w", name, err)
			}
		}
	}
	return s, nil
}

// addCounters adds the judge, remote and reuse counters of a shard's
// summary o to s's. A counter object stays nil while no shard has one. Each shard
// counts its own process's work: probes are one a shard that asked, and
// requests and cache hits add up to what one process would have made.
func (s *Summary) addCounters(o *Summary) {
	if j := o.Judge; j != nil {
		if s.Judge == nil {
			s.Judge = &JudgeSummary{}
		}
		s.Judge.Probes += j.Probes
		s.Judge.Requests += j.Requests
		s.Judge.CacheHits += j.CacheHits
		s.Judge.Retries += j.Retries
		s.Judge.Failures += j.Failures
		s.Judge.PromptTokens += j.PromptTokens
		s.Judge.CompletionTokens += j.CompletionTokens
		s.Judge.PendingBudget += j.PendingBudget
	}
	if r := o.Remote; r != nil {
		if s.Remote == nil {
			s.Remote = &RemoteSummary{}
		}
		s.Remote.Probes += r.Probes
		s.Remote.Requests += r.Requests
		s.Remote.CacheHits += r.CacheHits
		s.Remote.Retries += r.Retries
		s.Remote.Failures += r.Failures
		s.Remote.PendingBudget += r.PendingBudget
	}
	if r := o.Reuse; r != nil {
		if s.Reuse == nil {
			s.Reuse = &ReuseSummary{}
		}
		s.Reuse.Reused += r.Reused
		s.Reuse.Graded += r.Graded
		s.Reuse.CopiedParts += r.CopiedParts
		if s.Reuse.Note == "" {
			s.Reuse.Note = r.Note
		}
	}
}

// sortedSet returns the distinct strings of ids, sorted, or nil when
// there are none.
func sortedSet(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// removeStale removes the parts, statistics and judgements in the output
// directory that belong to no unit of the run whose inputs are ins: an
// earlier run's, left in a directory the shards reused, which a single
// process would have cleared (ClearOut) and which leaderboard and diff
// would read as this run's. For an output URL they are deleted from the
// listing (rewards first, so that no part looks complete while the others
// go); dir is then the staging directory, which holds none of them.
func removeStale(dir string, ins []ManifestInput, remote *Objects) error {
	keep := map[string]bool{}
	for u, in := range ins {
		format := strings.TrimPrefix(filepath.Ext(in.Part), ".")
		for _, rel := range append(unitFiles(u, format), judgementsFile(u, format)) {
			keep[rel] = true
		}
	}
	stale := func(sub, name string) bool {
		return (strings.HasPrefix(name, "part-") || strings.HasPrefix(name, ".part-")) && !keep[sub+"/"+name]
	}
	subs := []string{"rewards", "checks", JudgementsDir, StatsDir}
	if remote != nil {
		var rels []string
		for rel := range remote.keys {
			sub, name, ok := strings.Cut(rel, "/")
			if ok && slices.Contains(subs, sub) && !strings.Contains(name, "/") && stale(sub, name) {
				rels = append(rels, rel)
			}
		}
		return remote.DelAll(rels)
	}
	for _, sub := range subs {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			if stale(sub, e.Name()) {
				if err := RemoveIfExists(filepath.Join(dir, sub, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
