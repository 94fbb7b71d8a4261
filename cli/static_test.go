package cli

import (
	"crypto/sha256"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestDist checks what make dist built into $GAVEL_DIST_DIR (CI runs it;
// skipped when unset): a static, stripped binary of each architecture,
// named gavel-VERSION-linux-ARCH and of that ELF machine, a wheel tagged
// for each, and SHA256SUMS listing every file with its digest.
func TestDist(t *testing.T) {
	dir := os.Getenv("GAVEL_DIST_DIR")
	if dir == "" {
		t.Skip("GAVEL_DIST_DIR is not set (make dist, then GAVEL_DIST_DIR=dist)")
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	wheelArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		listed[name] = sum
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" {
			files = append(files, e.Name())
		}
	}
	if len(files) != len(listed) {
		t.Errorf("%d files, SHA256SUMS lists %d", len(files), len(listed))
	}
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(data)); listed[name] != got {
			t.Errorf("%s: SHA256SUMS says %q, the file's digest is %s", name, listed[name], got)
		}
	}
	for arch, machine := range machines {
		bins, _ := filepath.Glob(filepath.Join(dir, "gavel-*-linux-"+arch))
		if len(bins) != 1 {
			t.Errorf("%s: binaries %v, want one", arch, bins)
			continue
		}
		f, err := elf.Open(bins[0])
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != machine || f.Class != elf.ELFCLASS64 {
			t.Errorf("%s: ELF machine %v, class %v; want %v", bins[0], f.Machine, f.Class, machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s has a program header %v: it is linked dynamically", bins[0], p.Type)
			}
		}
		if f.Section(".symtab") != nil {
			t.Errorf("%s is not stripped", bins[0])
		}
		f.Close()
		if wheels, _ := filepath.Glob(filepath.Join(dir, "gavel-*-manylinux_2_17_"+wheelArch[arch]+"*.whl")); len(wheels) != 1 {
			t.Errorf("%s: wheels %v, want one", arch, wheels)
		}
	}
}
