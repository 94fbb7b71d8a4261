// Command benchrun runs the gavel benchmark against its peers in one go and
// prints one table: it generates the CRM datasets (or reuses them), runs
// each peer as its own process, measuring wall time, CPU time and peak
// RSS, checks that every grader agrees with the counts the generator
// expects, and prints rollouts/s, MB/s, peak RSS and the ratios the targets
// are stated in.
//
// The peers are programs built beforehand into -bin (make bench does it):
//
//	bench-floor          read floor: Parquet pages, or JSON Lines.zst lines
//	bench-pqarrowfloor   read floor through arrow-go pqarrow record batches
//	gavel                gavel grade, per-row and tasks mode, Parquet and JSONL.zst
//	bench-duckdb         VER-002 and VER-004 required checks in DuckDB SQL
//	bench-jsonmaps       the same checks in Go, encoding/json into maps
//	python3 grade.py     the same checks in standard-library Python
//
// on two workloads: repeated worlds (today's data, many rollouts per
// initial world) and unique worlds (a new world per rollout). DuckDB and
// Go-maps grade datasets of TASK-002 and TASK-004 only, beside gavel on the
// same files, so that they parse every row gavel parses.
//
// A peer whose program is missing is skipped with a note.
//
// Usage:
//
//	benchrun [-rollouts N] [-data DIR] [-bin DIR] [-repeat K]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/gavelhq/gavel/bench"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/internal/atomicfile"
)

func main() {
	rollouts := 1_000_000
	if s := os.Getenv("ROLLOUTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchrun: ROLLOUTS=%q is not a number\n", s)
			os.Exit(2)
		}
		rollouts = n
	}
	var c config
	flag.IntVar(&c.rollouts, "rollouts", rollouts, "rollouts `N` per dataset (default from $ROLLOUTS, else 1M)")
	flag.Uint64Var(&c.seed, "seed", 1, "generator `SEED`")
	flag.StringVar(&c.data, "data", "bench-data", "`DIR` for the datasets (kept and reused) and the outputs")
	flag.StringVar(&c.bin, "bin", "bin", "`DIR` holding the peer programs")
	flag.StringVar(&c.python, "python", "python3", "Python interpreter `PATH`")
	flag.StringVar(&c.script, "script", "bench/python/grade.py", "the Python peer's `PATH`")
	flag.StringVar(&c.only, "only", "", "comma-separated peer `NAMES` to run (default all)")
	flag.IntVar(&c.repeat, "repeat", 1, "runs `K` of each peer; the fastest is reported")
	flag.StringVar(&c.jsonOut, "json", "", "also write the measurements as JSON to `PATH`")
	flag.Parse()
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

type config struct {
	rollouts             int
	seed                 uint64
	data, bin            string
	python, script, only string
	repeat               int
	jsonOut              string
}

// datasets are the files the peers read. Two workloads: repeated worlds
// (64 initial worlds per task, shared by many rollouts; the datasets of
// all five tasks, and one of TASK-002 and TASK-004 only) and unique worlds
// (a new world per rollout, TASK-002 and TASK-004 only). The two-task
// datasets are the ones a grader of those two verifiers alone reads in
// full, so that every peer on them grades every row.
type datasets struct {
	parquet, tasks, nested, jsonlZst *bench.Dataset
	jsonl                            string // plain copy of jsonlZst, for Python
	two, unique, uniqueNested        *bench.Dataset
}

// twoTasks are the tasks of the two-task datasets: those whose verifiers
// the SQL, Go-maps and Python peers implement.
var twoTasks = []string{"TASK-002", "TASK-004"}

// peer is one program measured.
type peer struct {
	Name     string `json:"name"`
	Workload string `json:"workload"`
	Input    string `json:"input"`
	// base is the gavel peer of the same dataset, that "vs gavel" divides
	// by.
	base string
	// kind: "floor" (reads only), "grader" (prints passed counts of the
	// two tasks) or "gavel" (writes an output directory).
	kind string
	ds   *bench.Dataset
	argv []string
	out  string // gavel's --out

	Rows    int64   `json:"rows"`
	Wall    float64 `json:"wall_seconds"`
	CPU     float64 `json:"cpu_seconds"`
	MaxRSS  int64   `json:"max_rss_bytes"`
	Load    float64 `json:"load_average"`
	Rate    float64 `json:"rollouts_per_second"`
	MBps    float64 `json:"mb_per_second,omitempty"`
	Agrees  string  `json:"agrees"`
	Skipped string  `json:"skipped,omitempty"`
	bytes   int64   // uncompressed text read, for MB/s
}

func run(ctx context.Context, c config) error {
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, name := range strings.Split(c.only, ",") {
		if name != "" {
			want[name] = true
		}
	}
	ds, err := generate(ctx, c, want)
	if err != nil {
		return err
	}
	bin := func(name string) string { return filepath.Join(c.bin, name) }
	gavelOut := filepath.Join(c.data, "gavel-out")
	gavel := func(name, workload, input string, ds *bench.Dataset, extra ...string) *peer {
		argv := append([]string{bin("gavel"), "grade", "--quiet", "--out", gavelOut}, extra...)
		return &peer{Name: name, Workload: workload, Input: input, kind: "gavel", ds: ds, out: gavelOut, base: name, argv: append(argv, ds.Path)}
	}
	const rep, rep2, uniq = "repeated", "repeated, 2 tasks", "unique, 2 tasks"
	peers := []*peer{
		{Name: "floor", Workload: rep, Input: "parquet", kind: "floor", ds: ds.parquet, base: "gavel", argv: []string{bin("bench-floor"), ds.parquet.Path}},
		{Name: "floor-pqarrow", Workload: rep, Input: "parquet", kind: "floor", ds: ds.parquet, base: "gavel", argv: []string{bin("bench-pqarrowfloor"), ds.parquet.Path}},
		gavel("gavel", rep, "parquet", ds.parquet),
		gavel("gavel-tasks", rep, "parquet+tasks", ds.tasks, "--tasks", ds.tasks.Tasks),
		gavel("gavel-nested", rep, "parquet nested", ds.nested),
		{Name: "floor-jsonl", Workload: rep, Input: "jsonl.zst", kind: "floor", ds: ds.jsonlZst, base: "gavel-jsonl", argv: []string{bin("bench-floor"), ds.jsonlZst.Path}},
		gavel("gavel-jsonl", rep, "jsonl.zst", ds.jsonlZst),
		{Name: "python", Workload: rep, Input: "jsonl", kind: "grader", ds: ds.jsonlZst, base: "gavel-jsonl", argv: []string{c.python, c.script, "--processes", "2", ds.jsonl}},
		{Name: "floor-two", Workload: rep2, Input: "parquet", kind: "floor", ds: ds.two, base: "gavel-two", argv: []string{bin("bench-floor"), ds.two.Path}},
		gavel("gavel-two", rep2, "parquet", ds.two),
		{Name: "duckdb", Workload: rep2, Input: "parquet", kind: "grader", ds: ds.two, base: "gavel-two", argv: []string{bin("bench-duckdb"), "-threads", "2", ds.two.Path}},
		{Name: "go-jsonmaps", Workload: rep2, Input: "parquet", kind: "grader", ds: ds.two, base: "gavel-two", argv: []string{bin("bench-jsonmaps"), "-workers", "2", ds.two.Path}},
		{Name: "floor-unique", Workload: uniq, Input: "parquet", kind: "floor", ds: ds.unique, base: "gavel-unique", argv: []string{bin("bench-floor"), ds.unique.Path}},
		gavel("gavel-unique", uniq, "parquet", ds.unique),
		{Name: "duckdb-unique", Workload: uniq, Input: "parquet", kind: "grader", ds: ds.unique, base: "gavel-unique", argv: []string{bin("bench-duckdb"), "-threads", "2", ds.unique.Path}},
		gavel("gavel-unique-nested", uniq, "parquet nested", ds.uniqueNested),
	}
	// The nested peers are compared with their text twins.
	for _, p := range peers {
		switch p.Name {
		case "gavel-nested":
			p.base = "gavel"
		case "gavel-unique-nested":
			p.base = "gavel-unique"
		}
	}
	var failed []string
	for _, p := range peers {
		if len(want) > 0 && !want[p.Name] {
			p.Skipped = "not asked for"
			continue
		}
		if _, err := exec.LookPath(p.argv[0]); err != nil {
			p.Skipped = "program missing: " + p.argv[0]
			fmt.Fprintf(os.Stderr, "skip %s: %v\n", p.Name, err)
			continue
		}
		if err := measure(ctx, p, c.repeat); err != nil {
			return err
		}
		if !strings.HasPrefix(p.Agrees, "yes") {
			failed = append(failed, p.Name)
		}
	}
	// MB/s counts the uncompressed text each input holds: the two state
	// columns of the Parquet file, the decompressed JSON Lines.
	textBytes := map[*bench.Dataset]int64{}
	for _, p := range peers {
		if p.kind == "floor" && p.bytes > 0 && p.Skipped == "" {
			textBytes[p.ds] = p.bytes
		}
	}
	for _, p := range peers {
		if b := textBytes[p.ds]; b > 0 && p.Wall > 0 {
			p.MBps = float64(b) / 1e6 / p.Wall
		}
	}
	printTable(os.Stdout, c, peers)
	if c.jsonOut != "" {
		data, _ := json.MarshalIndent(map[string]any{
			"rollouts": c.rollouts, "go": runtime.Version(), "cpus": runtime.NumCPU(), "peers": peers,
		}, "", "  ")
		if err := os.WriteFile(c.jsonOut, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("counts disagree with the generator's: %s", strings.Join(failed, ", "))
	}
	return nil
}

// generate writes (or reuses) the datasets that the peers named in want
// read (every dataset when want is empty); the others are left empty.
func generate(ctx context.Context, c config, want map[string]bool) (*datasets, error) {
	var ds datasets
	for _, d := range []struct {
		dst   *(*bench.Dataset)
		cfg   bench.DatasetConfig
		peers []string
	}{
		{&ds.parquet, bench.DatasetConfig{Ext: ".parquet"}, []string{"floor", "floor-pqarrow", "gavel"}},
		{&ds.tasks, bench.DatasetConfig{Ext: ".parquet", TasksMode: true}, []string{"gavel-tasks"}},
		{&ds.nested, bench.DatasetConfig{Ext: ".parquet", Nested: true}, []string{"gavel-nested"}},
		{&ds.jsonlZst, bench.DatasetConfig{Ext: ".jsonl.zst"}, []string{"floor-jsonl", "gavel-jsonl", "python"}},
		{&ds.two, bench.DatasetConfig{Ext: ".parquet", Tasks: twoTasks}, []string{"floor-two", "gavel-two", "duckdb", "go-jsonmaps"}},
		{&ds.unique, bench.DatasetConfig{Ext: ".parquet", UniqueWorlds: true, Tasks: twoTasks}, []string{"floor-unique", "gavel-unique", "duckdb-unique"}},
		{&ds.uniqueNested, bench.DatasetConfig{Ext: ".parquet", UniqueWorlds: true, Tasks: twoTasks, Nested: true}, []string{"gavel-unique-nested"}},
	} {
		needed := len(want) == 0
		for _, name := range d.peers {
			needed = needed || want[name]
		}
		if !needed {
			*d.dst = &bench.Dataset{Expected: &gen.Expected{}}
			continue
		}
		cfg := d.cfg
		cfg.Rollouts, cfg.Seed, cfg.Reuse = c.rollouts, c.seed, true
		start := time.Now()
		path := cfg.Path(c.data)
		fmt.Fprintf(os.Stderr, "dataset %s ... ", path)
		// gavel gen writes the dataset in its own process: on Linux a
		// child's peak RSS starts from its parent's at fork, so the driver
		// stays small to measure its peers.
		if _, err := os.Stat(path + ".expected.json"); err != nil {
			argv := []string{filepath.Join(c.bin, "gavel"), "gen", "--quiet", "--out", path,
				"--rollouts", strconv.Itoa(c.rollouts), "--seed", strconv.FormatUint(c.seed, 10)}
			if cfg.TasksMode {
				argv = append(argv, "--tasks-mode")
			}
			if cfg.Nested {
				argv = append(argv, "--nested")
			}
			if cfg.UniqueWorlds {
				argv = append(argv, "--unique-worlds")
			}
			if len(cfg.Tasks) > 0 {
				argv = append(argv, "--tasks", strings.Join(cfg.Tasks, ","))
			}
			if _, err := bench.RunProcess(ctx, argv); err != nil {
				return nil, err
			}
		}
		x, err := cfg.Generate(ctx, c.data)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "%d bytes, %.1fs\n", x.Bytes, time.Since(start).Seconds())
		*d.dst = x
	}
	ds.jsonl = strings.TrimSuffix(ds.jsonlZst.Path, ".zst")
	if _, err := os.Stat(ds.jsonl); err != nil && (len(want) == 0 || want["python"]) {
		fmt.Fprintf(os.Stderr, "dataset %s (decompressed for Python)\n", ds.jsonl)
		if err := decompress(ds.jsonlZst.Path, ds.jsonl); err != nil {
			return nil, err
		}
	}
	return &ds, nil
}

// decompress writes the zstd-decompressed src to dst, atomically.
func decompress(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := zstd.NewReader(in)
	if err != nil {
		return err
	}
	defer zr.Close()
	out, err := atomicfile.Create(dst, atomicfile.Options{})
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := io.Copy(out, zr); err != nil {
		return fmt.Errorf("decompress %s: %w", src, err)
	}
	return out.Commit()
}

// measure runs p repeat times, keeps the fastest run and checks its counts.
func measure(ctx context.Context, p *peer, repeat int) error {
	var best bench.Process
	for i := 0; i < max(repeat, 1); i++ {
		if p.out != "" {
			if err := os.RemoveAll(p.out); err != nil {
				return err
			}
		}
		fmt.Fprintf(os.Stderr, "run %s (load %.2f) ... ", p.Name, bench.LoadAverage())
		pr, err := bench.RunProcess(ctx, p.argv, 0, 3) // gavel: 3 = rows with status error, as generated
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%.2fs, %d MB\n", pr.Wall.Seconds(), pr.MaxRSS>>20)
		if i == 0 || pr.Wall < best.Wall {
			rss := max(best.MaxRSS, pr.MaxRSS)
			best = pr
			best.MaxRSS = rss
		} else {
			best.MaxRSS = max(best.MaxRSS, pr.MaxRSS)
		}
	}
	p.Wall = best.Wall.Seconds()
	p.CPU = (best.User + best.System).Seconds()
	p.MaxRSS = best.MaxRSS
	p.Load = best.Load
	var err error
	p.Agrees, err = check(p, best.Stdout)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	p.Rate = float64(p.Rows) / p.Wall
	return nil
}

// check reads what p reported and compares it with the generator's
// expectations. It returns "yes" or what disagrees.
func check(p *peer, stdout []byte) (string, error) {
	exp := p.ds.Expected
	if p.kind == "gavel" {
		s, err := readSummary(filepath.Join(p.out, "summary.json"))
		if err != nil {
			return "", err
		}
		p.Rows = s.Rollouts
		var bad []string
		if s.Passed != exp.Totals.Passed || s.Failed != exp.Totals.Failed || s.Error != exp.Totals.Error {
			bad = append(bad, fmt.Sprintf("passed/failed/error %d/%d/%d, want %d/%d/%d",
				s.Passed, s.Failed, s.Error, exp.Totals.Passed, exp.Totals.Failed, exp.Totals.Error))
		}
		for _, v := range []string{"VER-002", "VER-004"} {
			want, _ := p.ds.VerifierPassed(v)
			got := s.Verifiers[v]
			// With no errors, a passed rollout of these one-required-check
			// verifiers is a passed required check.
			if got.Passed != want || got.Error != 0 {
				bad = append(bad, fmt.Sprintf("%s passed %d (errors %d), want %d", v, got.Passed, got.Error, want))
			}
		}
		if len(bad) > 0 {
			return "NO: " + strings.Join(bad, "; "), nil
		}
		return "yes (all verifiers)", nil
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout, &rep); err != nil {
		return "", fmt.Errorf("read report %q: %w", stdout, err)
	}
	p.Rows, p.bytes = rep.Rows, rep.Bytes
	if rep.Rows != exp.Totals.Rollouts {
		return fmt.Sprintf("NO: %d rows, want %d", rep.Rows, exp.Totals.Rollouts), nil
	}
	if p.kind == "floor" {
		return "yes (rows)", nil
	}
	var bad []string
	for task, v := range map[string]string{"TASK-002": "VER-002", "TASK-004": "VER-004"} {
		want, _ := p.ds.VerifierPassed(v)
		if got := rep.Passed[task]; got != want {
			bad = append(bad, fmt.Sprintf("%s passed %d, want %d", task, got, want))
		}
	}
	if len(bad) > 0 {
		return "NO: " + strings.Join(bad, "; "), nil
	}
	return "yes (VER-002, VER-004)", nil
}

// summary is the part of gavel's summary.json the driver reads.
type summary struct {
	counts
	Verifiers map[string]counts `json:"verifiers"`
}

type counts struct {
	Rollouts int64 `json:"rollouts"`
	Passed   int64 `json:"passed"`
	Failed   int64 `json:"failed"`
	Error    int64 `json:"error"`
}

func readSummary(path string) (*summary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := new(summary)
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return s, nil
}

// printTable prints the measurements and the ratios the targets name.
func printTable(w io.Writer, c config, peers []*peer) {
	by := map[string]*peer{}
	for _, p := range peers {
		if p.Skipped == "" {
			by[p.Name] = p
		}
	}
	fmt.Fprintf(w, "\n%d rollouts per dataset, %s, %d CPUs, load average now %.2f\n\n",
		c.rollouts, runtime.Version(), runtime.NumCPU(), bench.LoadAverage())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "workload\tpeer\tinput\trollouts/s\tMB/s\tpeak RSS MB\twall s\tCPU s\trollouts/CPU-s\tload\tvs gavel\tcounts\t")
	for _, p := range peers {
		if p.Skipped != "" {
			continue
		}
		ratio := "-"
		if g := by[p.base]; g != nil && g.Rate > 0 {
			ratio = fmt.Sprintf("%.2fx", p.Rate/g.Rate)
		}
		mbps := "-"
		if p.MBps > 0 {
			mbps = fmt.Sprintf("%.0f", p.MBps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%s\t%.0f\t%.2f\t%.2f\t%.0f\t%.2f\t%s\t%s\t\n",
			p.Workload, p.Name, p.Input, p.Rate, mbps, float64(p.MaxRSS)/(1<<20), p.Wall, p.CPU, float64(p.Rows)/p.CPU, p.Load, ratio, p.Agrees)
	}
	tw.Flush()

	fmt.Fprintln(w, "\ntargets (wall-clock rates; by CPU seconds beside them)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// ratio prints a's rate over b's, and the same per CPU-second; the
	// target, if any, applies to the first, or to the second when perCPU.
	ratioBy := func(label, a, b string, target float64, perCPU bool) {
		pa, pb := by[a], by[b]
		if pa == nil || pb == nil || pb.Rate == 0 || pb.CPU == 0 {
			fmt.Fprintf(tw, "%s\tnot measured\t\n", label)
			return
		}
		r := pa.Rate / pb.Rate
		byCPU := (float64(pa.Rows) / pa.CPU) / (float64(pb.Rows) / pb.CPU)
		switch {
		case target == 0:
			fmt.Fprintf(tw, "%s\t%.2f\t(CPU %.2f)\t\t\n", label, r, byCPU)
		case perCPU:
			fmt.Fprintf(tw, "%s\t%.2f\t(CPU %.2f)\tCPU >= %.2f\t%s\t\n", label, r, byCPU, target, verdict(byCPU >= target))
		default:
			fmt.Fprintf(tw, "%s\t%.2f\t(CPU %.2f)\t>= %.2f\t%s\t\n", label, r, byCPU, target, verdict(r >= target))
		}
	}
	ratio := func(label, a, b string, target float64) { ratioBy(label, a, b, target, false) }
	ratio("unique worlds: gavel / Parquet read floor", "gavel-unique", "floor-unique", 0.45)
	ratio("unique worlds: gavel / DuckDB", "gavel-unique", "duckdb-unique", 1.9)
	if p := by["gavel-unique"]; p != nil && p.Wall > 0 {
		fmt.Fprintf(tw, "unique worlds: gavel CPU-seconds / wall-seconds\t%.2f\t\t>= 1.80\t%s\t\n", p.CPU/p.Wall, verdict(p.CPU/p.Wall >= 1.8))
	}
	ratioBy("unique worlds: nested columns / JSON text", "gavel-unique-nested", "gavel-unique", 0.8, true)
	ratio("repeated worlds: gavel / Parquet read floor", "gavel", "floor", 0.55)
	ratio("repeated worlds: gavel JSONL.zst / JSONL.zst floor", "gavel-jsonl", "floor-jsonl", 0.6)
	ratio("repeated worlds, 2 tasks: gavel / DuckDB", "gavel-two", "duckdb", 0)
	ratio("repeated worlds, 2 tasks: gavel / Parquet read floor", "gavel-two", "floor-two", 0)
	ratio("gavel tasks mode / per-row mode", "gavel-tasks", "gavel", 0)
	ratioBy("repeated worlds: nested columns / JSON text (same rollouts)", "gavel-nested", "gavel", 0.8, true)
	ratio("pqarrow floor / page floor", "floor-pqarrow", "floor", 0)
	var rss int64
	for _, p := range by {
		if p.kind == "gavel" {
			rss = max(rss, p.MaxRSS)
		}
	}
	if rss > 0 {
		mb := float64(rss) / (1 << 20)
		fmt.Fprintf(tw, "gavel peak RSS (MB), every workload\t%.0f\t\t<= 128\t%s\t\n", mb, verdict(mb <= 128))
	}
	tw.Flush()
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
