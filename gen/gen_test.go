package gen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// genResult is what Generate wrote for one Config.
type genResult struct {
	data, tasks []byte
	exp         *Expected
	rows        []expRow
}

// expRow is one line of Outputs.Rows.
type expRow struct {
	Row        int      `json:"row"`
	RolloutID  *string  `json:"rollout_id"`
	TaskID     *string  `json:"task_id"`
	VerifierID *string  `json:"verifier_id"`
	Model      *string  `json:"model"`
	Behaviour  string   `json:"behaviour"`
	Variant    string   `json:"variant"`
	Status     string   `json:"status"`
	ErrorKind  *string  `json:"error_kind"`
	Reward     *float64 `json:"reward"`
	Checks     []string `json:"checks"`
}

func generate(t *testing.T, cfg Config) genResult {
	t.Helper()
	var data, tasks, rows bytes.Buffer
	exp, err := Generate(context.Background(), cfg, Outputs{Data: &data, Tasks: &tasks, Rows: &rows})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	res := genResult{data: data.Bytes(), tasks: tasks.Bytes(), exp: exp}
	for i, line := range strings.Split(strings.TrimSuffix(rows.String(), "\n"), "\n") {
		var r expRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("expected row %d: %v: %s", i, err, line)
		}
		res.rows = append(res.rows, r)
	}
	want := cfg.Rollouts
	if want == 0 {
		want = 1000
	}
	if got := len(res.rows); got != want {
		t.Fatalf("%d expected rows, want %d", got, want)
	}
	return res
}

// lines splits JSON Lines data, decompressing zstd.
func lines(t *testing.T, data []byte, zst bool) [][]byte {
	t.Helper()
	if zst {
		d, err := zstd.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(d); err != nil {
			t.Fatal(err)
		}
		data = buf.Bytes()
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		out = append(out, slices.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// inputRow is a JSON Lines row as a reader sees it.
type inputRow struct {
	RolloutID *string         `json:"rollout_id"`
	TaskID    *string         `json:"task_id"`
	Final     json.RawMessage `json:"final_state"`
	Initial   json.RawMessage `json:"initial_state"`
	Output    json.RawMessage `json:"output"`
	Log       json.RawMessage `json:"log"`
	Model     string          `json:"model"`
	RunID     string          `json:"run_id"`
	Sample    *int64          `json:"sample"`
}

func TestGenDeterministic(t *testing.T) {
	for _, f := range columnar.DatasetFormats {
		t.Run(string(f), func(t *testing.T) {
			dir := t.TempDir()
			run := func(name string, seed uint64) [][]byte {
				out := filepath.Join(dir, name+f.Ext())
				cfg := Config{Out: out, Rollouts: 150, Seed: seed, BadShare: 0.1, TasksMode: true, RowGroupRows: 64}
				if _, err := Run(context.Background(), cfg); err != nil {
					t.Fatalf("Run: %v", err)
				}
				data, tasks, expected, _ := cfg.Paths()
				var files [][]byte
				for _, p := range []string{data, tasks, expected} {
					b, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					files = append(files, b)
				}
				return files
			}
			a, b, c := run("a", 7), run("b", 7), run("c", 8)
			for i := range a {
				if i == 2 {
					// The expected counts name the dataset path.
					a[i] = bytes.ReplaceAll(a[i], []byte("a"+f.Ext()), []byte("b"+f.Ext()))
					a[i] = bytes.ReplaceAll(a[i], []byte("a.tasks"+f.Ext()), []byte("b.tasks"+f.Ext()))
				}
				if !bytes.Equal(a[i], b[i]) {
					t.Errorf("file %d differs between two runs with the same seed", i)
				}
			}
			if bytes.Equal(b[0], c[0]) {
				t.Error("seeds 7 and 8 gave the same dataset")
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

func TestGenBadShareKeepsOtherRows(t *testing.T) {
	clean := generate(t, Config{Rollouts: 200, Format: columnar.DatasetJSONL, Seed: 3})
	dirty := generate(t, Config{Rollouts: 200, Format: columnar.DatasetJSONL, Seed: 3, BadShare: 0.2})
	cl, dl := lines(t, clean.data, false), lines(t, dirty.data, false)
	same := 0
	for i := range cl {
		if dirty.rows[i].Behaviour != "bad" {
			if !bytes.Equal(cl[i], dl[i]) {
				t.Fatalf("row %d changed with the bad share:\n%s\n%s", i, cl[i], dl[i])
			}
			same++
		}
	}
	if same == len(cl) || same == 0 {
		t.Errorf("%d of %d rows kept: want some bad rows and some good ones", same, len(cl))
	}
}

func TestGenCountsAddUp(t *testing.T) {
	res := generate(t, Config{Rollouts: 1000, Format: columnar.DatasetJSONL, Seed: 11, BadShare: 0.05})
	e := res.exp

	// Recount every group from the expected rows.
	type key struct{ group, id string }
	recount := map[key]*Counts{}
	add := func(k key, r *expRow) {
		c := recount[k]
		if c == nil {
			c = &Counts{}
			recount[k] = c
		}
		v := verdict{status: r.Status, checksTotal: len(r.Checks)}
		for _, s := range r.Checks {
			if s == "pass" {
				v.checksPassed++
			}
		}
		v.hasReward = r.Reward != nil
		c.add(&v)
	}
	str := func(s *string) string {
		if s == nil {
			return "null"
		}
		return *s
	}
	for i := range res.rows {
		r := &res.rows[i]
		add(key{"total", ""}, r)
		add(key{"verifier", str(r.VerifierID)}, r)
		add(key{"task", str(r.TaskID)}, r)
		if r.Behaviour != "bad" {
			add(key{"behaviour", str(r.TaskID) + "/" + r.Behaviour}, r)
		}
		if r.Reward != nil {
			n := len(r.Checks)
			p := 0
			for _, s := range r.Checks {
				if s == "pass" {
					p++
				}
			}
			if want := float64(p) / float64(n); *r.Reward != want {
				t.Errorf("row %d: reward %v, want %d/%d", r.Row, *r.Reward, p, n)
			}
		}
	}
	opts := cmp.Options{cmpopts.IgnoreUnexported(Counts{}), cmpopts.EquateApprox(0, 1e-12)}
	check := func(k key, got Counts) {
		t.Helper()
		want := recount[k]
		if want == nil {
			t.Errorf("%v: in the expected counts but no row has it", k)
			return
		}
		want.finish()
		if diff := cmp.Diff(*want, got, opts); diff != "" {
			t.Errorf("%v counts (-recounted +expected):\n%s", k, diff)
		}
		delete(recount, k)
	}
	check(key{"total", ""}, e.Totals)
	for _, v := range e.Verifiers {
		check(key{"verifier", str(v.VerifierID)}, v.Counts)
	}
	for _, tc := range e.Tasks {
		check(key{"task", str(tc.TaskID)}, tc.Counts)
	}
	for _, b := range e.Behaviours {
		check(key{"behaviour", b.TaskID + "/" + b.Behaviour}, b.Counts)
	}
	for k, c := range recount {
		t.Errorf("%v: %d rows not in the expected counts", k, c.Rollouts)
	}

	// The groups partition the rows.
	sum := func(cs []Counts) (s Counts) {
		for _, c := range cs {
			s.Rollouts += c.Rollouts
			s.Passed += c.Passed
			s.Failed += c.Failed
			s.Error += c.Error
		}
		return s
	}
	var vs, ts, bs, vars []Counts
	for _, v := range e.Verifiers {
		vs = append(vs, v.Counts)
	}
	for _, v := range e.Tasks {
		ts = append(ts, v.Counts)
	}
	for _, v := range e.Behaviours {
		bs = append(bs, v.Counts)
	}
	for _, v := range e.Variants {
		vars = append(vars, v.Counts)
	}
	var bad int64
	for _, n := range e.BadRows {
		bad += n
	}
	tot := Counts{Rollouts: e.Totals.Rollouts, Passed: e.Totals.Passed, Failed: e.Totals.Failed, Error: e.Totals.Error}
	if got := sum(vs); got != tot {
		t.Errorf("verifiers sum to %+v, want %+v", got, tot)
	}
	if got := sum(ts); got != tot {
		t.Errorf("tasks sum to %+v, want %+v", got, tot)
	}
	good := Counts{Rollouts: tot.Rollouts - bad, Passed: tot.Passed, Failed: tot.Failed, Error: tot.Error - bad}
	if got := sum(bs); got != good {
		t.Errorf("behaviours sum to %+v, want %+v", got, good)
	}
	if got := sum(vars); got != good {
		t.Errorf("variants sum to %+v, want %+v", got, good)
	}
	if got, want := tot.Passed+tot.Failed+tot.Error, tot.Rollouts; got != want {
		t.Errorf("passed+failed+error = %d, want %d", got, want)
	}
	k := e.ErrorsByKind
	if got, want := k.Input+k.NoVerifier+k.Verifier, tot.Error; got != want {
		t.Errorf("errors by kind sum to %d, want %d", got, want)
	}
	if got, want := k.Input+k.NoVerifier, bad; got != want {
		t.Errorf("input and no_verifier errors = %d, want the %d bad rows", got, want)
	}
	if got, want := k.NoVerifier, e.BadRows[BadUnknownTask]; got != want {
		t.Errorf("no_verifier errors = %d, want the %d unknown-task rows", got, want)
	}
	if k.Verifier == 0 {
		t.Error("no TASK-003 rollout in a world without a closed-won stage")
	}

	var table bytes.Buffer
	if err := e.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"VER-001", "VER-006", "(none)", "total", "errors by kind", "no_verifier", "bad rows by kind", BadLine} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

func TestGenStates(t *testing.T) {
	res := generate(t, Config{Rollouts: 250, Format: columnar.DatasetJSONLZst, Seed: 5})
	var sizes []int
	for i, line := range lines(t, res.data, true) {
		var r inputRow
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if r.RolloutID == nil || *r.RolloutID != fmt.Sprintf("r-%07d", i) {
			t.Errorf("row %d: rollout_id %v", i, r.RolloutID)
		}
		if r.Sample == nil || r.Model == "" || !strings.HasPrefix(r.RunID, "run-") {
			t.Errorf("row %d: metadata model %q run_id %q sample %v", i, r.Model, r.RunID, r.Sample)
		}
		var out string
		if err := json.Unmarshal(r.Output, &out); err != nil {
			t.Errorf("row %d: output is not a string: %s", i, r.Output)
		}
		var log []map[string]any
		if err := json.Unmarshal(r.Log, &log); err != nil {
			t.Errorf("row %d: log is not an array of objects: %v", i, err)
		}
		for _, ev := range log {
			if ev["eventType"] != "tool_call" || ev["tool"] == "" {
				t.Errorf("row %d: log event %v", i, ev)
			}
		}
		for name, raw := range map[string]json.RawMessage{"initial": r.Initial, "final": r.Final} {
			if len(raw) == 0 || raw[0] != '{' {
				t.Fatalf("row %d: %s state is not a nested object", i, name)
			}
			s := parseState(t, raw)
			if n := len(s.Opps); n < 20 || n > 42 {
				t.Errorf("row %d: %s state has %d opportunities", i, name, n)
			}
			for _, id := range []string{"USR-002", "USR-003", "USR-004"} {
				if _, ok := s.Users[id]; !ok {
					t.Errorf("row %d: %s state lacks %s", i, name, id)
				}
			}
		}
		s := parseState(t, r.Initial)
		if n := len(s.Opps); n > 40 {
			t.Errorf("row %d: initial state has %d opportunities", i, n)
		}
		if s.Opps["OPP-0001"].Status != "open" {
			t.Errorf("row %d: OPP-0001 is not open", i)
		}
		lost, won := false, false
		for _, st := range s.Stages {
			lost = lost || (st.IsClosed && st.Probability == 0)
			won = won || (st.IsClosed && st.Probability == 100)
		}
		if !lost || (!won && *r.TaskID != "TASK-003") {
			t.Errorf("row %d: stages lack a closed-won or closed-lost stage", i)
		}
		inactive := 0
		for _, u := range s.Users {
			if !u.Active {
				inactive++
			}
		}
		if inactive == 0 && *r.TaskID == "TASK-006" {
			t.Errorf("row %d: TASK-006 world with every user active", i)
		}
		sizes = append(sizes, len(r.Initial))
	}
	sum := 0
	for _, n := range sizes {
		sum += n
		if n < 2500 || n > 9000 {
			t.Errorf("state of %d bytes", n)
		}
	}
	if mean := sum / len(sizes); mean < 4000 || mean > 6500 {
		t.Errorf("mean state size %d bytes, want about 5 KB", mean)
	}
}

// The won stage's id and position vary from world to world.
func TestGenWonStageVaries(t *testing.T) {
	ids := map[string]bool{}
	r := newTestRand(1)
	for range 64 {
		w := newWorld(r, "TASK-003", worldOptions{})
		ids[w.stages[w.won].id] = true
	}
	if len(ids) < 4 {
		t.Errorf("won stage ids %v: want at least four different ones", ids)
	}
}

func TestGenBehaviours(t *testing.T) {
	res := generate(t, Config{Rollouts: 1500, Format: columnar.DatasetJSONL, Seed: 2})
	wantVariants := map[string][]string{
		"TASK-001": {"created", "wrong-amount", "wrong-owner", "created-twice", "wrong-name", "edited-existing", "created-won", "nothing"},
		"TASK-002": {"all-moved", "some-moved", "closed-too", "wrong-owner", "all-to-wrong-owner", "closed-only", "nothing"},
		"TASK-003": {"closed-won", "amount-changed", "status-left-open", "marked-lost", "wrong-stage", "nothing"},
		"TASK-004": {"right-total", "right-total-world-changed", "unweighted", "included-won", "not-divided", "slip", "nothing"},
		"TASK-006": {"named-top", "named-top-world-changed", "named-trap", "named-both", "named-runner-up", "nothing"},
	}
	seen := map[string]bool{}
	for _, v := range res.exp.Variants {
		seen[v.TaskID+"/"+v.Variant] = true
		if !slices.Contains(wantVariants[v.TaskID], v.Variant) {
			t.Errorf("unexpected variant %s/%s", v.TaskID, v.Variant)
		}
	}
	for task, vs := range wantVariants {
		for _, v := range vs {
			if !seen[task+"/"+v] {
				t.Errorf("variant %s/%s never drawn", task, v)
			}
		}
		for _, b := range Behaviours {
			found := false
			for _, bc := range res.exp.Behaviours {
				found = found || (bc.TaskID == task && bc.Behaviour == b.String() && bc.Rollouts > 0)
			}
			if !found {
				t.Errorf("behaviour %s never drawn for %s", b, task)
			}
		}
	}
	tot := res.exp.Totals
	if tot.Passed == 0 || tot.Failed == 0 || tot.Error == 0 {
		t.Errorf("totals %+v: want every status", tot)
	}
	// Stronger models pass more often.
	passRate := map[string][2]int{}
	for _, r := range res.rows {
		pr := passRate[*r.Model]
		pr[1]++
		if r.Status == StatusPassed {
			pr[0]++
		}
		passRate[*r.Model] = pr
	}
	first, last := passRate[defaultModels[0]], passRate[defaultModels[len(defaultModels)-1]]
	if float64(first[0])/float64(first[1]) <= float64(last[0])/float64(last[1]) {
		t.Errorf("pass rates %v: the first model should pass more often than the last", passRate)
	}
}

// TestGenExpectedMatchesSpecRules applies the rules of the CRM verifiers
// (verifiers/crm), written here independently of the generator, to every
// generated rollout and compares the outcome with the expected one. It
// also checks that the constructions are far from the rules' edges
// (tolerances, ties), so that floating-point sums cannot tip them.
func TestGenExpectedMatchesSpecRules(t *testing.T) {
	for _, cfg := range []Config{
		{Rollouts: 800, Format: columnar.DatasetJSONL, Seed: 1},
		{Rollouts: 300, Format: columnar.DatasetJSONL, Seed: 99, TasksMode: true},
		{Rollouts: 400, Format: columnar.DatasetJSONL, Seed: 5, UniqueWorlds: true},
	} {
		t.Run(fmt.Sprintf("seed=%d/tasks=%v/unique=%v", cfg.Seed, cfg.TasksMode, cfg.UniqueWorlds), func(t *testing.T) {
			res := generate(t, cfg)
			var tasksInitial map[string]json.RawMessage
			if cfg.TasksMode {
				tasksInitial = map[string]json.RawMessage{}
				for _, line := range lines(t, res.tasks, false) {
					var tr struct {
						TaskID  string          `json:"task_id"`
						Initial json.RawMessage `json:"initial_state"`
					}
					if err := json.Unmarshal(line, &tr); err != nil {
						t.Fatal(err)
					}
					tasksInitial[tr.TaskID] = tr.Initial
				}
			}
			for i, line := range lines(t, res.data, false) {
				var r inputRow
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatalf("row %d: %v", i, err)
				}
				initial := r.Initial
				if cfg.TasksMode {
					initial = tasksInitial[*r.TaskID]
				}
				var output string
				if err := json.Unmarshal(r.Output, &output); err != nil {
					t.Fatal(err)
				}
				checks, required := specChecks(t, *r.TaskID, parseState(t, r.Final), parseState(t, initial), r.Final, initial, output)
				want := res.rows[i]
				if diff := cmp.Diff(want.Checks, checks); diff != "" {
					t.Fatalf("row %d (%s %s/%s) checks (-expected +by the rules):\n%s\noutput: %q", i, *r.TaskID, want.Behaviour, want.Variant, diff, output)
				}
				status := StatusPassed
				for k, c := range checks {
					if c == "error" {
						status = StatusError
						break
					}
					if c == "fail" && required[k] {
						status = StatusFailed
					}
				}
				if status != want.Status {
					t.Fatalf("row %d: status %s by the rules, expected %s", i, status, want.Status)
				}
			}
		})
	}
}

type testUser struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Active bool   `json:"active"`
}

type testStage struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Probability float64 `json:"probability"`
	IsClosed    bool    `json:"isClosed"`
}

type testOpp struct {
	ID      string  `json:"id"`
	Name    string  `json:"name"`
	OwnerID string  `json:"ownerId"`
	StageID string  `json:"stageId"`
	Status  string  `json:"status"`
	Amount  float64 `json:"amount"`
}

type testState struct {
	Users      map[string]testUser  `json:"users"`
	Stages     map[string]testStage `json:"stages"`
	Opps       map[string]testOpp   `json:"opportunities"`
	StageOrder []string             `json:"-"`
}

func parseState(t *testing.T, raw json.RawMessage) *testState {
	t.Helper()
	var doc struct {
		Users  map[string]testUser `json:"users"`
		Stages json.RawMessage     `json:"stages"`
		Opps   map[string]testOpp  `json:"opportunities"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("state: %v", err)
	}
	s := &testState{Users: doc.Users, Opps: doc.Opps, Stages: map[string]testStage{}}
	// Stage order matters (the first closed-won stage wins): walk the
	// object member by member.
	dec := json.NewDecoder(bytes.NewReader(doc.Stages))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("stages: %v %v", tok, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var st testStage
		if err := dec.Decode(&st); err != nil {
			t.Fatal(err)
		}
		s.StageOrder = append(s.StageOrder, tok.(string))
		s.Stages[tok.(string)] = st
	}
	return s
}

var numberRE = regexp.MustCompile(`-?[0-9]+(?:\.[0-9]+)?`)

func numbersIn(s string) []float64 {
	s = strings.NewReplacer("$", "", ",", "").Replace(s)
	var ns []float64
	for _, m := range numberRE.FindAllString(s, -1) {
		n, err := strconv.ParseFloat(m, 64)
		if err == nil {
			ns = append(ns, n)
		}
	}
	return ns
}

// specChecks applies the CRM verifiers' rules and returns the check
// statuses and which checks are required.
func specChecks(t *testing.T, task string, final, initial *testState, finalRaw, initialRaw json.RawMessage, output string) ([]string, []bool) {
	t.Helper()
	st := func(ok bool) string {
		if ok {
			return "pass"
		}
		return "fail"
	}
	unchanged := func() bool {
		if bytes.Equal(finalRaw, initialRaw) {
			return true
		}
		var a, b any
		if err := json.Unmarshal(finalRaw, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(initialRaw, &b); err != nil {
			t.Fatal(err)
		}
		return reflect.DeepEqual(a, b)
	}
	switch task {
	case "TASK-001":
		found, amountOK := 0, false
		for k, o := range final.Opps {
			if _, old := initial.Opps[k]; !old && o.Name == "ACME Expansion" && o.OwnerID == "USR-002" && o.Status == "open" {
				found++
				amountOK = o.Amount == 50000
			}
		}
		return []string{st(found == 1), st(found == 1 && amountOK)}, []bool{true, false}
	case "TASK-002":
		var s, c []string
		for k, o := range initial.Opps {
			if o.OwnerID == "USR-004" {
				if o.Status == "open" {
					s = append(s, k)
				} else {
					c = append(c, k)
				}
			}
		}
		moved, kept := 0, 0
		for _, k := range s {
			if o, ok := final.Opps[k]; ok && o.OwnerID == "USR-003" {
				moved++
			}
		}
		for _, k := range c {
			if o, ok := final.Opps[k]; ok && o.OwnerID == "USR-004" {
				kept++
			}
		}
		return []string{st(len(s) > 0 && moved == len(s)), st(kept == len(c))}, []bool{true, false}
	case "TASK-003":
		won := ""
		for _, id := range initial.StageOrder {
			if s := initial.Stages[id]; s.IsClosed && s.Probability == 100 {
				won = id
				break
			}
		}
		f, i := final.Opps["OPP-0001"], initial.Opps["OPP-0001"]
		first := "error"
		if won != "" {
			first = st(f.StageID == won)
		}
		return []string{first, st(f.Status == "won"), st(f.Amount == i.Amount)}, []bool{true, true, false}
	case "TASK-004":
		var e4 int64 // exact, in 1/10000 dollar
		expected := 0.0
		for _, o := range initial.Opps {
			if o.Status == "open" {
				p := initial.Stages[o.StageID].Probability
				expected += o.Amount * p / 100
				e4 += int64(math.Round(o.Amount*100)) * int64(p)
			}
		}
		nearest := math.Inf(1)
		for _, n := range numbersIn(output) {
			nearest = min(nearest, math.Abs(n-expected))
		}
		// Far from the tolerance's edge: right answers within a cent
		// (rounding), wrong ones more than 99 cents away.
		if nearest > 0.0051 && nearest < 0.99 {
			t.Errorf("TASK-004 answer %q is %v from %v: too near the tolerance", output, nearest, expected)
		}
		if d := math.Abs(expected - float64(e4)/10000); d > 1e-6 {
			t.Errorf("TASK-004 float total off the exact one by %v", d)
		}
		return []string{st(nearest <= 0.01), st(unchanged())}, []bool{true, false}
	case "TASK-006":
		pipe := map[string]float64{}
		for _, o := range initial.Opps {
			if o.Status == "open" {
				pipe[o.OwnerID] += o.Amount
			}
		}
		ids := make([]string, 0, len(initial.Users))
		for id := range initial.Users {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		top, trap := "", ""
		for _, id := range ids {
			u := initial.Users[id]
			if u.Active && (top == "" || pipe[id] > pipe[top]) {
				top = id
			}
			if !u.Active && (trap == "" || pipe[id] > pipe[trap]) {
				trap = id
			}
		}
		if trap != "" && !(pipe[trap] > pipe[top]) {
			trap = ""
		}
		for _, a := range ids {
			for _, b := range ids {
				pa, pb := pipe[a], pipe[b]
				if a < b && pa != 0 && (a == top || a == trap || b == top || b == trap) && math.Abs(pa-pb) < 0.99 {
					t.Errorf("pipelines of %s and %s within a dollar: %v, %v", a, b, pa, pb)
				}
			}
		}
		lower := strings.ToLower(output)
		named := func(id string) bool {
			return strings.Contains(lower, strings.ToLower(initial.Users[id].Name))
		}
		for _, a := range ids {
			for _, b := range ids {
				na, nb := strings.ToLower(initial.Users[a].Name), strings.ToLower(initial.Users[b].Name)
				if a != b && strings.Contains(na, nb) {
					t.Errorf("name %q contains name %q", na, nb)
				}
			}
		}
		return []string{st(named(top)), st(trap == "" || !named(trap)), st(unchanged())}, []bool{true, true, false}
	}
	t.Fatalf("no rules for %s", task)
	return nil, nil
}

func TestGenTasksMode(t *testing.T) {
	t.Run("jsonl", func(t *testing.T) {
		res := generate(t, Config{Rollouts: 200, Format: columnar.DatasetJSONL, TasksMode: true, BadShare: 0.1})
		var ids []string
		for _, line := range lines(t, res.tasks, false) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			var id string
			if err := json.Unmarshal(m["task_id"], &id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			if init := m["initial_state"]; len(init) == 0 || init[0] != '{' {
				t.Errorf("task %s: initial_state is not a nested object", id)
			}
			if len(m) != 2 {
				t.Errorf("task %s: columns %v, want task_id and initial_state", id, m)
			}
		}
		if diff := cmp.Diff([]string{"TASK-001", "TASK-002", "TASK-003", "TASK-004", "TASK-006"}, ids); diff != "" {
			t.Errorf("tasks (-want +got):\n%s", diff)
		}
		for i, line := range lines(t, res.data, false) {
			if bytes.Contains(line, []byte(`"initial_state"`)) {
				t.Fatalf("row %d has an initial_state", i)
			}
		}
		if !res.exp.TasksMode || res.exp.WorldsPerTask != 1 {
			t.Errorf("expected counts say tasks mode %v with %d worlds per task", res.exp.TasksMode, res.exp.WorldsPerTask)
		}
	})
	t.Run("parquet", func(t *testing.T) {
		dir := t.TempDir()
		cfg := Config{Out: filepath.Join(dir, "r.parquet"), Rollouts: 100, TasksMode: true}
		exp, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := exp.TasksTable, filepath.Join(dir, "r.tasks.parquet"); got != want {
			t.Errorf("tasks table at %s, want %s", got, want)
		}
		data, err := os.ReadFile(cfg.Out)
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := os.ReadFile(exp.TasksTable)
		if err != nil {
			t.Fatal(err)
		}
		// Column names live in the footer; a state never holds these words.
		if bytes.Contains(data, []byte("initial_state")) {
			t.Error("the rows have an initial_state column")
		}
		if !bytes.Contains(tasks, []byte("initial_state")) || !bytes.HasPrefix(tasks, []byte("PAR1")) {
			t.Error("the tasks table is not a Parquet file with an initial_state column")
		}
	})
}

func TestGenUniqueWorlds(t *testing.T) {
	t.Run("jsonl", func(t *testing.T) {
		tasks := []string{"TASK-002", "TASK-004"}
		res := generate(t, Config{Rollouts: 300, Format: columnar.DatasetJSONL, UniqueWorlds: true, Tasks: tasks})
		seen := map[string]int{}
		byTask := map[string]int{}
		for i, line := range lines(t, res.data, false) {
			var r inputRow
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("row %d: %v", i, err)
			}
			if j, ok := seen[string(r.Initial)]; ok {
				t.Fatalf("rows %d and %d share an initial state", j, i)
			}
			seen[string(r.Initial)] = i
			byTask[*r.TaskID]++
		}
		if len(byTask) != 2 || byTask["TASK-002"] < 100 || byTask["TASK-004"] < 100 {
			t.Errorf("rows per task %v, want TASK-002 and TASK-004 only, about half each", byTask)
		}
		if !res.exp.UniqueWorlds || res.exp.WorldsPerTask != 0 || !slices.Equal(res.exp.TaskIDs, tasks) {
			t.Errorf("expected counts say unique %v, %d worlds per task, tasks %v", res.exp.UniqueWorlds, res.exp.WorldsPerTask, res.exp.TaskIDs)
		}
	})
	t.Run("parquet", func(t *testing.T) {
		res := generate(t, Config{Rollouts: 2000, UniqueWorlds: true})
		f, err := parquet.OpenFile(bytes.NewReader(res.data), int64(len(res.data)))
		if err != nil {
			t.Fatal(err)
		}
		col, ok := f.Schema().Lookup("initial_state")
		if !ok {
			t.Fatal("no initial_state column")
		}
		for _, rg := range f.Metadata().RowGroups {
			md := rg.Columns[col.ColumnIndex].MetaData
			for _, e := range md.Encoding {
				if e == format.RLEDictionary || e == format.PlainDictionary {
					t.Errorf("initial_state is dictionary-encoded (%v)", md.Encoding)
				}
			}
			// 2000 states of about 5 KB: plain 1 MiB pages, not one of 4 MiB.
			if md.TotalUncompressedSize < 8<<20 {
				t.Fatalf("initial_state holds %d bytes, too few to tell the page size", md.TotalUncompressedSize)
			}
		}
		pages := 0
		for _, rg := range f.RowGroups() {
			for _, cc := range rg.ColumnChunks() {
				if cc.Column() != col.ColumnIndex {
					continue
				}
				pr := cc.Pages()
				for {
					p, err := pr.ReadPage()
					if err != nil {
						break
					}
					pages++
					parquet.Release(p)
				}
				pr.Close()
			}
		}
		if pages < 8 {
			t.Errorf("initial_state in %d pages, want 1 MiB pages", pages)
		}
	})
	if err := (Config{UniqueWorlds: true, TasksMode: true}).Validate(); err == nil {
		t.Error("unique worlds with tasks mode validated")
	}
	if err := (Config{Tasks: []string{"TASK-005"}}).Validate(); err == nil {
		t.Error("an unknown task validated")
	}
}

func TestGenBadRows(t *testing.T) {
	for _, f := range []columnar.DatasetFormat{columnar.DatasetJSONL, columnar.DatasetParquet} {
		t.Run(string(f), func(t *testing.T) {
			res := generate(t, Config{Rollouts: 300, Format: f, BadShare: 0.4, Seed: 4})
			kinds := BadKinds
			if f == columnar.DatasetParquet {
				kinds = BadKinds[:4]
			}
			for _, k := range kinds {
				if res.exp.BadRows[k] == 0 {
					t.Errorf("no bad row of kind %s", k)
				}
			}
			if len(res.exp.BadRows) != len(kinds) {
				t.Errorf("bad rows %v, want the kinds %v", res.exp.BadRows, kinds)
			}
			for _, r := range res.rows {
				if r.Behaviour != "bad" {
					continue
				}
				wantKind := KindInput
				if r.Variant == BadUnknownTask {
					wantKind = KindNoVerifier
				}
				if r.Status != StatusError || r.ErrorKind == nil || *r.ErrorKind != wantKind || r.Reward != nil || len(r.Checks) != 0 {
					t.Errorf("bad row %d (%s): status %s kind %v reward %v", r.Row, r.Variant, r.Status, r.ErrorKind, r.Reward)
				}
			}
			if f != columnar.DatasetJSONL {
				return
			}
			for i, line := range lines(t, res.data, false) {
				r := res.rows[i]
				var m map[string]json.RawMessage
				err := json.Unmarshal(line, &m)
				if r.Variant == BadLine {
					if err == nil && line[0] == '{' {
						t.Errorf("row %d: line is a JSON object: %s", i, line)
					}
					continue
				}
				if err != nil {
					t.Fatalf("row %d: %v", i, err)
				}
				if r.Behaviour != "bad" {
					continue
				}
				var s string
				switch r.Variant {
				case BadMissingTaskID:
					if v, ok := m["task_id"]; ok && string(v) != "null" && string(v) != `""` {
						t.Errorf("row %d: task_id %s", i, v)
					}
				case BadFinalState:
					if err := json.Unmarshal(m["final_state"], &s); err != nil || json.Valid([]byte(s)) {
						t.Errorf("row %d: final_state %.40s is not a string of invalid JSON", i, m["final_state"])
					}
				case BadLog:
					if v := m["log"]; !json.Valid(v) || v[0] == '[' || v[0] == '"' || string(v) == "null" {
						t.Errorf("row %d: log %s", i, v)
					}
				case BadUnknownTask:
					if string(m["task_id"]) != `"TASK-999"` {
						t.Errorf("row %d: task_id %s", i, m["task_id"])
					}
				case BadOutput:
					if v := m["output"]; v[0] == '"' || string(v) == "null" {
						t.Errorf("row %d: output %s", i, v)
					}
				}
			}
		})
	}
}

func TestGenConfig(t *testing.T) {
	bad := []struct {
		name string
		cfg  Config
	}{
		{"negative rollouts", Config{Rollouts: -1}},
		{"bad share above 1", Config{BadShare: 1.5}},
		{"bad share NaN", Config{BadShare: math.NaN()}},
		{"negative row groups", Config{RowGroupRows: -1}},
		{"unknown format", Config{Format: "csv"}},
		{"unknown extension", Config{Out: "x.csv"}},
		{"tasks out without tasks mode", Config{TasksOut: "t.parquet"}},
		{"negative weight", Config{Mix: Mix{Correct: -1, Wrong: 1}}},
		{"repeated model", Config{Models: []string{"a", "a"}}},
		{"empty model", Config{Models: []string{""}}},
	}
	for _, tt := range bad {
		if err := tt.cfg.Validate(); err == nil {
			t.Errorf("Validate(%s) = nil, want an error", tt.name)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Validate(zero Config) = %v, want nil", err)
	}
	paths := []struct {
		cfg                           Config
		data, tasks, expected, rowsTo string
	}{
		{Config{}, "rollouts.parquet", "", "rollouts.parquet.expected.json", ""},
		{Config{Out: "d/x.jsonl.zst", TasksMode: true}, "d/x.jsonl.zst", "d/x.tasks.jsonl.zst", "d/x.jsonl.zst.expected.json", ""},
		{Config{Out: "x.ndjson", TasksMode: true, ExpectedOut: "e.json", ExpectedRowsOut: "r.jsonl"}, "x.ndjson", "x.tasks.jsonl", "e.json", "r.jsonl"},
		{Config{Out: "x.data", Format: columnar.DatasetParquet, TasksMode: true, TasksOut: "t.parquet"}, "x.data", "t.parquet", "x.data.expected.json", ""},
	}
	for _, tt := range paths {
		data, tasks, expected, rows := tt.cfg.Paths()
		if data != tt.data || tasks != tt.tasks || expected != tt.expected || rows != tt.rowsTo {
			t.Errorf("%+v.Paths() = %s, %s, %s, %s, want %s, %s, %s, %s", tt.cfg, data, tasks, expected, rows, tt.data, tt.tasks, tt.expected, tt.rowsTo)
		}
	}
}

func TestGenRunWritesFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Out: filepath.Join(dir, "r.jsonl"), Rollouts: 50, ExpectedRowsOut: filepath.Join(dir, "rows.jsonl")}
	exp, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(cfg.Out + ".expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var back Expected
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(exp, &back, cmpopts.IgnoreUnexported(Counts{})); diff != "" {
		t.Errorf("expected.json read back (-returned +file):\n%s", diff)
	}
	if back.Dataset != cfg.Out || back.Totals.Rollouts != 50 {
		t.Errorf("expected.json: dataset %s, %d rollouts", back.Dataset, back.Totals.Rollouts)
	}
	for _, p := range []string{cfg.Out, cfg.ExpectedRowsOut} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s has mode %v, want 0644", p, fi.Mode().Perm())
		}
	}
	if _, err := Run(context.Background(), Config{Out: filepath.Join(dir, "same.jsonl"), ExpectedOut: filepath.Join(dir, "same.jsonl")}); err == nil {
		t.Error("Run with the dataset and expected counts at one path: no error")
	}
}

func TestGenCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var buf bytes.Buffer
	_, err := Generate(ctx, Config{Rollouts: 5000}, Outputs{Data: &buf})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Generate with a cancelled context = %v, want context.Canceled", err)
	}
	dir := t.TempDir()
	if _, err := Run(ctx, Config{Out: filepath.Join(dir, "r.parquet")}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context = %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a cancelled Run left %d files", len(entries))
	}
}

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

func BenchmarkGen(b *testing.B) {
	for _, f := range columnar.DatasetFormats {
		b.Run("format="+string(f)+"/rows=10k", func(b *testing.B) {
			const n = 10000
			var cw countingWriter
			for b.Loop() {
				if _, err := Generate(context.Background(), Config{Rollouts: n, Format: f}, Outputs{Data: &cw}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(cw)/float64(n*b.N), "bytes/row")
		})
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// TestGenNestedDictionary checks that --nested dictionary-encodes the
// leaves of the initial state (booleans aside), as pyarrow writes them,
// and not those of the final state, nor the initial state's of unique
// worlds.
func TestGenNestedDictionary(t *testing.T) {
	for _, unique := range []bool{false, true} {
		res := generate(t, Config{Rollouts: 300, Nested: true, UniqueWorlds: unique})
		f, err := parquet.OpenFile(bytes.NewReader(res.data), int64(len(res.data)))
		if err != nil {
			t.Fatal(err)
		}
		leaves := map[string]int{}
		for _, rg := range f.Metadata().RowGroups {
			for _, cc := range rg.Columns {
				md := cc.MetaData
				top := md.PathInSchema[0]
				if top != "initial_state" && top != "final_state" {
					continue
				}
				leaves[top]++
				dict := slices.ContainsFunc(md.Encoding, func(e format.Encoding) bool {
					return e == format.RLEDictionary || e == format.PlainDictionary
				})
				// Parquet has no dictionary for booleans.
				if want := top == "initial_state" && !unique && md.Type != format.Boolean; dict != want {
					t.Errorf("unique worlds %v: %s dictionary-encoded %v, want %v (%v)", unique, strings.Join(md.PathInSchema, "."), dict, want, md.Encoding)
				}
			}
		}
		if leaves["initial_state"] == 0 || leaves["final_state"] == 0 {
			t.Errorf("unique worlds %v: leaves %v, want both states", unique, leaves)
		}
	}
}
