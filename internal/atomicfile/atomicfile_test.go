package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// files returns the names in dir with their contents ("/" for a
// directory, whose entries are not listed, "@" for a symbolic link).
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			got[e.Name()] = "/"
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			got[e.Name()] = "@"
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(data)
	}
	return got
}

func TestWrite(t *testing.T) {
	errWrite := errors.New("boom")
	tests := []struct {
		name    string
		setup   [][2]string // names and contents of the files before, in order; "/" makes a directory
		opts    Options
		write   string // written by the callback
		fail    error  // returned by the callback
		wantErr string // substring of the error, "" for none
		want    map[string]string
	}{
		{
			name:  "new file",
			write: "hello",
			want:  map[string]string{"out.json": "hello"},
		},
		{
			name:  "durable",
			opts:  Options{Durable: true},
			write: "hello",
			want:  map[string]string{"out.json": "hello"},
		},
		{
			name:  "replaces the old file",
			setup: [][2]string{{"out.json", "old contents"}},
			write: "new",
			want:  map[string]string{"out.json": "new"},
		},
		{
			name:  "truncates a temporary file left behind",
			setup: [][2]string{{".out.json.tmp", "a longer leftover from a crash"}},
			write: "new",
			want:  map[string]string{"out.json": "new"},
		},
		{
			name:    "a failed write leaves the old file",
			setup:   [][2]string{{"out.json", "old"}},
			write:   "partial",
			fail:    errWrite,
			wantErr: "boom",
			want:    map[string]string{"out.json": "old"},
		},
		{
			name:    "a failed rename removes the temporary file",
			setup:   [][2]string{{"out.json", "/"}, {"out.json/x", ""}},
			write:   "new",
			wantErr: "rename ",
			want:    map[string]string{"out.json": "/"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.setup {
				name, data := f[0], f[1]
				p := filepath.Join(dir, name)
				if data == "/" {
					if err := os.Mkdir(p, 0o755); err != nil {
						t.Fatal(err)
					}
				} else if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, "out.json")
			err := Write(path, tt.opts, func(w io.Writer) error {
				io.WriteString(w, tt.write)
				return tt.fail
			})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Write: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Write = %v, want an error containing %q", err, tt.wantErr)
			}
			if tt.fail != nil && !errors.Is(err, tt.fail) {
				t.Errorf("Write = %v, want the callback's error", err)
			}
			if diff := cmp.Diff(tt.want, files(t, dir)); diff != "" {
				t.Errorf("files after Write (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWritePerm(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	if err := Write(path, Options{Perm: 0o600}, func(io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Mode().Perm(), fs.FileMode(0o600); got != want {
		t.Errorf("mode = %v, want %v", got, want)
	}
}

// TestErrorsNameFinalPath checks that a failure names the file being
// written, not its temporary name.
func TestErrorsNameFinalPath(t *testing.T) {
	t.Run("create", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "missing", "out")
		_, err := Create(path, Options{})
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Op != "create" || pe.Path != path || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Create = %v, want a create error on %s that is fs.ErrNotExist", err, path)
		}
	})
	t.Run("write", func(t *testing.T) {
		if _, err := os.Stat("/dev/full"); err != nil {
			t.Skip("no /dev/full")
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "out")
		if err := os.Symlink("/dev/full", tempName(path)); err != nil {
			t.Fatal(err)
		}
		err := Write(path, Options{}, func(w io.Writer) error {
			_, err := w.Write(make([]byte, 1<<20))
			return err
		})
		if want := "write " + path + ": no space left on device"; err == nil || err.Error() != want {
			t.Errorf("Write = %v, want %s", err, want)
		}
		if got := files(t, dir); len(got) != 0 {
			t.Errorf("files = %q, want none", got)
		}
	})
}

func TestAbort(t *testing.T) {
	dir := t.TempDir()
	discarded := filepath.Join(dir, "discarded")
	f, err := Create(discarded, Options{})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "x")
	f.Abort()
	f.Abort()

	kept := filepath.Join(dir, "kept")
	g, err := Create(kept, Options{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(g, "y")
	if err := g.Commit(); err != nil {
		t.Fatal(err)
	}
	g.Abort() // after Commit: does nothing
	got := files(t, dir)
	if len(got) != 1 || got["kept"] != "y" {
		t.Errorf("files = %q, want only kept = y", got)
	}
}

// TestCommitFailure checks that a failed Commit leaves no temporary file,
// without Abort.
func TestCommitFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "z")
	if err := f.Commit(); err == nil {
		t.Fatal("Commit onto a directory succeeded")
	}
	if diff := cmp.Diff(map[string]string{"out": "/"}, files(t, dir)); diff != "" {
		t.Errorf("files after Commit (-want +got):\n%s", diff)
	}
}

// TestCloseThenRename checks the steps a writer of several files takes
// to rename them in an order of its choosing: nothing is under the final
// name before Rename.
func TestCloseThenRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	f, err := Create(path, Options{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	io.WriteString(f, "z")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close: Stat(%s) = %v, want not exist", path, err)
	}
	if err := f.Rename(); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 1 || got["out"] != "z" {
		t.Errorf("files = %q, want only out = z", got)
	}
}
