package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/internal/reference"
	"github.com/gavelhq/gavel/verifiers"
)

// gavelBinary is gavel built once per test binary, for tests that must run
// it as a process (to kill it, to measure its memory).
func gavelBinary(t *testing.T) string { return gaveltest.Binary(t) }

// referenceForTests is what the stock binary is built with.
func referenceForTests() []*verifiers.Verifier { return reference.Verifiers() }

func TestMain(m *testing.M) {
	// As the stock binary is built: with the reference environments.
	if err := setGoVerifiers(referenceForTests()); err != nil {
		panic(err)
	}
	code := m.Run()
	gaveltest.Cleanup()
	os.Exit(code)
}

// genFiles generates seeds distinct Parquet datasets of rows rows each and
// copies each copies times into dir, so that many input files cost the
// generation of a few.
func genFiles(t *testing.T, dir string, seeds, rows, copies, rowGroupRows int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	for s := range seeds {
		path := filepath.Join(src, fmt.Sprintf("seed%d.parquet", s))
		genData(t, path, rows, s+1, 0.01, rowGroupRows)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for c := range copies {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("batch-%02d-%d.parquet", c, s)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// genData generates a dataset with the gavel binary (the test binary may be
// built with the race detector, which slows generation down tenfold).
func genData(t *testing.T, path string, rows, seed int, badShare float64, rowGroupRows int) {
	t.Helper()
	args := []string{"gen", "--out", path, "--rollouts", fmt.Sprint(rows), "--seed", fmt.Sprint(seed), "--bad-share", fmt.Sprint(badShare)}
	if rowGroupRows > 0 {
		args = append(args, "--row-group-rows", fmt.Sprint(rowGroupRows))
	}
	if out, err := exec.Command(gavelBinary(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("gavel gen: %v\n%s", err, out)
	}
}

// gavelCmd returns gavel with args, run in dir.
func gavelCmd(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(gavelBinary(t), args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	return cmd, &stderr
}

// exitCodeOf returns the exit status of a finished command, or -1 when a
// signal ended it.
func exitCodeOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -2
	}
	return 0
}

func countParts(dir string) int {
	entries, _ := os.ReadDir(filepath.Join(dir, "rewards"))
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "part-") {
			n++
		}
	}
	return n
}

// checkPartsWhole opens every part under its final name and reads it to the
// end: a part that exists is complete.
func checkPartsWhole(t *testing.T, out string) {
	t.Helper()
	for _, sub := range []string{"rewards", "checks"} {
		entries, _ := os.ReadDir(filepath.Join(out, sub))
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "part-") {
				continue
			}
			path := filepath.Join(out, sub, e.Name())
			rd, err := columnar.Open(path, columnar.Options{})
			if err != nil {
				t.Fatalf("part %s is not whole: %v", path, err)
			}
			for {
				b, err := rd.Next(4096)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("part %s is not whole: %v", path, err)
				}
				b.Release()
			}
			rd.Close()
		}
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
		var m struct {
			Inputs []struct {
				Part     string `json:"part"`
				Complete bool   `json:"complete"`
			} `json:"inputs"`
		}
		readJSONInto(t, filepath.Join(out, "manifest.json"), &m)
		for _, in := range m.Inputs {
			if _, err := os.Stat(filepath.Join(out, "rewards", in.Part)); in.Complete && err != nil {
				t.Fatalf("manifest says %s is complete, but: %v", in.Part, err)
			}
		}
	}
}

// compareOutputs compares two output directories file by file, byte for
// byte, except the timing fields of summary.json.
func compareOutputs(t *testing.T, want, got string) {
	t.Helper()
	list := func(root string) []string {
		var files []string
		filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && !strings.Contains(path, "_shards") {
				rel, _ := filepath.Rel(root, path)
				files = append(files, rel)
			}
			return nil
		})
		sort.Strings(files)
		return files
	}
	wf, gf := list(want), list(got)
	if strings.Join(wf, " ") != strings.Join(gf, " ") {
		t.Fatalf("files differ:\nwant %v\ngot  %v", wf, gf)
	}
	for _, f := range wf {
		a, _ := os.ReadFile(filepath.Join(want, f))
		b, _ := os.ReadFile(filepath.Join(got, f))
		if f == "summary.json" {
			a, b = dropTiming(a), dropTiming(b)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from the uninterrupted run's (%d bytes, want %d)", f, len(b), len(a))
		}
	}
}

func dropTiming(data []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, `"elapsed_seconds"`) || strings.Contains(l, `"rows_per_second"`) {
			continue
		}
		out = append(out, l)
	}
	return []byte(strings.Join(out, "\n"))
}

// TestResumeAfterKill grades 200,000 rollouts in 40 files, stops the run at
// seven points (SIGKILL five times, SIGTERM and SIGINT once each), checks
// after each stop that every part present is whole, resumes, and compares
// the final output with an uninterrupted run byte for byte.
func TestResumeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("grades 200,000 rollouts twice")
	}
	// Parallel: its state is its own (directories, gavel processes).
	t.Parallel()
	bin := gavelBinary(t)
	_ = bin
	root := t.TempDir()
	in := filepath.Join(root, "in")
	genFiles(t, in, 4, 5000, 10, 5000)
	refDir, runDir := filepath.Join(root, "ref"), filepath.Join(root, "run")
	os.MkdirAll(refDir, 0o755)
	os.MkdirAll(runDir, 0o755)
	args := []string{"grade", "--quiet", "--workers", "2", "--out", "out", in}

	cmd, stderr := gavelCmd(t, refDir, args...)
	if code := exitCodeOf(cmd.Run()); code != 3 {
		t.Fatalf("uninterrupted run: exit %d, want 3 (the data has bad rows)\n%s", code, stderr)
	}

	out := filepath.Join(runDir, "out")
	// kept holds the identity of the parts of every unit complete after a
	// stop: a resume keeps them as they are, it does not grade them again.
	kept := map[string]fileID{}
	stops := []struct {
		sig   syscall.Signal
		parts int // stop once this many parts exist
		code  int // exit status expected (-1: killed)
	}{
		{syscall.SIGKILL, 0, -1},
		{syscall.SIGKILL, 3, -1},
		{syscall.SIGTERM, 8, 143},
		{syscall.SIGKILL, 14, -1},
		{syscall.SIGINT, 20, 130},
		{syscall.SIGKILL, 27, -1},
		{syscall.SIGKILL, 34, -1},
	}
	for i, s := range stops {
		a := args
		if i > 0 {
			a = append([]string{"grade", "--resume"}, args[1:]...)
		}
		cmd, stderr := gavelCmd(t, runDir, a...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		deadline := time.Now().Add(2 * time.Minute)
		var err error
	wait:
		for {
			select {
			case err = <-exited:
				t.Fatalf("stop %d: the run ended before %d parts: %v\n%s", i, s.parts, err, stderr)
			case <-time.After(2 * time.Millisecond):
			}
			if (s.parts == 0 && fileExists(filepath.Join(out, "manifest.json"))) || (s.parts > 0 && countParts(out) >= s.parts) {
				break wait
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("stop %d: no progress", i)
			}
		}
		cmd.Process.Signal(s.sig)
		err = <-exited
		code := exitCodeOf(err)
		if s.code >= 0 && code != s.code {
			t.Errorf("stop %d (%v): exit %d, want %d\n%s", i, s.sig, code, s.code, stderr)
		}
		if s.code >= 0 && !strings.Contains(stderr.String(), "--resume") {
			t.Errorf("stop %d (%v): stderr does not suggest --resume:\n%s", i, s.sig, stderr)
		}
		checkPartsWhole(t, out)
		if fileExists(filepath.Join(out, "_SUCCESS")) {
			t.Fatalf("stop %d: _SUCCESS after an interrupted run", i)
		}
		checkKept(t, out, kept, fmt.Sprintf("stop %d", i))
		for name, id := range doneParts(t, out) {
			if _, ok := kept[name]; !ok {
				kept[name] = id
			}
		}
		t.Logf("stop %d (%v) at %d parts: %d parts complete", i, s.sig, s.parts, countParts(out))
	}
	cmd, stderr = gavelCmd(t, runDir, append([]string{"grade", "--resume"}, args[1:]...)...)
	if code := exitCodeOf(cmd.Run()); code != 3 {
		t.Fatalf("final resume: exit %d, want 3\n%s", code, stderr)
	}
	compareOutputs(t, filepath.Join(refDir, "out"), out)
	checkKept(t, out, kept, "final resume")
	// Of the units whose parts existed at the last stop, at most the few
	// being committed lacked their statistics.
	if units, want := len(kept)/2, stops[len(stops)-1].parts/2; units < want {
		t.Errorf("%d units complete across the stops, want at least %d", units, want)
	}
	t.Logf("%d units kept across the stops", len(kept)/2)
}

// fileID is what tells a file apart from one written again in its place.
type fileID struct {
	ino, size uint64
	mtime     int64
}

func statID(t *testing.T, path string) (fileID, bool) {
	t.Helper()
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileID{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fileID{ino: uint64(st.Ino), size: uint64(fi.Size()), mtime: fi.ModTime().UnixNano()}, true
}

// doneParts returns, by path under out, the identity of the rewards and
// checks parts of every unit a resume takes as done: both parts and the
// unit's statistics present.
func doneParts(t *testing.T, out string) map[string]fileID {
	t.Helper()
	done := map[string]fileID{}
	entries, _ := os.ReadDir(filepath.Join(out, "rewards"))
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "part-") {
			continue
		}
		unit := strings.TrimSuffix(name, filepath.Ext(name))
		if !fileExists(filepath.Join(out, "_stats", unit+".json")) {
			continue
		}
		rw, okR := statID(t, filepath.Join(out, "rewards", name))
		ch, okC := statID(t, filepath.Join(out, "checks", name))
		if okR && okC {
			done[filepath.Join("rewards", name)] = rw
			done[filepath.Join("checks", name)] = ch
		}
	}
	return done
}

// checkKept fails unless every file in kept is still the one recorded.
func checkKept(t *testing.T, out string, kept map[string]fileID, when string) {
	t.Helper()
	for name, want := range kept {
		got, ok := statID(t, filepath.Join(out, name))
		if !ok || got != want {
			t.Errorf("%s: %s, done before, was written again (%+v, was %+v)", when, name, got, want)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func readJSONInto(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestShardsCommit runs four shard processes at once into one output
// directory, one large Parquet file among the inputs split into row-group
// ranges, and checks that gavel commit refuses a missing shard and a
// missing part, then joins the shards into exactly the output of a single
// process.
func TestShardsCommit(t *testing.T) {
	root := t.TempDir()
	in := filepath.Join(root, "in")
	os.MkdirAll(in, 0o755)
	genData(t, filepath.Join(in, "big.parquet"), 12000, 5, 0.02, 200)
	for i := range 3 {
		genData(t, filepath.Join(in, fmt.Sprintf("small-%d.jsonl.zst", i)), 700, 10+i, 0.02, 0)
	}
	refDir, runDir := filepath.Join(root, "ref"), filepath.Join(root, "run")
	os.MkdirAll(refDir, 0o755)
	os.MkdirAll(runDir, 0o755)
	inputs := []string{filepath.Join(in, "big.parquet"), filepath.Join(in, "*.jsonl.zst")}
	args := append([]string{"grade", "--quiet", "--workers", "1", "--out", "out"}, inputs...)

	cmd, stderr := gavelCmd(t, refDir, args...)
	if code := exitCodeOf(cmd.Run()); code != 3 {
		t.Fatalf("single run: exit %d, want 3\n%s", code, stderr)
	}
	if n := countParts(filepath.Join(refDir, "out")); n != 4+3 {
		t.Fatalf("single run wrote %d parts, want 7 (60 row groups in 4 ranges, 3 files)", n)
	}

	commit := func() (int, string) {
		cmd, stderr := gavelCmd(t, runDir, "commit", "out")
		return exitCodeOf(cmd.Run()), stderr.String()
	}
	var wg sync.WaitGroup
	errs := make([]string, 4)
	for i := range 4 {
		if i == 3 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := append([]string{"grade", "--shard", fmt.Sprintf("%d/4", i)}, args[1:]...)
			cmd, stderr := gavelCmd(t, runDir, a...)
			if code := exitCodeOf(cmd.Run()); code != 0 && code != 3 {
				errs[i] = fmt.Sprintf("shard %d/4: exit %d\n%s", i, code, stderr)
			}
		}()
	}
	wg.Wait()
	if code, msg := commit(); code != 1 || !strings.Contains(msg, "shard 3/4 missing") {
		t.Errorf("commit without shard 3/4: exit %d, %q; want 1 naming the shard", code, msg)
	}
	// All four at once, over the three that already ran.
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := append([]string{"grade", "--shard", "auto/4"}, args[1:]...)
			cmd, stderr := gavelCmd(t, runDir, a...)
			cmd.Env = append(os.Environ(), fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", i+1), "SLURM_ARRAY_TASK_MIN=1")
			if code := exitCodeOf(cmd.Run()); code != 0 && code != 3 {
				errs[i] = fmt.Sprintf("shard %d/4: exit %d\n%s", i, code, stderr)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	out := filepath.Join(runDir, "out")
	part := filepath.Join(out, "rewards", "part-00005.parquet")
	if err := os.Remove(part); err != nil {
		t.Fatal(err)
	}
	if code, msg := commit(); code != 1 || !strings.Contains(msg, "shard 1/4 lacks part-00005.parquet") {
		t.Errorf("commit without a part: exit %d, %q; want 1 naming shard and part", code, msg)
	}
	cmd, stderr = gavelCmd(t, runDir, append([]string{"grade", "--resume", "--shard", "1/4"}, args[1:]...)...)
	if code := exitCodeOf(cmd.Run()); code != 0 && code != 3 {
		t.Fatalf("resume shard 1/4: exit %d\n%s", code, stderr)
	}
	if code, msg := commit(); code != 0 {
		t.Fatalf("commit: exit %d\n%s", code, msg)
	}
	compareOutputs(t, filepath.Join(refDir, "out"), out)
}

// TestResumeIdentity resumes a run whose flags are written differently but
// mean the same, and refuses one whose configuration differs, naming the
// setting, or whose manifest predates the config section.
func TestResumeIdentity(t *testing.T) {
	dir := t.TempDir()
	line, _, _ := strings.Cut(mustRead(t, badRows), "\n")
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if code, _, stderr := runCLI(t, "grade", "--quiet", "--out", out, "--timeout", "10s", in); code != 0 {
		t.Fatalf("grade: exit %d\n%s", code, stderr)
	}
	tests := []struct {
		name   string
		args   []string
		want   int
		stderr string
	}{
		{"timeout left at its default", nil, 0, ""},
		{"timeout given as the default", []string{"--timeout", "10000ms", "--format", "parquet", "--workers", "3"}, 0, ""},
		{"other timeout", []string{"--timeout", "20s"}, 2, "timeout: 10s there, 20s given"},
		{"other format", []string{"--format", "jsonl"}, 2, "format: parquet there, jsonl given"},
		{"other map", []string{"--map", "output=answer"}, 2, "output column: output there, answer given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"grade", "--quiet", "--resume", "--out", out}, tt.args...)
			code, _, stderr := runCLI(t, append(args, in)...)
			if code != tt.want || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("gavel %v: exit %d, stderr %q; want %d and %q", args, code, stderr, tt.want, tt.stderr)
			}
			if tt.want == 2 && !strings.Contains(stderr, "gavel: --resume: ") {
				t.Errorf("stderr %q does not name --resume", stderr)
			}
		})
	}

	// A manifest written before the config section: resuming is refused
	// with the advice to start again.
	path := filepath.Join(out, "manifest.json")
	var m map[string]any
	readJSONInto(t, path, &m)
	delete(m, "config")
	m["flags"] = map[string]string{"timeout": "10s"}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "grade", "--quiet", "--resume", "--out", out, in)
	if code != 2 || !strings.Contains(stderr, "grade it again from the start") || !strings.Contains(stderr, "drop --resume") {
		t.Errorf("resume of an old directory: exit %d, stderr %q; want 2 saying to start again", code, stderr)
	}
}
