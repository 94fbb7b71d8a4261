package results

import (
	"fmt"
	"os"
	"path/filepath"
)

// OutDir is the output directory a run writes into: a local directory,
// or, for an output URL, a staging directory whose files are uploaded to
// the URL's objects as they are written. A shard process of a sharded run
// writes its manifest and summary under _shards, and leaves _SUCCESS to
// Commit.
type OutDir struct {
	// Path is the local directory (the staging directory for a URL).
	Path string
	// Name names the directory in messages: Path, or the URL redacted.
	Name string
	// Objects is the listing of an output URL (nil: a local directory).
	Objects *Objects
	// Shard and Shards are the process's shard and the run's shard count
	// (Shards 0 or 1: the run is not sharded).
	Shard, Shards int
}

// Sharded reports whether the directory is written by a shard process.
func (d *OutDir) Sharded() bool { return d.Shards > 1 }

// ManifestPath returns the path of the manifest this process writes.
func (d *OutDir) ManifestPath() string {
	if d.Sharded() {
		return filepath.Join(d.Path, ShardsDir, ShardBase(d.Shard, d.Shards)+".manifest.json")
	}
	return filepath.Join(d.Path, ManifestFile)
}

// SummaryPath returns the path of the summary this process writes.
func (d *OutDir) SummaryPath() string {
	if d.Sharded() {
		return filepath.Join(d.Path, ShardsDir, ShardBase(d.Shard, d.Shards)+".summary.json")
	}
	return filepath.Join(d.Path, SummaryFile)
}

// WriteJSON is WriteJSON into the directory: for an output URL the file
// is uploaded once written.
func (d *OutDir) WriteJSON(path string, v any, durable bool) error {
	if err := WriteJSON(path, v, durable); err != nil {
		return err
	}
	if d.Objects != nil {
		return d.Objects.Put(d.Path, Rel(d.Path, path))
	}
	return nil
}

// Remove removes a file of the directory, and its object for an output
// URL.
func (d *OutDir) Remove(path string) error {
	if err := RemoveIfExists(path); err != nil {
		return err
	}
	if d.Objects != nil {
		return d.Objects.Del(Rel(d.Path, path))
	}
	return nil
}

// RemoveUnit is RemoveUnit in the directory, and for an output URL in its
// listing too.
func (d *OutDir) RemoveUnit(unit int) error {
	if d.Objects != nil {
		if err := d.Objects.DelUnit(unit); err != nil {
			return err
		}
	}
	return RemoveUnit(d.Path, unit)
}

// PartDone is PartDone in the directory, or in its listing for an output
// URL; part is the unit's part file name.
func (d *OutDir) PartDone(unit int, part string) *PartStats {
	if d.Objects != nil {
		return d.Objects.PartDone(d.Path, unit, part)
	}
	return PartDone(d.Path, unit, part)
}

// Create creates the directory (and _shards for a shard process) and
// removes the files of a finished run: _SUCCESS, and for a shard process
// the joined manifest and summary, which Commit writes again.
func (d *OutDir) Create() error {
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	if d.Sharded() {
		if err := os.MkdirAll(filepath.Join(d.Path, ShardsDir), 0o755); err != nil {
			return fmt.Errorf("create output directory: %w", err)
		}
	}
	finished := []string{SuccessFile}
	if d.Sharded() {
		finished = append(finished, ManifestFile, SummaryFile)
	}
	for _, f := range finished {
		if err := d.Remove(filepath.Join(d.Path, f)); err != nil {
			return err
		}
	}
	return nil
}

// Clear removes the results of an earlier run, for a fresh run that is
// not sharded (ClearOut, and the URL's objects).
func (d *OutDir) Clear() error {
	if d.Objects != nil {
		if err := d.Objects.Clear(); err != nil {
			return err
		}
	}
	return ClearOut(d.Path)
}

// MarkSuccess writes _SUCCESS after a run that is not sharded completed;
// a sharded run's is written by Commit.
func (d *OutDir) MarkSuccess() error {
	if d.Sharded() {
		return nil
	}
	if err := WriteSuccess(d.Path); err != nil {
		return err
	}
	if d.Objects != nil {
		return d.Objects.Put(d.Path, SuccessFile)
	}
	return nil
}
