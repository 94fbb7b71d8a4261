// Package gaveltest builds gavel's commands for the tests that must run
// them as processes (to kill them, to measure their memory, to run the
// docs' examples): each command once per test binary, whichever tests
// ask for it, into one temporary directory that Cleanup removes (call it
// from TestMain after m.Run).
//
// The builds are those of `make build` without its linker flags and
// version stamping: -trimpath and CGO_ENABLED=0, so that they share its
// compiled packages (and one another's, in a copy of the source tree
// that a test changes and builds). A build with the race detector (and
// cgo, which it needs) is made only when a test asks for one.
package gaveltest

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// Module is gavel's module path; Build takes the import paths of commands
// in it.
const Module = "github.com/gavelhq/gavel"

// Options are how a command is built.
type Options struct {
	// Race builds with the race detector (and cgo, which it needs).
	Race bool
}

type key struct {
	pkg  string
	race bool
}

type build struct {
	once sync.Once
	path string
	err  error
}

var (
	mu     sync.Mutex
	dir    string // made on the first build
	dirErr error
	builds = map[key]*build{}
)

// Binary returns the path of the gavel command of this checkout, built
// once per test binary.
func Binary(t testing.TB) string {
	t.Helper()
	return Build(t, Module+"/cmd/gavel", Options{})
}

// Build returns the path of the command pkg (an import path in gavel's
// module) built once per test binary with o, in the directory Dir. Its
// file is named after the last element of pkg (with "-race" added for a
// race build), so that Dir can be put on PATH.
func Build(t testing.TB, pkg string, o Options) string {
	t.Helper()
	b := lookup(key{pkg, o.Race})
	b.once.Do(func() {
		var d string
		if d, b.err = binDir(); b.err != nil {
			return
		}
		name := path.Base(pkg)
		if o.Race {
			name += "-race"
		}
		b.path = filepath.Join(d, name)
		b.err = GoBuild("", b.path, pkg, o)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Dir returns the directory the commands are built into, making it when
// no command was built yet.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := binDir()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// GoBuild runs go build for pkg in directory dir ("": the working
// directory) with the flags of Build, writing the binary to out. A test
// builds with it a gavel of another source tree (a copy it changed);
// Build is for this checkout's commands.
func GoBuild(dir, out, pkg string, o Options) error {
	args := []string{"build", "-trimpath", "-o", out}
	cgo := "CGO_ENABLED=0"
	if o.Race {
		args = append(args, "-race")
		cgo = "CGO_ENABLED=1"
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return nil
}

// Cleanup removes the directory of the built commands. TestMain calls it
// after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	dir, dirErr = "", nil
	builds = map[key]*build{}
}

func lookup(k key) *build {
	mu.Lock()
	defer mu.Unlock()
	b := builds[k]
	if b == nil {
		b = &build{}
		builds[k] = b
	}
	return b
}

func binDir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if dir == "" && dirErr == nil {
		dir, dirErr = os.MkdirTemp("", "gaveltest-bin-")
	}
	return dir, dirErr
}
