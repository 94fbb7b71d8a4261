package pipeline

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

// remoteOut is an output URL and what its listing showed.
type remoteOut struct {
	name   string // redacted URL
	loc    *store.Location
	prefix string           // the key of the output directory, "" or ending in "/"
	keys   map[string]int64 // listed objects: relative name -> size
	ctx    context.Context
}

// openRemote opens the output URL raw and lists what is under it.
func openRemote(ctx context.Context, raw string) (*remoteOut, error) {
	loc, err := store.Open(ctx, raw)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(raw, "https://") || strings.HasPrefix(raw, "http://") {
		loc.Close()
		return nil, &ConfigError{Msg: fmt.Sprintf("%s: an https URL cannot be written; write to a bucket (s3://, gs://, azblob://)", store.Redact(raw))}
	}
	o := &remoteOut{name: store.Redact(raw), loc: loc, prefix: loc.Key, ctx: ctx}
	if o.prefix != "" && !strings.HasSuffix(o.prefix, "/") {
		o.prefix += "/"
	}
	if err := o.list(); err != nil {
		loc.Close()
		return nil, err
	}
	return o, nil
}

// list reads the listing of the output directory.
func (o *remoteOut) list() error {
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

func (o *remoteOut) close() {
	if o != nil {
		o.loc.Close()
	}
}

// has reports whether the listing showed the file rel (a slash-separated
// name relative to the output directory).
func (o *remoteOut) has(rel string) bool {
	_, ok := o.keys[rel]
	return ok
}

// put uploads the file rel of the staging directory dir.
func (o *remoteOut) put(dir, rel string) error {
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
func (o *remoteOut) get(dir, rel string) error {
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if !o.has(rel) {
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
func (o *remoteOut) del(rel string) error {
	if !o.has(rel) {
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
		statsDir + "/" + fmt.Sprintf("part-%05d.ids", unit),
		statsDir + "/" + fmt.Sprintf("part-%05d.json", unit),
		"checks/" + columnar.PartName(unit, format),
		"rewards/" + columnar.PartName(unit, format),
	}
}

// judgementsFile is the name of a unit's judgements part relative to the
// output directory; a run that writes one uploads it before the checks.
func judgementsFile(unit int, format string) string {
	return judgementsDir + "/" + columnar.PartName(unit, format)
}

// putUnit uploads a complete unit's files, in order: its judgements part,
// when the run wrote one, before its checks.
func (o *remoteOut) putUnit(dir string, unit int, format string) error {
	rels := unitFiles(unit, format)
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(judgementsFile(unit, format)))); err == nil {
		rels = append(rels[:2:2], append([]string{judgementsFile(unit, format)}, rels[2:]...)...)
	}
	for _, rel := range rels {
		if err := o.put(dir, rel); err != nil {
			return err
		}
	}
	return nil
}

// delUnit deletes a unit's files in every format, rewards first (so that
// the unit stops being complete at once).
func (o *remoteOut) delUnit(unit int) error {
	var rels []string
	for _, f := range []string{columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL} {
		names := unitFiles(unit, f)
		rels = append(rels, names[3], names[2], judgementsFile(unit, f))
	}
	rels = append(rels, unitFiles(unit, "")[1], unitFiles(unit, "")[0])
	for _, rel := range rels {
		if err := o.del(rel); err != nil {
			return err
		}
	}
	return nil
}

// clear deletes the results of an earlier run, as clearOut does locally.
func (o *remoteOut) clear() error {
	var rels []string
	for rel := range o.keys {
		sub, name, ok := strings.Cut(rel, "/")
		switch {
		case !ok:
			if rel == summaryFile || rel == manifestFile || rel == successFile {
				rels = append(rels, rel)
			}
		case sub == "rewards" || sub == "checks" || sub == judgementsDir || sub == statsDir || sub == shardsDir:
			if !strings.Contains(name, "/") && (strings.HasPrefix(name, "part-") || strings.HasPrefix(name, "shard-")) {
				rels = append(rels, rel)
			}
		}
	}
	return o.delAll(rels)
}

// delAll deletes rels, the rewards parts first, so that no part looks
// complete while the others go.
func (o *remoteOut) delAll(rels []string) error {
	sort.Slice(rels, func(i, j int) bool {
		ri, rj := strings.HasPrefix(rels[i], "rewards/"), strings.HasPrefix(rels[j], "rewards/")
		if ri != rj {
			return ri
		}
		return rels[i] < rels[j]
	})
	for _, rel := range rels {
		if err := o.del(rel); err != nil {
			return err
		}
	}
	return nil
}

// partDoneRemote is partDone for an output URL: the unit's part files are
// in the listing, and its statistics (and hash file) are fetched into the
// staging directory dir.
func (o *remoteOut) partDone(dir string, unit int, name string) *partStats {
	format := strings.TrimPrefix(filepath.Ext(name), ".")
	rels := unitFiles(unit, format)
	for _, rel := range rels[1:] {
		if !o.has(rel) {
			return nil
		}
	}
	if err := o.get(dir, rels[1]); err != nil {
		return nil
	}
	if o.has(rels[0]) {
		if err := o.get(dir, rels[0]); err != nil {
			return nil
		}
	}
	ps, err := readStats(dir, unit)
	if err != nil {
		return nil
	}
	return ps
}

// rel returns the name of path, a file of the staging directory dir,
// relative to it with slashes.
func rel(dir, path string) string {
	r, err := filepath.Rel(dir, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

// stage makes a staging directory for an output URL.
func stage() (string, error) {
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
	o, err := openRemote(ctx, raw)
	if err != nil {
		return err
	}
	defer o.close()
	if len(o.keys) == 0 {
		return fmt.Errorf("read results %s: %w", o.name, os.ErrNotExist)
	}
	for rel := range o.keys {
		sub, name, ok := strings.Cut(rel, "/")
		want := !ok && (rel == manifestFile || rel == summaryFile || rel == successFile)
		if ok && (sub == "rewards" || sub == "checks" || sub == judgementsDir) && strings.HasPrefix(name, "part-") && !strings.Contains(name, "/") {
			_, want = columnar.InputFormat(name)
		}
		if !want {
			continue
		}
		if err := o.get(dir, rel); err != nil {
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
