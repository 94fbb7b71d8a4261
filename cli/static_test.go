package cli

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"testing"
)

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
	bin := filepath.Join(t.TempDir(), "gavel")
	cmd := exec.Command("make", "--no-print-directory", "build", "BIN="+bin)
	cmd.Dir = filepath.Join("..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
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
