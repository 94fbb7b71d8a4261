package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// runConfig returns the RunConfig of cfg, whose defaults prepare applied,
// and of its plan.
func runConfig(cfg Config, p *plan) results.RunConfig {
	f := p.fields
	rc := results.RunConfig{
		Format:       cfg.Format,
		Fields:       results.RunFields{ID: f.ID, Task: f.Task, Final: f.Final, Initial: f.Initial, Output: f.Output, Log: f.Log},
		Keep:         append([]string{}, p.keep...),
		Flags:        p.flags,
		Health:       p.health,
		Turns:        p.turns,
		MaxLineBytes: cfg.MaxLineBytes,
		Timeout:      "none",
	}
	if p.turns {
		rc.Fields.Messages = f.Messages
	}
	if rc.MaxLineBytes <= 0 {
		rc.MaxLineBytes = columnar.DefaultMaxLineBytes
	}
	if cfg.TasksFile != "" {
		rc.TasksFile = filepath.Clean(cfg.TasksFile)
	}
	if cfg.StructNulls != columnar.StructNullsMember {
		rc.StructNulls = cfg.StructNulls.String()
	}
	if cfg.Timeout > 0 {
		rc.Timeout = cfg.Timeout.String()
	}
	if cfg.Shard.Count > 1 {
		rc.Shards = cfg.Shard.Count
	}
	rc.From = cfg.From
	for _, c := range p.set {
		rc.Set = append(rc.Set, c.Key+"="+c.Value)
	}
	return rc
}

func newManifest(cfg Config, p *plan, units []inputs.Unit) *results.Manifest {
	m := &results.Manifest{Version: cfg.Version, Config: runConfig(cfg, p), Shard: cfg.Shard.String()}
	if cfg.Shard.Count <= 1 {
		m.Shard = ""
	}
	m.Config.Judge = p.judging.runJudge(cfg.Judge)
	for _, v := range cfg.Verifiers {
		if !v.Reward.IsFraction() {
			if m.Config.Rewards == nil {
				m.Config.Rewards = map[string]verifiers.Formula{}
			}
			m.Config.Rewards[v.ID] = v.Reward
		}
		m.Verifiers = append(m.Verifiers, results.ManifestVerifier{
			ID: v.ID, Name: v.Name, Tasks: v.Tasks, Source: v.Source,
			Fingerprint: p.judging.fingerprint(v),
		})
	}
	sort.Slice(m.Verifiers, func(i, j int) bool { return m.Verifiers[i].ID < m.Verifiers[j].ID })
	digests := map[string][2]string{}
	for _, u := range units {
		in := results.ManifestInput{Path: u.Path, Size: u.Size, ETag: u.ETag, FirstRowGroup: u.FirstRowGroup, RowGroups: u.RowGroups,
			Part: columnar.PartName(u.Index, cfg.Format)}
		if u.Described() != nil && u.Path != inputs.Stdin && !store.IsURL(u.Path) {
			d, ok := digests[u.Path]
			if !ok {
				d[0], d[1] = inputDigest(u.Path, u.Size)
				digests[u.Path] = d
			}
			in.ModTime, in.Digest = d[0], d[1]
		}
		m.Inputs = append(m.Inputs, in)
	}
	return m
}

func (r *runner) writeManifest() error {
	if imp := r.plan.remoting.impure(); len(imp) > 0 {
		r.manifest.ImpureVerifiers = imp
	}
	return r.out.WriteJSON(r.out.ManifestPath(), r.manifest, true)
}

// prepareOut creates the output directory and decides what is left to do.
// A fresh run removes the results of an earlier run in it (all of them;
// for a shard, its own units' parts and files); other files are left
// alone. A resumed run keeps the complete parts of its units, after
// checking that the directory's manifest describes the same run, and
// removes the rest. Either way the files of a finished run (_SUCCESS,
// and for a shard the joined manifest and summary) are removed first.
func (r *runner) prepareOut() error {
	if err := r.out.Create(); err != nil {
		return err
	}
	dir, mpath := r.out.Path, r.out.ManifestPath()
	if r.cfg.Resume {
		if r.remote != nil && r.remote.Has(results.Rel(dir, mpath)) {
			if err := r.remote.Get(dir, results.Rel(dir, mpath)); err != nil {
				return err
			}
		}
		old, err := results.ReadManifest(mpath)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// Nothing to resume: start from the beginning.
		case err != nil:
			return err
		default:
			err := r.manifest.SameRun(old)
			if err == nil {
				err = r.manifest.SameModTimes(old)
			}
			if err != nil {
				return &inputs.ConfigError{Field: "Resume", Msg: fmt.Sprintf("%s was written by another run: %v", r.out.Name, err)}
			}
			return r.resume()
		}
	}
	if r.out.Sharded() {
		for i := range r.units {
			if r.cfg.Shard.Has(i) {
				if err := r.out.RemoveUnit(i); err != nil {
					return err
				}
			}
		}
		return r.out.Remove(r.out.SummaryPath())
	}
	return r.out.Clear()
}

// resume records the complete parts of this process's units and removes
// what is left of the others.
func (r *runner) resume() error {
	for i := range r.units {
		if !r.cfg.Shard.Has(i) {
			continue
		}
		if ps := r.out.PartDone(i, r.manifest.Inputs[i].Part); ps != nil {
			r.stats[i] = ps
			r.manifest.Complete(i, ps.Rows)
			continue
		}
		if err := r.out.RemoveUnit(i); err != nil {
			return err
		}
	}
	return nil
}

// finishSummary merges the statistics of this process's complete parts
// into the summary and writes it, unless the results are streamed.
// Duplicate ids are looked for only when the run ended (every unit that
// could be read is complete), in an output directory: they need every
// part's id hashes.
func (r *runner) finishSummary(complete bool) (*results.Summary, error) {
	var parts []*results.PartStats
	for i := range r.units {
		if ps := r.stats[i]; ps != nil {
			parts = append(parts, ps)
		}
	}
	s := results.MergeStats(parts, r.skipped)
	s.Judge = r.plan.judging.summary()
	s.Remote = r.plan.remoting.summary()
	s.ImpureVerifiers = r.plan.remoting.impure()
	s.Reuse = r.plan.reuse.summary()
	s.FailedInputs = append(s.FailedInputs, r.failed...)
	s.Warnings = inputs.ChatWarnings(r.units, r.plan.fields.Output, r.cfg.From)
	var err error
	if complete && !r.streaming() {
		s.DuplicateIDs, s.DuplicateIDList, err = results.FindDuplicates(r.cfg.Out, r.cfg.Format, parts, r.remote)
	}
	elapsed := time.Since(r.start)
	s.ElapsedSeconds = elapsed.Seconds()
	if elapsed > 0 {
		s.RowsPerSecond = float64(s.Rollouts) / elapsed.Seconds()
	}
	if r.streaming() {
		if r.cfg.SummaryOut != "" && err == nil {
			err = results.WriteJSON(r.cfg.SummaryOut, s, true)
		}
		return s, err
	}
	if wErr := r.out.WriteJSON(r.out.SummaryPath(), s, true); wErr != nil && err == nil {
		err = wErr
	}
	return s, err
}
