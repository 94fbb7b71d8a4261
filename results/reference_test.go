package results

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/verifiers"
)

// referenceOutputs is the outputs reference, generated from the tables'
// column definitions and the JSON files' Go types.
const referenceOutputs = "../docs/reference/outputs.md"

// columnMeanings are what each column of the result tables holds, by
// TABLE.COLUMN; TestReferenceOutputs fails on a column without one.
var columnMeanings = map[string]string{
	"rewards.rollout_id":      "the rollout's id: its input's `rollout_id`, or `FILE#ROW` when it has none",
	"rewards.task_id":         "the rollout's task",
	"rewards.verifier_id":     "the verifier bound to the task; null when none is",
	"rewards.status":          "`passed`, `failed`, `pending` or `error`",
	"rewards.passed":          "true when passed, false when failed; null when pending or error",
	"rewards.reward":          "the verifier's reward formula over the checks (default: the fraction passed), in [0, 1]; null when pending or error",
	"rewards.checks_total":    "the rollout's checks (flags not counted)",
	"rewards.checks_passed":   "its checks that passed",
	"rewards.required_total":  "its required checks",
	"rewards.required_passed": "its required checks that passed",
	"rewards.error_kind":      "with status error: `input`, `no_verifier` or `verifier`; null otherwise",
	"rewards.error":           "with status error: what went wrong, naming the field, line or byte offset; null otherwise",
	"rewards.source_file":     "the input file (or object URL, or `-`) the rollout came from",
	"rewards.source_row":      "its row (or line, or element) in that file, from 0",
	"rewards.input_hash":      "16 hex digits, XXH64 of the rollout's input as verifiers see it (ids, states, output, log, metadata, task row); null when its input could not be read",
	"rewards.flags":           "run with flags: the ids of the flags raised, the verifier's in order, then the health flags; empty when none",
	"rewards.output_hash":     "run with flags: 16 hex digits, XXH64 of the output's text; null when the input could not be read",
	"rewards.turn_rewards":    "run that scores turns: the reward of each agent turn, in order, null for a turn no check is credited to (or with a check pending); the list is null when the rollout's verifier scores no turns or its status is error",
	"rewards.turns":           "run that scores turns: the number of agent turns; null when the rollout has no conversation or its input could not be read",
	"checks.rollout_id":       "the rollout's id, as in the rewards",
	"checks.task_id":          "the rollout's task",
	"checks.verifier_id":      "the verifier that ran the check",
	"checks.check_index":      "the check's place among the rollout's check rows, from 0; flag rows continue it",
	"checks.check_id":         "the check's id within its verifier",
	"checks.label":            "what the check asserts, in words",
	"checks.required":         "whether failing it fails the rollout (false for flags)",
	"checks.status":           "a check: `pass`, `fail`, `pending` or `error`; a flag: `raised`, `clear` or `error`",
	"checks.detail":           "the evidence, in words (\"2 of 3 moved\", a judge's error)",
	"checks.actual":           "the value found, as JSON text; null when none",
	"checks.expected":         "the value wanted, as JSON text; null when none",
	"checks.score":            "a judged check's aggregated judge score, or a remote check's score, in [0, 1]; null otherwise",
	"checks.issues":           "a judged check's issues, as the judge listed them; null otherwise",
	"checks.suggestion":       "a judged check's suggestion; null otherwise",
	"checks.kind":             "run with flags: `check`, or `flag` for a flag's row",
	"checks.turn":             "run that scores turns: the index of the agent turn the check is credited to (a turn check's turn, or the turn a check's `turn:` names); null for a check credited to none",
	"judgements.rollout_id":   "the rollout's id",
	"judgements.task_id":      "the rollout's task",
	"judgements.verifier_id":  "the verifier of the judged check",
	"judgements.check_index":  "the judged check's `check_index`",
	"judgements.check_id":     "the judged check's id",
	"judgements.judge_model":  "the judge model asked",
	"judgements.sample":       "the sample's number for this model, from 0",
	"judgements.seed":         "the seed sent with the request",
	"judgements.temperature":  "the temperature sent",
	"judgements.score":        "the judge's score in [0, 1]; null when the judgement failed",
	"judgements.status":       "`pass`, `fail` or `error`",
	"judgements.issues":       "the judge's issues, one per line; null when none",
	"judgements.suggestion":   "the judge's suggestion; null when none",
	"judgements.error":        "why the judgement failed; null unless the status is error",
}

// keyMeanings are what each top-level key of summary.json and
// manifest.json holds, by FILE.KEY.
var keyMeanings = map[string]string{
	"summary.rollouts":          "rows graded, one per rollout (per rollout and verifier)",
	"summary.passed":            "rows with status passed",
	"summary.failed":            "rows with status failed",
	"summary.pending":           "rows with status pending (a judge or service not asked)",
	"summary.error":             "rows with status error",
	"summary.error_kinds":       "error rows by `error_kind`",
	"summary.pass_rate":         "passed / (passed + failed); null when neither",
	"summary.mean_reward":       "the mean reward of the rows that have one; null when none",
	"summary.verifiers":         "the same counts per verifier id",
	"summary.tasks":             "the same counts per task id",
	"summary.checks":            "rows of the checks table",
	"summary.unextracted":       "per VERIFIER/CHECK, math checks that found no answer in the output",
	"summary.flags":             "run with flags: per VERIFIER/FLAG the rows raised, clear and error; per health flag the rollouts raising it",
	"summary.flagged":           "run with flags: rollouts with a flag raised",
	"summary.files_skipped":     "unsupported files found in input directories",
	"summary.warnings":          "what in the inputs is likely a mistake (a file of chats read as rows); absent when nothing is",
	"summary.duplicate_ids":     "rollout ids that appear more than once",
	"summary.duplicate_id_list": "the first of them",
	"summary.failed_inputs":     "input units that could not be read to the end: path, part, error",
	"summary.judge":             "with a judge: probes, requests, cache hits, failures, tokens",
	"summary.remote":            "with remote verifiers: requests, cache hits, failures, repeats and flaky rollouts per verifier",
	"summary.impure_verifiers":  "remote verifiers asked although not declared stateless (--allow-impure)",
	"summary.reuse":             "with --reuse: rollouts reused, graded, parts copied whole",
	"summary.elapsed_seconds":   "the run's wall time (varies between identical runs)",
	"summary.rows_per_second":   "rollouts / elapsed_seconds (varies between identical runs)",
	"manifest.gavel_version":    "the gavel that wrote the run (gavel --version)",
	"manifest.shard":            "a shard's manifest: which shard, I/N",
	"manifest.verifiers":        "the verifiers: id, name, tasks, source, fingerprint",
	"manifest.config":           "the configuration that decides the results: format, fields, kept columns, flags, health, turns, tasks file, limits, judge, reward formulas",
	"manifest.inputs":           "the input units: path, size, digest, rows, part, complete",
	"manifest.impure_verifiers": "as in summary.json",
}

// TestReferenceOutputs checks that docs/reference/outputs.md describes
// every column of the result tables, with its type and nullability as the
// code writes them, and every top-level key of summary.json and
// manifest.json; GAVEL_UPDATE_DOCS=1 (make docs) rewrites it.
func TestReferenceOutputs(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# Outputs reference\n\n" +
		"<!-- Generated from the code by `make docs`; do not edit. -->\n\n" +
		"The columns of the result tables, with their Arrow types (the same in\n" +
		"Parquet; JSON Lines writes them as JSON) and whether they may be null,\n" +
		"and the top-level keys of `summary.json` and `manifest.json`.\n" +
		"[Outputs](../outputs.md) shows them at work. Kept metadata columns\n" +
		"(`--keep`, `--set`) follow the rewards columns, as nullable strings.\n" +
		"The columns marked \"run with flags\" are written only by runs with flags:\n" +
		"every run unless `--health off` and no verifier has flags. The columns\n" +
		"marked \"run that scores turns\" are written only by runs where a verifier\n" +
		"scores turns ([Rewards per turn](../turns.md)).\n\n")
	for _, table := range []string{"rewards", "checks", "judgements"} {
		fmt.Fprintf(&b, "## %s\n\n| column | type | null | meaning |\n| --- | --- | --- | --- |\n", table)
		for _, c := range columnar.TableColumns(table, true, true) {
			m, ok := columnMeanings[table+"."+c.Name]
			if !ok {
				t.Errorf("%s.%s has no meaning in columnMeanings", table, c.Name)
			}
			null := "no"
			if c.Nullable {
				null = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", c.Name, c.Type, null, m)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "## Error kinds\n\n`error_kind` of a row with status error: `%s` (the row's input could not be read or mapped),\n`%s` (no verifier binds its task), `%s` (the verifier failed, timed out, panicked,\nor a check of it, judge or service, is in error).\n\n",
		verifiers.KindInput, verifiers.KindNoVerifier, verifiers.KindVerifier)
	for _, f := range []struct {
		name string
		v    any
	}{{"summary", Summary{}}, {"manifest", Manifest{}}} {
		fmt.Fprintf(&b, "## %s.json\n\n| key | meaning |\n| --- | --- |\n", f.name)
		for _, k := range jsonKeys(reflect.TypeOf(f.v)) {
			m, ok := keyMeanings[f.name+"."+k]
			if !ok {
				t.Errorf("%s.json key %s has no meaning in keyMeanings", f.name, k)
			}
			fmt.Fprintf(&b, "| `%s` | %s |\n", k, m)
		}
		b.WriteString("\n")
	}
	for k := range columnMeanings {
		table, col, _ := strings.Cut(k, ".")
		if !slices.ContainsFunc(columnar.TableColumns(table, true, true), func(c columnar.ColumnInfo) bool { return c.Name == col }) {
			t.Errorf("columnMeanings names %s, which no table has", k)
		}
	}
	if os.Getenv("GAVEL_UPDATE_DOCS") != "" {
		if err := os.WriteFile(referenceOutputs, bytes.TrimRight(b.Bytes(), "\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(referenceOutputs)
	if err != nil || !bytes.Equal(have, bytes.TrimRight(b.Bytes(), "\n")) {
		t.Errorf("docs/reference/outputs.md is not generated from the code (%v): run make docs", err)
	}
}

// jsonKeys returns the JSON keys of struct type typ, those of embedded
// structs in place.
func jsonKeys(typ reflect.Type) []string {
	var keys []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case f.Anonymous && name == "":
			keys = append(keys, jsonKeys(f.Type)...)
		case name == "-" || !f.IsExported():
		case name == "":
			keys = append(keys, f.Name)
		default:
			keys = append(keys, name)
		}
	}
	return keys
}
