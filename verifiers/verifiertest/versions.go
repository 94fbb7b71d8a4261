package verifiertest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/selftest"
)

// Versions fails t when a Go verifier's code changed and its Version did
// not, so that a fingerprint (which covers the Version, not the code)
// never stays the same over a change of behaviour: `--reuse` would keep
// old checks of new code. golden is the file that records, per verifier,
// its Version and the sha256 of its code at that Version;
// update (a test's -update flag) records the verifiers whose Version was
// raised and refuses the others. help is the command line that updates
// the file, printed in failures ("go test ./graders -update").
//
// Call it from a test of the package that declares the verifiers' grade
// functions: a grade function must be a named function, and its file is
// read from where it was compiled.
func Versions(t testing.TB, vs []*verifiers.Verifier, golden string, update bool, help string) {
	t.Helper()
	recorded := readVersions(t, golden, update)
	next := map[string]versionRecord{}
	for _, v := range vs {
		if v.Remote != nil || v.Definition != "" {
			continue // declarative and remote verifiers carry their own version
		}
		if v.Version < 1 {
			t.Errorf("%s: Version is %d; a Go verifier starts at Version: 1", v.ID, v.Version)
			continue
		}
		sum, err := selftest.CodeHash(v.Grade)
		if err != nil {
			t.Errorf("%s: %v", v.ID, err)
			continue
		}
		got := versionRecord{v.Version, sum}
		old, ok := recorded[v.ID]
		next[v.ID] = got
		switch {
		case ok && got == old:
		case ok && got.hash != old.hash && got.version == old.version:
			// Refused with update too: the old record stays.
			next[v.ID] = old
			file, line := selftest.GradeFile(v.Grade)
			t.Errorf("%s: its code changed (grade function at %s:%d) but its Version is still %d: raise its Version, then run %s",
				v.ID, path.Base(file), line, v.Version, help)
		case ok && got.version < old.version:
			next[v.ID] = old
			t.Errorf("%s: Version %d is lower than the recorded %d: a Version only goes up", v.ID, got.version, old.version)
		case update:
		case !ok:
			t.Errorf("%s: no recorded source hash: run %s", v.ID, help)
		default:
			t.Errorf("%s: Version raised from %d to %d: run %s to record its code", v.ID, old.version, got.version, help)
		}
	}
	for id := range recorded {
		if _, ok := next[id]; !ok && !update {
			t.Errorf("%s is recorded in %s but not registered: run %s", id, golden, help)
		}
	}
	if update {
		writeVersions(t, golden, help, next)
	}
}

type versionRecord struct {
	version int
	hash    string
}

// readVersions reads the golden file: lines "ID VERSION HASH", and
// comments starting with #.
func readVersions(t testing.TB, golden string, update bool) map[string]versionRecord {
	t.Helper()
	data, err := os.ReadFile(golden)
	if errors.Is(err, os.ErrNotExist) && update {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]versionRecord{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		version, err := strconv.Atoi(f[min(1, len(f)-1)])
		if len(f) != 3 || err != nil {
			t.Fatalf("%s:%d: want ID VERSION HASH, got %q", golden, n, line)
		}
		out[f[0]] = versionRecord{version, f[2]}
	}
	return out
}

func writeVersions(t testing.TB, golden, help string, recs map[string]versionRecord) {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Each Go verifier's Version and the sha256 of its code at that version\n")
	fmt.Fprintf(&b, "# (its grade function and the declarations of its file that it uses).\n")
	fmt.Fprintf(&b, "# Raise the Version with the code, then run: %s\n", help)
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "%s %d %s\n", id, recs[id].version, recs[id].hash)
	}
	if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
