package results

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/store"
)

// An output URL (--out s3://bucket/results) has no rename: a run writes
// its files as for a local directory, into a staging directory, and
// uploads each once it is complete, in the order that makes a listing
// tell what is complete. A part's hash file and statistics go first, then
// its checks, then its rewards (the commit point, as the rename of the
// rewards file is locally); the manifest after each part, the summary at
// the end, and _SUCCESS last. An upload is atomic (a multipart upload
// becomes visible when it completes), so a part object exists whole or
// not at all; an upload that keeps failing stops the run, and --resume
// continues from what the listing shows.
//
// The rejected alternative wrote through an interface of the output
// directory in every writer (parts, hash files, statistics): object
// storage would have been a second implementation of every file
// operation of the run, where uploading the finished files needs none.

// Objects is an output URL and what its listing showed.
type Objects struct {
	name   string // redacted URL
	loc    *store.Location
	prefix string           // the key of the output directory, "" or ending in "/"
	keys   map[string]int64 // listed objects: relative name -> size
	ctx    context.Context
}

// ErrUnwritable: an output URL names a store gavel reads but cannot write.
var ErrUnwritable = errors.New("an https URL cannot be written; write to a bucket (s3://, gs://, azblob://)")

// Name returns the output URL, redacted (no user information or query).
func (o *Objects) Name() string { return o.name }

// OpenObjects opens the output URL raw and lists what is under it.
func OpenObjects(ctx context.Context, raw string) (*Objects, error) {
	loc, err := store.Open(ctx, raw)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(raw, "https://") || strings.HasPrefix(raw, "http://") {
		loc.Close()
		return nil, fmt.Errorf("%s: %w", store.Redact(raw), ErrUnwritable)
	}
	o := &Objects{name: store.Redact(raw), loc: loc, prefix: loc.Key, ctx: ctx}
	if o.prefix != "" && !strings.HasSuffix(o.prefix, "/") {
		o.prefix += "/"
	}
	if err := o.List(); err != nil {
		loc.Close()
		return nil, err
	}
	return o, nil
}

// list reads the listing of the output directory.
func (o *Objects) List() error {
	objs, err := o.loc.List(o.ctx, o.prefix)
	if err != nil {
		return err
	}
	o.keys = map[string]int64{}
	for _, ob := range objs {
		o.keys[strings.TrimPrefix(ob.Key, o.prefix)] = ob.Size
	}
	return nil
}

func (o *Objects) Close() {
	if o != nil {
		o.loc.Close()
	}
}

// has reports whether the listing showed the file rel (a slash-separated
// name relative to the output directory).
func (o *Objects) Has(rel string) bool {
	_, ok := o.keys[rel]
	return ok
}

// put uploads the file rel of the staging directory dir.
func (o *Objects) Put(dir, rel string) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := o.loc.Upload(o.ctx, o.prefix+rel, f); err != nil {
		return err
	}
	st, _ := f.Stat()
	if st != nil {
		o.keys[rel] = st.Size()
	}
	return nil
}

// get downloads the file rel into the staging directory dir, unless it is
// there already.
func (o *Objects) Get(dir, rel string) error {
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if !o.Has(rel) {
		return fmt.Errorf("read %s/%s: %w", strings.TrimSuffix(o.name, "/"), rel, os.ErrNotExist)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".download"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = o.loc.Download(o.ctx, o.prefix+rel, f)
	if cErr := f.Close(); err == nil {
		err = cErr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// del deletes rel when the listing showed it.
func (o *Objects) Del(rel string) error {
	if !o.Has(rel) {
		return nil
	}
	if err := o.loc.Delete(o.ctx, o.prefix+rel); err != nil {
		return err
	}
	delete(o.keys, rel)
	return nil
}

// unitFiles are the names of a unit's files relative to the output
// directory, in upload order: hash file, statistics, checks, rewards.
func unitFiles(unit int, format string) []string {
	return []string{
		StatsDir + "/" + fmt.Sprintf("part-%05d.ids", unit),
		StatsDir + "/" + fmt.Sprintf("part-%05d.json", unit),
		"checks/" + columnar.PartName(unit, format),
		"rewards/" + columnar.PartName(unit, format),
	}
}

// judgementsFile is the name of a unit's judgements part relative to the
// output directory; a run that writes one uploads it before the checks.
func judgementsFile(unit int, format string) string {
	return JudgementsDir + "/" + columnar.PartName(unit, format)
}

// putUnit uploads a complete unit's files, in order: its judgements part,
// when the run wrote one, before its checks.
func (o *Objects) PutUnit(dir string, unit int, format string) error {
	rels := unitFiles(unit, format)
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(judgementsFile(unit, format)))); err == nil {
		rels = append(rels[:2:2], append([]string{judgementsFile(unit, format)}, rels[2:]...)...)
	}
	for _, rel := range rels {
		if err := o.Put(dir, rel); err != nil {
			return err
		}
	}
	return nil
}

// delUnit deletes a unit's files in every format, rewards first (so that
// the unit stops being complete at once).
func (o *Objects) DelUnit(unit int) error {
	var rels []string
	for _, f := range []string{columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL} {
		names := unitFiles(unit, f)
		rels = append(rels, names[3], names[2], judgementsFile(unit, f))
	}
	rels = append(rels, unitFiles(unit, "")[1], unitFiles(unit, "")[0])
	for _, rel := range rels {
		if err := o.Del(rel); err != nil {
			return err
		}
	}
	return nil
}

// clear deletes the results of an earlier run, as ClearOut does locally.
func (o *Objects) Clear() error {
	var rels []string
	for rel := range o.keys {
		sub, name, ok := strings.Cut(rel, "/")
		switch {
		case !ok:
			if rel == SummaryFile || rel == ManifestFile || rel == SuccessFile {
				rels = append(rels, rel)
			}
		case sub == "rewards" || sub == "checks" || sub == JudgementsDir || sub == StatsDir || sub == ShardsDir:
			if !strings.Contains(name, "/") && (strings.HasPrefix(name, "part-") || strings.HasPrefix(name, "shard-")) {
				rels = append(rels, rel)
			}
		}
	}
	return o.DelAll(rels)
}

// delAll deletes rels, the rewards parts first, so that no part looks
// complete while the others go.
func (o *Objects) DelAll(rels []string) error {
	sort.Slice(rels, func(i, j int) bool {
		ri, rj := strings.HasPrefix(rels[i], "rewards/"), strings.HasPrefix(rels[j], "rewards/")
		if ri != rj {
			return ri
		}
		return rels[i] < rels[j]
	})
	for _, rel := range rels {
		if err := o.Del(rel); err != nil {
			return err
		}
	}
	return nil
}

// partDoneRemote is PartDone for an output URL: the unit's part files are
// in the listing, and its statistics (and hash file) are fetched into the
// staging directory dir.
func (o *Objects) PartDone(dir string, unit int, name string) *PartStats {
	format := strings.TrimPrefix(filepath.Ext(name), ".")
	rels := unitFiles(unit, format)
	for _, rel := range rels[1:] {
		if !o.Has(rel) {
			return nil
		}
	}
	if err := o.Get(dir, rels[1]); err != nil {
		return nil
	}
	if o.Has(rels[0]) {
		if err := o.Get(dir, rels[0]); err != nil {
			return nil
		}
	}
	ps, err := ReadStats(dir, unit)
	if err != nil {
		return nil
	}
	return ps
}

// Rel returns the name of path, a file of the staging directory dir,
// relative to it with slashes.
func Rel(dir, path string) string {
	r, err := filepath.Rel(dir, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

// stage makes a staging directory for an output URL.
func Stage() (string, error) {
	dir, err := os.MkdirTemp("", "gavel-out-")
	if err != nil {
		return "", fmt.Errorf("create staging directory: %w", err)
	}
	return dir, nil
}

// FetchResults downloads the results at the URL raw (manifest.json,
// summary.json and the complete rewards and checks parts) into the local
// directory dir, for diff, leaderboard and the reports, which read result
// directories.
func FetchResults(ctx context.Context, raw, dir string) error {
	o, err := OpenObjects(ctx, raw)
	if err != nil {
		return err
	}
	defer o.Close()
	if len(o.keys) == 0 {
		return fmt.Errorf("read results %s: %w", o.name, os.ErrNotExist)
	}
	for rel := range o.keys {
		sub, name, ok := strings.Cut(rel, "/")
		want := !ok && (rel == ManifestFile || rel == SummaryFile || rel == SuccessFile)
		if ok && (sub == "rewards" || sub == "checks" || sub == JudgementsDir) && strings.HasPrefix(name, "part-") && !strings.Contains(name, "/") {
			_, want = columnar.Resolve(columnar.Source{Name: name})
		}
		if !want {
			continue
		}
		if err := o.Get(dir, rel); err != nil {
			return err
		}
	}
	for _, sub := range []string{"rewards", "checks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	return nil
}

var errRemote = errors.New("remote")
