package cli

import (
	"debug/elf"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gavelhq/gavel/internal/gaveltest"
)

var (
	makeBuildOnce sync.Once
	makeBuildBin  string
	makeBuildErr  error
)

// makeBuild runs make build once per test binary, writing the binary
// into gaveltest's directory, and returns its path: TestStaticBinary and
// TestVersionOfBuiltBinary check the same binary.
func makeBuild(t *testing.T) string {
	t.Helper()
	makeBuildOnce.Do(func() {
		makeBuildBin = filepath.Join(gaveltest.Dir(t), "gavel-make-build")
		cmd := exec.Command("make", "--no-print-directory", "build", "BIN="+makeBuildBin)
		cmd.Dir = filepath.Join("..")
		if out, err := cmd.CombinedOutput(); err != nil {
			makeBuildErr = fmt.Errorf("make build: %v\n%s", err, out)
		}
	})
	if makeBuildErr != nil {
		t.Fatal(makeBuildErr)
	}
	return makeBuildBin
}

// TestStaticBinary builds gavel as `make build` does and checks that the
// binary is static and stripped: no program interpreter, no dynamic
// section, no shared library needed, no symbol table.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	bin := makeBuild(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a program header %v: it is linked dynamically", bin, p.Type)
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		t.Errorf("%s has a .dynamic section", bin)
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v (%v)", bin, libs, err)
	}
	if s := f.Section(".symtab"); s != nil {
		t.Errorf("%s has a symbol table: it is not stripped (-ldflags='-s -w')", bin)
	}
}
