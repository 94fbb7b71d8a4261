// Package atomicfile writes a file under a temporary name in its final
// directory and renames it into place, so that a file under its final name
// is always complete: a reader, or a run resumed after a crash, sees the
// old file (or none) or the whole new one, never a part of it.
//
// The temporary name is the final name with a leading dot and a ".tmp"
// suffix (".part-00001.parquet.tmp"): hidden from directory listings, and
// the same on every attempt, so that the temporary file an interrupted
// run left behind is truncated and reused rather than accumulated. Two
// writers must therefore not write the same path at once.
//
// A rename alone is atomic for the processes of the machine, not durable
// across a crash of the machine: the rename may reach the disk before the
// file's data, or not at all. Options.Durable syncs the file before the
// rename and the directory after it, for the files a run's completion
// depends on.
//
// Errors are *os.PathError values that name the final path, whatever step
// failed (the temporary name is an implementation detail).
package atomicfile

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// Options configures a file. The zero value is a file with mode 0o666
// (before the umask), renamed without syncing.
type Options struct {
	// Perm is the mode of the file, before the umask (0: 0o666).
	Perm os.FileMode
	// Durable syncs the file to disk before it is renamed, and Commit
	// syncs its directory after the rename: once Commit returns, the file
	// survives a crash of the machine, not only of the process.
	Durable bool
}

// File is a file being written under its temporary name. It is not safe
// for concurrent use.
type File struct {
	path    string // final
	tmp     string
	f       *os.File
	durable bool
	closed  bool // Close was called
	done    bool // renamed into place, or aborted
}

// tempName returns the temporary name under which a file destined for
// path is written.
func tempName(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
}

// Create starts the file that will replace path, truncating a temporary
// file left by an earlier attempt. The directory of path must exist. Call
// Commit to put the file in place, or Abort to discard it.
func Create(path string, opts Options) (*File, error) {
	perm := opts.Perm
	if perm == 0 {
		perm = 0o666
	}
	af := &File{path: path, tmp: tempName(path), durable: opts.Durable}
	f, err := os.OpenFile(af.tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return nil, af.err("create", err)
	}
	af.f = f
	return af, nil
}

// Path returns the final path of the file.
func (f *File) Path() string { return f.path }

// Write writes p to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	if err != nil {
		err = f.err("write", err)
	}
	return n, err
}

// Close syncs the temporary file, if durable, and closes it, without
// renaming it. A later Close does nothing; Abort still removes the file.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	if f.durable {
		if err := f.f.Sync(); err != nil {
			f.f.Close()
			return f.err("sync", err)
		}
	}
	if err := f.f.Close(); err != nil {
		return f.err("close", err)
	}
	return nil
}

// Rename closes the file, if Close was not called, and renames it to its
// final name. It does not sync the directory; see SyncDir.
func (f *File) Rename() error {
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.tmp, f.path); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return f.err("rename", err)
	}
	f.done = true
	return nil
}

// Commit closes the file and renames it into place; for a durable file it
// then syncs the directory. When closing or renaming fails, the temporary
// file is removed and the final path left as it was; when only the
// directory sync fails, the file stays in place and the error is
// returned.
func (f *File) Commit() error {
	if err := f.Rename(); err != nil {
		f.Abort()
		return err
	}
	if f.durable {
		return SyncDir(filepath.Dir(f.path))
	}
	return nil
}

// Abort closes and removes the temporary file; errors are ignored, as
// this is cleanup after a failure. It does nothing after Rename or Commit
// succeeded, so it can be deferred right after Create.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	if !f.closed {
		f.closed = true
		f.f.Close()
	}
	os.Remove(f.tmp)
}

func (f *File) err(op string, err error) error {
	return pathErr(op, f.path, err)
}

// Write writes the file at path with write, through a buffer, and commits
// it. When write or the commit fails, nothing is left under the temporary
// name, path is left as it was, and the error is returned.
func Write(path string, opts Options, write func(w io.Writer) error) error {
	f, err := Create(path, opts)
	if err != nil {
		return err
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}

// SyncDir makes the renames done in dir durable. Windows cannot sync a
// directory; there they are left to the file system.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return pathErr("sync", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return pathErr("sync", dir, err)
	}
	return nil
}

// pathErr returns err as an *os.PathError of op on path. An
// *os.PathError, which names the temporary path, is replaced by its
// underlying error.
func pathErr(op, path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &os.PathError{Op: op, Path: path, Err: err}
}
