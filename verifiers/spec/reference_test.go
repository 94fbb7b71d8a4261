package spec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/remote"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/mathanswer"
)

// referenceSpec is the spec reference, generated from what the loader
// accepts: the fields of every object of a spec file, the check types,
// comparators and functions, and the CEL environments.
const referenceSpec = "../../docs/reference/spec.md"

// fieldDoc documents one field of a spec object.
type fieldDoc struct {
	typ, def, example, meaning string
}

// verifierFieldDocs document the fields of a verifier; TestReferenceSpec
// fails on a field the loader accepts without one, and on one it does not
// accept.
var verifierFieldDocs = map[string]fieldDoc{
	"id":          {"string", "required", "id: VER-C02", "the verifier's id, unique among the verifiers a run loads; the rows' `verifier_id`"},
	"name":        {"string", "required", "name: Team meeting moved to Friday", "what the verifier checks, in words (`gavel verifier list`, `gavel spec check`)"},
	"task":        {"string", "`task` or `tasks` required", "task: TASK-C02", "the one task pattern it binds: a task id, a prefix ending in `*` (`airline/*`), or `all` ([Binding tasks](../verifiers.md#binding-tasks))"},
	"tasks":       {"list of strings, or `all`", "`task` or `tasks` required", "tasks: [airline/*, retail/1]", "the task patterns it binds; `all` (or `\"*\"`) binds every task. Not with `task`"},
	"let":         {"object of NAME: CEL", "none", "let: {S: 'initial.events.filter(e, e.title == \"Team Meeting\")'}", "named CEL expressions over `initial` and `task`, computed once per world and shared by its rollouts; variables of the verifier's other expressions ([let](#let))"},
	"checks":      {"list of [checks](#check)", "required, unless `remote` or `turn_checks`", "checks: [{id: answered, type: expr, expr: 'output != \"\"'}]", "the checks; the verifier needs one that is required (not `optional`). Not with `remote`"},
	"flags":       {"list of [flags](#flag)", "none", "flags: [{id: grader-text, expr: 'output.contains(\"grader\")'}]", "marks that never move the status or reward ([Flags and coverage](../flags.md)). Not with `remote`"},
	"description": {"string", "none", "description: Checks the move and nothing else", "free text for readers; like every field, part of the verifier's canonical text, hence of its fingerprint"},
	"judge":       {"[judge](#judge) object", "the run's `--judge-*` flags", "judge: {model: qwen2.5-7b-instruct, threshold: 0.7}", "the judge of the verifier's rubric checks and flags; `model` turns judging on without `--judge-model`"},
	"reward":      {"[reward formula](#reward-formulas)", "`fraction`", "reward: {weighted: {on-friday: 3}}", "how the rollout's reward is computed from its checks; the weights must name the verifier's checks"},
	"remote":      {"[remote](#remote) object", "none", "remote: {url: \"http://127.0.0.1:8123/\", version: 1, pure: true}", "the checks are an HTTP service's answer ([Remote verifiers](../remote-verifiers.md)). Not with `checks`, `flags` or `turn_checks`"},
	"turn_checks": {"list of [checks](#check)", "none", "turn_checks: [{id: short, type: expr, expr: 'size(turn.text) < 2000'}]", "checks evaluated once per agent turn, `turn` in scope; `expr`, `rubric` and `math` only. The verifier then scores turns ([Rewards per turn](../turns.md))"},
	"turn_reward": {"[reward formula](#reward-formulas)", "`fraction`", "turn_reward: all", "the reward of a turn over the checks credited to it; only in a verifier that scores turns"},
	"credit": {"string", "`" + verifiers.CreditAttributed + "`", "credit: " + verifiers.CreditLast,
		"which trajectory checks count in turns' rewards: `" + verifiers.CreditAttributed + "` (those whose `turn` names the turn), `" + verifiers.CreditLast + "` (every one, on the last turn; makes the verifier score turns), `" + verifiers.CreditNone + "` (none)"},
}

// checkFieldDocs document the fields of a check (checkFields).
var checkFieldDocs = map[string]fieldDoc{
	"id":            {"string", "required", "id: on-friday", "the check's id, unique among the verifier's checks and turn checks; the rows' `check_id`"},
	"type":          {"string", "required", "type: state", "one of the [check types](#check-types)"},
	"label":         {"string", "the id", "label: Meeting moved to Friday", "what the check asserts, in words; the rows' `label`"},
	"optional":      {"boolean", "`false`", "optional: true", "an optional check moves the reward only: failing it does not fail the rollout"},
	"asserts":       {"list of [asserts](#assert)", "see [check types](#check-types)", "asserts: [{comparator: eq, function: count, function_args: [_result], value: 1}]", "comparisons over `_result`, the check's rows; the first that does not pass decides the check"},
	"table":         {"string (dotted path)", "required", "table: crm.deals", "the table of the state whose rows are `_result`: an object's member values in order, an array's elements"},
	"state":         {"`final` or `initial`", "`final`", "state: initial", "the state `table` is read from"},
	"function":      {"string", "required", "function: find_events_on_day", "the [manual function](#manual-functions) whose result rows are `_result`"},
	"function_args": {"list of JSON values", "none", "function_args: [\"2024-11-20\"]", "the manual function's arguments, checked when the spec loads"},
	"steps":         {"non-empty list of objects", "required", "steps: [{eventType: click, clickId: submit-button}]", "patterns matched in order against the log's events, each contained in its event as `object_contains` contains; passes when every step matched"},
	"rubric":        {"string", "required", "rubric: The answer names the day of the meeting.", "what the judge scores the rollout against ([Judging](../judging.md)); the check is `pending` without a judge"},
	"query":         {"string, or `{expr: CEL}`", "the task row's, else the rollout's, `instruction`, `prompt`, `query` or `input`", "query: {expr: task.instruction}", "the task instruction the judge sees"},
	"context":       {"object of NAME: CEL, or list of one-member objects", "none", "context: {events: final.events}", "named values shown to the judge, as JSON"},
	"expr":          {"CEL, a bool", "required", "expr: final.events.exists(e, e.title == \"Team Meeting\")", "the check passes when it is true ([CEL expressions](#cel-expressions))"},
	"detail":        {"CEL", "`expr is true` or `expr is false`", "detail: '\"events: \" + string(count(final.events))'", "the row's detail: a string as it is, another value as JSON"},
	"allow":         {"list of [allow items](#allow-item)", "none: no change is allowed", "allow: [events, {table: crm.deals, where: 'change.kind == \"updated\"'}]", "the changes between the initial and final state that do not fail the check"},
	"keys":          {"object of TABLE: FIELD", "`" + verifiers.DefaultKey + "`", "keys: {events: uid}", "the field that identifies a row of an array table, by table path"},
	"gold":          {"CEL, a string or number", "required", "gold: task.answer", "the gold answer ([Math answers](../math.md))"},
	"answer":        {"CEL, a string, number or null", "`output` (in a turn check, `turn.text`)", "answer: meta.response", "the text the final answer is found in; null finds none"},
	"precision":     {"integer, 0 to " + strconv.Itoa(mathanswer.MaxPrecision), strconv.Itoa(mathanswer.DefaultPrecision), "precision: 2", "the decimal places numbers are compared to"},
	"description":   {"string", "none", "description: Guards against the trap answer", "free text for readers"},
	"when":          {"CEL, a bool", "every turn", "when: size(turn.tool_calls) > 0", "the turns a turn check applies to; a turn no check applies to is not scored"},
	"turn":          {"CEL, an int or null", "none", "turn: size(turns) - 1", "the index of the turn a trajectory check is credited to (null: none); an index the rollout does not have makes its status error"},
}

// checkTypeDocs document the check types (checkKinds).
var checkTypeDocs = map[string]string{
	"state":      "asserts over the rows of `table` in the final (or initial) state",
	"log":        "asserts over the log's events",
	"sequential": "`steps` matched in order against the log's events, then the asserts, if any",
	"manual":     "asserts over the rows a Go function registered in gavel returns",
	"rubric":     "judged by a language model against `rubric`; `pending` without a judge",
	"expr":       "a CEL condition",
	"unchanged":  "passes when nothing changed between the initial and final state but what `allow` lists; the detail and `actual` list the unexpected changes",
	"math":       "passes when the final answer found in `answer` equals `gold` ([Math answers](../math.md))",
}

// assertFieldDocs document the fields of an assert.
var assertFieldDocs = map[string]fieldDoc{
	"comparator":    {"string", "required", "comparator: gte", "one of the [comparators](#comparators)"},
	"value":         {"JSON value, or `{expr: CEL}`", "required", "value: {expr: size(initial.events)}", "what the result is compared with"},
	"function":      {"string", "none: the rows themselves", "function: count", "one of the [assert functions](#assert-functions), applied to `_result` before comparing"},
	"function_args": {"list", "required with `function`", "function_args: [\"_result[*].amount\"]", "the path the function reads (`object_contains`: the path and the pattern)"},
}

// comparatorDocs document the comparators (comparators).
var comparatorDocs = map[string]string{
	"eq":         "equal, as JSON values (1 equals 1.0, the order of an object's members ignored)",
	"neq":        "not equal",
	"gt":         "greater than: two numbers, or two strings compared byte by byte",
	"gte":        "greater than or equal",
	"lt":         "less than",
	"lte":        "less than or equal",
	"in":         "the result is one of the value's elements (the value is a list)",
	"contains":   "a list result has an element equal to the value; a string result contains the value as a substring",
	"regex":      "a string result matches the value, an RE2 pattern compiled when the spec loads",
	"deep_equal": "equal, as `eq`",
}

// functionDocs document the assert functions (functions).
var functionDocs = map[string]string{
	"object_contains": "`object_contains(path, pattern)`: true when some selected value contains the pattern (every member of the pattern present with an equal value, recursively); `actual` holds the matching rows",
	"count":           "the number of selected values",
	"sum":             "the sum of the selected numbers",
	"min":             "the least selected number",
	"max":             "the greatest selected number",
	"exists":          "true when some selected value is not null",
	"get":             "the selected value (`_result[N]...`), or the list of them (`_result`, `_result[*]...`)",
}

// allowFieldDocs document the fields of an allow item of an unchanged
// check.
var allowFieldDocs = map[string]fieldDoc{
	"table": {"string (dotted path)", "required", "table: crm.deals", "the table whose changes are allowed, and those of the tables below it"},
	"where": {"CEL, a bool", "none: every change of the table", "where: change.kind == \"added\"", "allows only the changes for which it is true; `change` is the change"},
}

// flagFieldDocs document the fields of a flag (flagFields).
var flagFieldDocs = map[string]fieldDoc{
	"id":          {"string", "required", "id: grader-text", "the flag's id, in the rewards' `flags` list; no check of the verifier may have it, nor may it start with `" + verifiers.HealthPrefix + "`"},
	"label":       {"string", "the id", "label: Text aimed at a grader", "what the flag marks, in words"},
	"expr":        {"CEL, a bool", "`expr` or `rubric` required", "expr: 'output.matches(\"(?i)grader[ _-]?override\")'", "the flag is raised when it is true"},
	"detail":      {"CEL", "`expr is true` or `expr is false`", "detail: 'string(size(log)) + \" events\"'", "the flag row's evidence"},
	"rubric":      {"string", "`expr` or `rubric` required", "rubric: The output addresses the grader rather than the task.", "judged by the run's judge; the flag is raised when the verdict passes"},
	"query":       {"string, or `{expr: CEL}`", "as a rubric check's", "query: {expr: task.instruction}", "the task instruction the judge sees"},
	"context":     {"object of NAME: CEL, or list of one-member objects", "none", "context: {log: log}", "named values shown to the judge, as JSON"},
	"description": {"string", "none", "description: Reward hacking seen in run 12", "free text for readers"},
}

// judgeFieldDocs document the fields of a verifier's judge.
var judgeFieldDocs = map[string]fieldDoc{
	"model":     {"string, or list of distinct strings", "`--judge-model`", "model: [gpt-4o-mini, qwen2.5-7b-instruct]", "the judge model; each model of a list judges every rubric check. Turns judging on for the verifier"},
	"threshold": {"number in (0, 1]", "`--judge-threshold` (" + strconv.FormatFloat(judge.DefaultThreshold, 'g', -1, 64) + ")", "threshold: 0.7", "a judged check passes when its score is at least the threshold"},
	"template":  {"path", "the template `" + judge.DefaultVersion + "`", "template: judge-prompt.tmpl", "a Go text/template file defining `version`, `system` and `user`, relative to the spec file; its content is part of the verifier's fingerprint"},
}

// remoteFieldDocs document the fields of a verifier's remote.
var remoteFieldDocs = map[string]fieldDoc{
	"url":         {"http:// or https:// URL", "required", "url: \"http://127.0.0.1:8123/\"", "`gavel`: where each request is POSTed; `nemo-gym`: the resources server's root. A URL holding credentials is refused"},
	"protocol":    {"`gavel` or `nemo-gym`", "`gavel`", "protocol: nemo-gym", "the service's protocol"},
	"version":     {"number or string", "required", "version: 1", "the service's version, declared by you: part of the fingerprint and of every cache key"},
	"timeout":     {"duration, or seconds", "`" + durationText(remote.DefaultTimeout) + "`", "timeout: 30s", "a request taking longer fails"},
	"concurrency": {"positive integer", strconv.Itoa(remote.DefaultConcurrency), "concurrency: 8", "requests in flight to the service at once, at most"},
	"batch":       {"positive integer", "1", "batch: 4", "rollouts per request (`gavel` only)"},
	"token_env":   {"string", "none", "token_env: MATH_SERVICE_TOKEN", "the environment variable whose value is sent as `Authorization: Bearer`"},
	"pure":        {"boolean", "`false`", "pure: true", "`gavel` only: the answer is a function of the request, so it may be cached and reused"},
	"threshold":   {"number in (0, 1]", "1", "threshold: 0.5", "the reward a single-reward answer needs to pass"},
	"flags":       {"boolean", "`false`", "flags: true", "`gavel` only: the service may answer flags beside its checks"},
}

// formulaDocs document the reward formulas, each with an example the
// test parses.
var formulaDocs = []struct{ kind, example, meaning string }{
	{verifiers.FormulaFraction, `reward: fraction`, "checks passed / all checks, required and optional together (the default)"},
	{verifiers.FormulaAll, `reward: all`, "1 when every check passes, required and optional alike, else 0"},
	{verifiers.FormulaWeighted, `reward: {weighted: {on-friday: 3, others-untouched: -2}}`, "with s = 1 for a pass and 0 for a fail: clamp((Σ W⁺·s − Σ \\|W⁻\\|·(1−s)) / Σ W⁺, 0, 1); a check the weights do not name weighs 1, weight 0 leaves it out, a negative weight is a penalty paid when its check fails"},
	{verifiers.FormulaExpr, `reward: {expr: "checks.all(c, c.passed) ? 1.0 : 0.5"}`, "a [reward expression](#reward-expressions); a value that is not a number in [0, 1] makes the rollout an error (kind `verifier`)"},
}

// rewardCheckDocs document the members of each element of a reward
// expression's checks.
var rewardCheckDocs = map[string]string{
	"id":       "the check's id",
	"label":    "its label",
	"index":    "its place among the verifier's checks, from 0",
	"required": "whether it is required",
	"status":   "`pass` or `fail` (a formula runs only when no check is pending or in error)",
	"passed":   "whether it passed",
	"score":    "a judged check's score, null when it was not judged",
	"detail":   "its detail",
}

// rewardNameDocs document the variables and functions of reward
// expressions, each with an example the test compiles.
var rewardNameDocs = map[string]struct{ example, meaning string }{
	"checks":        {"checks.all(c, c.passed) ? 1.0 : 0.0", "the verifier's checks in order, each an object with the members below"},
	"sum":           {"sum(checks.map(c, c.passed ? 1.0 : 0.0)) / double(size(checks))", "the sum of a list of numbers (0 for an empty list)"},
	"math.greatest": {"math.greatest(0.0, 1.0 - 0.25 * double(checks.filter(c, !c.passed).size()))", "the greatest of its arguments (CEL's math extension)"},
	"math.least":    {"math.least(1.0, sum(checks.map(c, c.passed ? 0.5 : 0.0)))", "the least of its arguments (CEL's math extension)"},
	"math_answer":   {"math_answer(checks[0].detail) != null ? 1.0 : 0.0", "as in [CEL expressions](#functions)"},
	"math_equal":    {"math_equal(checks[0].detail, \"42\") ? 1.0 : 0.0", "as in [CEL expressions](#functions)"},
}

// celVarDocs document the variables of spec expressions.
var celVarDocs = map[string]string{
	"final":   "the rollout's final state; an absent one reads as an empty object",
	"initial": "the rollout's initial state, else its task's; an absent one reads as an empty object",
	"output":  "the agent's final answer, a string (`\"\"` when absent)",
	"log":     "the log's events, a list (empty when absent)",
	"task":    "the rollout's task row (the tasks table's, or the one its harness's log carries), an object; empty when none",
	"meta":    "the rollout's metadata: its other columns or members, and the `--set` constants",
	"turns":   "the agent's turns, a list of `{index, text, tool_calls, tool_results, message_index}` ([Rewards per turn](../turns.md)); empty when the rollout has no conversation or the run scores no turns",
	"turn":    "the turn being graded, as an element of `turns`",
	"change":  "the change being filtered: `{table, kind, key, before, after}`, `kind` one of `added`, `removed`, `updated`",
}

// celFuncDocs document gavel's own functions of spec expressions, each
// with an example the test compiles.
var celFuncDocs = map[string]struct{ example, meaning string }{
	"object_contains": {`object_contains(final.events, {"title": "Team Meeting"})`, "of a list, whether some element contains the pattern; of another value, whether it contains it (every member of the pattern present with an equal value, recursively)"},
	"count":           {`count(final.events) == 3`, "the size of a list or an object; 0 for null"},
	"changes":         {`size(changes(initial, final)) == 0`, "the changes between two states by table, `{TABLE: {added, removed, updated}}` of change records, as `unchanged` checks find them; a third argument, `{TABLE: FIELD}`, gives the key fields"},
	"numbers_in":      {`numbers_in(output).exists(n, n == 42.0)`, "the numbers stated in a text, in order, as doubles (`$1,234.50` reads 1234.5)"},
	"states_number":   {`states_number(output, final.total)`, "whether the text states the number: some number of `numbers_in` within the tolerance (default " + strconv.FormatFloat(verifiers.DefaultTolerance, 'g', -1, 64) + ", or the third argument) of it"},
	"math_answer":     {`math_answer(output) != null`, "the final answer a text gives, normalized, or null when it gives none ([Math answers](../math.md))"},
	"math_equal":      {`math_equal(output, task.answer)`, "whether the answers of two texts (or numbers) are equal; a third argument gives the decimal places"},
}

// celLibraryDocs document the CEL libraries of spec expressions beside
// the standard one, by library name, with the option that adds each.
var celLibraryDocs = map[string]struct {
	opt cel.EnvOption
	// macros is the namespace its macros are called in ("cel."), if any.
	macros, meaning string
}{
	"cel.lib.ext.strings":      {ext.Strings(), "", "CEL's string extensions: `output.lowerAscii().contains(\"refund\")`"},
	"cel.lib.ext.cel.bindings": {ext.Bindings(), "cel.", "`cel.bind(name, value, expr)`: a local name for a value"},
	"cel.lib.ext.comprev2":     {ext.TwoVarComprehensions(), "", "two-variable comprehensions over lists (index, element) and maps (key, value): `m.all(k, v, ...)`, `m.transformList(k, v, ...)`"},
	"cel.lib.optional":         {cel.OptionalTypes(), "", "optional values: `a.?b.orValue(x)`"},
}

// specExample is the spec file the page opens with; the test loads it.
const specExample = `verifiers:
  - id: VER-C02
    task: TASK-C02
    name: Team meeting moved to Friday
    let:
      meeting: 'initial.events.filter(e, e.title == "Team Meeting")'
    reward: {weighted: {on-friday: 3, same-number-of-events: 1}}
    checks:
      - id: on-friday
        type: expr
        expr: final.events.exists(e, e.title == "Team Meeting" && e.startTime.startsWith("2024-11-22"))
        detail: '"events: " + string(count(final.events))'
      - id: meeting-kept
        type: expr
        expr: meeting.all(m, final.events.exists(e, e.id == m.id))
      - id: nothing-else-changed
        type: unchanged
        allow:
          - table: events
            where: change.kind == "updated" && change.before.title == "Team Meeting"
      - id: same-number-of-events
        type: state
        table: events
        optional: true
        asserts:
          - {comparator: eq, function: count, function_args: ["_result"], value: {expr: "size(initial.events)"}}
    flags:
      - id: grader-text
        label: Text aimed at a grader in the output
        expr: 'output.matches("(?i)grader[ _-]?override")'
`

// TestReferenceSpec checks that docs/reference/spec.md describes every
// field the loader accepts in each object of a spec file (found by asking
// the loader itself), every check type, comparator and assert function,
// and the CEL variables and functions; GAVEL_UPDATE_DOCS=1 (make docs)
// rewrites it.
func TestReferenceSpec(t *testing.T) {
	if _, err := Parse("example.yaml", []byte(specExample)); err != nil {
		t.Fatalf("the page's example does not load: %v", err)
	}
	var b bytes.Buffer
	b.WriteString("# Spec reference\n\n" +
		"<!-- Generated from the code by `make docs`; do not edit. -->\n\n" +
		"Every field of a spec file (YAML or JSON) with its type, its default and an\n" +
		"example; the check types, comparators and functions; the reward formulas;\n" +
		"and the variables and functions of CEL expressions. The fields are those\n" +
		"the loader accepts: any other is a problem `gavel spec check` reports with\n" +
		"its line and column. [Verifiers](../verifiers.md#declarative-verifiers-spec-files)\n" +
		"shows spec files at work.\n\n" +
		"A spec file is an object whose one field, `verifiers`, is a non-empty list\n" +
		"of verifiers:\n\n```yaml\n" + specExample + "```\n\n")
	if got := knownFields(t, `{"`+probeKey+`": 1}`); !slices.Equal(got, []string{"verifiers"}) {
		t.Errorf("the spec file's fields are %v, not verifiers: document them", got)
	}

	b.WriteString("## Verifier\n\n")
	fieldTable(t, &b, "verifier", knownFields(t, `{"verifiers": [{"`+probeKey+`": 1}]}`), verifierFieldDocs, nil)

	// Checks: their fields, and which check types take each.
	fields := knownFields(t, withChecks(`"checks": [{"`+probeKey+`": 1}]`))
	if !slices.Equal(fields, checkFields) {
		t.Errorf("the loader's check fields %v are not checkFields %v", fields, checkFields)
	}
	kinds := checkKindNames()
	var turnKinds []string
	for _, k := range kinds {
		if !hasProblem(withChecks(`"turn_checks": [{"id": "c", "type": "`+k+`"}]`), k+" checks do not apply to a turn") {
			turnKinds = append(turnKinds, k)
		}
	}
	takes := map[string][]string{}     // field -> the check types taking it
	takesTurn := map[string][]string{} // field -> the turn check types taking it
	for _, f := range fields {
		for _, k := range kinds {
			if checkAccepts(withChecks(`"checks": [`+probeCheck(k, f)+`]`), f, k) {
				takes[f] = append(takes[f], k)
			}
			if slices.Contains(turnKinds, k) && checkAccepts(withChecks(`"turn_checks": [`+probeCheck(k, f)+`]`), f, k) {
				takesTurn[f] = append(takesTurn[f], k)
			}
		}
	}
	b.WriteString("## Check\n\nThe fields of a check, of `checks` and of `turn_checks` alike; a field\n" +
		"of another check type than the check's is a problem.\n\n")
	fieldTable(t, &b, "check", fields, checkFieldDocs, func(f string) string {
		return checkTypesText(takes[f], takesTurn[f], kinds, turnKinds)
	})

	b.WriteString("### Check types\n\n| type | its own fields | asserts | turn checks | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, k := range kinds {
		var own []string
		for _, f := range fields {
			if f != "asserts" && slices.Contains(takes[f], k) && len(takes[f]) < len(kinds) {
				own = append(own, "`"+f+"`")
			}
		}
		asserts := "none"
		switch {
		case !slices.Contains(takes["asserts"], k):
		case hasProblem(withChecks(`"checks": [{"id": "c", "type": "`+k+`"}]`), "has no asserts"):
			asserts = "required"
		default:
			asserts = "optional"
		}
		turn := "no"
		if slices.Contains(turnKinds, k) {
			turn = "yes"
		}
		m, ok := checkTypeDocs[k]
		if !ok {
			t.Errorf("check type %s has no meaning in checkTypeDocs", k)
		}
		row(t, &b, "`"+k+"`", orNone(strings.Join(own, ", ")), asserts, turn, m)
	}
	extraKeys(t, "checkTypeDocs", checkTypeDocs, kinds)
	b.WriteString("\n### Manual functions\n\nThe Go functions registered in gavel that `manual` checks call by name.\n\n" +
		"| function | call |\n| --- | --- |\n")
	for _, f := range manualRegistry() {
		row(t, &b, "`"+f.Name+"`", "`"+f.Usage+"`")
	}

	b.WriteString("\n## Assert\n\nAn assert of a `state`, `log`, `sequential` or `manual` check compares\n" +
		"`_result`, the check's rows, or a function of them, with a value.\n\n")
	fieldTable(t, &b, "assert", knownFields(t, withChecks(`"checks": [{"id": "c", "type": "state", "table": "t", "asserts": [{"`+probeKey+`": 1}]}]`)), assertFieldDocs, nil)
	b.WriteString("### Comparators\n\nNumbers compare by value (1 equals 1.0).\n\n| comparator | passes when |\n| --- | --- |\n")
	names := sortedByValue(comparators)
	for _, c := range names {
		m, ok := comparatorDocs[c]
		if !ok {
			t.Errorf("comparator %s has no meaning in comparatorDocs", c)
		}
		row(t, &b, "`"+c+"`", m)
	}
	extraKeys(t, "comparatorDocs", comparatorDocs, names)
	b.WriteString("\n### Assert functions\n\nEach reads the values its path selects in `_result`: `_result` (the rows;\n" +
		"`count`, `sum`, `min`, `max` and `exists` of `_result` read its rows),\n" +
		"`_result[*]`, `_result[*].a.b`, `_result[N]`, `_result[N].a.b`.\n\n| function | result |\n| --- | --- |\n")
	names = sortedByValue(functions)
	for _, f := range names {
		m, ok := functionDocs[f]
		if !ok {
			t.Errorf("assert function %s has no meaning in functionDocs", f)
		}
		row(t, &b, "`"+f+"`", m)
	}
	extraKeys(t, "functionDocs", functionDocs, names)

	b.WriteString("\n## Allow item\n\nAn item of an `unchanged` check's `allow` is a table path (`events`: every\n" +
		"change of the table and the tables below it) or an object:\n\n")
	fieldTable(t, &b, "allow item", knownFields(t, withChecks(`"checks": [{"id": "c", "type": "unchanged", "allow": [{"`+probeKey+`": 1}]}]`)), allowFieldDocs, nil)

	// Flags: which take each field, by kind (expr or rubric).
	fields = knownFields(t, withChecks(`"checks": [{"id": "c", "type": "expr", "expr": "true"}], "flags": [{"`+probeKey+`": 1}]`))
	if !slices.Equal(fields, flagFields) {
		t.Errorf("the loader's flag fields %v are not flagFields %v", fields, flagFields)
	}
	b.WriteString("## Flag\n\nA flag is raised by a CEL condition (`expr`) or by a judge's verdict\n" +
		"(`rubric`); it never moves the rollout's status or reward.\n\n")
	fieldTable(t, &b, "flag", fields, flagFieldDocs, func(f string) string {
		var in []string
		for _, base := range []string{"expr", "rubric"} {
			if flagAccepts(base, f) {
				in = append(in, base)
			}
		}
		if len(in) == 2 {
			return "every flag"
		}
		return strings.Join(in, ", ")
	})

	b.WriteString("## judge\n\nA verifier's `judge` replaces the run's judge settings for its rubric checks\n" +
		"and flags ([Judging](../judging.md)).\n\n")
	fieldTable(t, &b, "judge", knownFields(t, withChecks(`"checks": [{"id": "c", "type": "expr", "expr": "true"}], "judge": {"`+probeKey+`": 1}`)), judgeFieldDocs, nil)
	b.WriteString("## remote\n\nA verifier with `remote` has no checks of its own: each rollout of its tasks\n" +
		"is sent to the service, whose answer becomes its checks\n" +
		"([Remote verifiers](../remote-verifiers.md)). With `nemo-gym`, `batch` above 1,\n" +
		"`pure` and `flags: true` are problems.\n\n")
	fieldTable(t, &b, "remote", knownFields(t, `{"verifiers": [{"id": "V", "name": "n", "task": "T", "remote": {"`+probeKey+`": 1}}]}`), remoteFieldDocs, nil)

	letVars := varNames(t, letEnv)
	fmt.Fprintf(&b, "## let\n\nA verifier's `let` is an object of NAME: CEL expression. An expression of\n"+
		"`let` reads only %s, so its value holds for every rollout of a world (its\n"+
		"initial state and task row, compared by their bytes): it is computed once\n"+
		"per world and shared. The names are variables of the verifier's other\n"+
		"expressions. A name matches `%s` and is none of %s.\n\n",
		joinCode(letVars, "and"), letName, joinCode(reserved, "or"))

	b.WriteString("## Reward formulas\n\nThe value of a verifier's `reward` (or `turn_reward`). A formula is evaluated\n" +
		"only when no check is pending or in error: a rollout with a check pending\n" +
		"has no reward, and an error is never a reward.\n\n| formula | example | reward |\n| --- | --- | --- |\n")
	for _, f := range formulaDocs {
		_, text, _ := strings.Cut(f.example, ": ")
		formula := parseFormulaYAML(t, text)
		if formula.Kind() != f.kind {
			t.Errorf("formula example %s is of kind %s, not %s", f.example, formula.Kind(), f.kind)
		}
		row(t, &b, "`"+f.kind+"`", "`"+f.example+"`", f.meaning)
	}
	rewardExpressions(t, &b)

	celSections(t, &b)

	page := bytes.TrimRight(b.Bytes(), "\n")
	if os.Getenv("GAVEL_UPDATE_DOCS") != "" {
		if err := os.WriteFile(referenceSpec, append(page, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(referenceSpec)
	if err != nil || !bytes.Equal(have, append(page, '\n')) {
		t.Errorf("docs/reference/spec.md is not generated from the code (%v): run make docs", err)
	}
}

// rewardExpressions writes the section on reward expressions: the
// members of checks (counted by a formula), and the variables and
// functions, whose examples must compile.
func rewardExpressions(t *testing.T, b *bytes.Buffer) {
	b.WriteString("\n### Reward expressions\n\nA reward expression (`{expr: CEL}`) is a CEL expression whose value is the\n" +
		"reward. It sees:\n\n| name | example | meaning |\n| --- | --- | --- |\n")
	names := []string{"checks", "sum", "math.greatest", "math.least"}
	names = append(names, ownFunctions(t, verifiers.MathFunctions())...)
	for _, n := range names {
		d, ok := rewardNameDocs[n]
		if !ok {
			t.Errorf("%s of reward expressions has no meaning in rewardNameDocs", n)
			continue
		}
		if _, err := verifiers.Expr(d.example); err != nil {
			t.Errorf("the example of %s: %v", n, err)
		}
		row(t, b, "`"+n+"`", "`"+d.example+"`", d.meaning)
	}
	extraKeys(t, "rewardNameDocs", rewardNameDocs, names)

	// The members of each check: their number, and each by name.
	one := []verifiers.Check{{ID: "a", Label: "a", Required: true, Status: verifiers.Pass}}
	size := verifiers.ScoreWith(mustExpr(t, "double(size(checks[0])) / 100.0"), one, nil)
	if !size.HasReward || int(math.Round(size.Reward*100)) != len(rewardCheckDocs) {
		t.Errorf("a reward expression's check has %v members, rewardCheckDocs %d: document them", size.Reward*100, len(rewardCheckDocs))
	}
	b.WriteString("\nEach element of `checks` has:\n\n| member | meaning |\n| --- | --- |\n")
	for _, k := range sortedKeys(rewardCheckDocs) {
		v := verifiers.ScoreWith(mustExpr(t, "has(checks[0]."+k+") ? 1.0 : 0.0"), one, nil)
		if !v.HasReward || v.Reward != 1 {
			t.Errorf("a reward expression's check has no member %s", k)
		}
		row(t, b, "`"+k+"`", rewardCheckDocs[k])
	}
	fmt.Fprintf(b, "\nCEL's math extension is there too (%s). JSON numbers and the\n"+
		"members above mix with CEL's numbers across types (`1 == 1.0`). An\n"+
		"evaluation past the cost limit (%d) is a verifier error.\n\n",
		joinCode(mathExtNames(t), "and"), verifiers.FormulaCostLimit)
}

// celSections writes the sections on the CEL expressions of checks: their
// variables (those of the environment, turn, change), gavel's functions
// and the libraries.
func celSections(t *testing.T, b *bytes.Buffer) {
	b.WriteString("## CEL expressions\n\nThe CEL expressions of a spec: `expr`, `detail`, `{expr: ...}` values, `query`\n" +
		"and `context`, `gold` and `answer`, `when` and `turn`, `where`, and `let`.\n\n" +
		"### Variables\n\n| variable | in | meaning |\n| --- | --- | --- |\n")
	env, err := celEnv()
	if err != nil {
		t.Fatal(err)
	}
	letVars := varNames(t, letEnv)
	all := varNames(t, celEnv)
	for _, v := range all {
		in := "every expression but `let`"
		if slices.Contains(letVars, v) {
			in = "every expression"
		}
		row(t, b, "`"+v+"`", in, varDoc(t, v))
	}
	turnEnv, err := env.Extend(turnVariable)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range turnEnv.Variables() {
		if n := v.Name(); !slices.Contains(all, n) {
			all = append(all, n)
			row(t, b, "`"+n+"`", "turn checks", varDoc(t, n))
		}
	}
	// change is declared where an allow filter is compiled.
	if hasProblem(withChecks(`"checks": [{"id": "c", "type": "unchanged", "allow": [{"table": "t", "where": "change.kind == \"added\""}]}]`), "") {
		t.Error("an allow filter reading change does not compile")
	}
	all = append(all, "change")
	row(t, b, "`change`", "`where` of an allow item", varDoc(t, "change"))
	extraKeys(t, "celVarDocs", celVarDocs, all)
	b.WriteString("\nA verifier's `let` names are variables of its expressions too. JSON numbers\n" +
		"are CEL doubles (`double(size(x))` to mix them with counts); comparisons\n" +
		"across numeric types are allowed (`1 == 1.0`).\n\n")

	b.WriteString("### Functions\n\ngavel's own, beside CEL's standard functions and macros:\n\n| function | example | meaning |\n| --- | --- | --- |\n")
	var base []cel.EnvOption
	for _, d := range celLibraryDocs {
		base = append(base, d.opt)
	}
	baseEnv, err := cel.NewEnv(base...)
	if err != nil {
		t.Fatal(err)
	}
	var own []string
	for n := range env.Functions() {
		if !baseEnv.HasFunction(n) {
			own = append(own, n)
		}
	}
	slices.Sort(own)
	for _, f := range own {
		d, ok := celFuncDocs[f]
		if !ok {
			t.Errorf("CEL function %s has no meaning in celFuncDocs", f)
			continue
		}
		if _, iss := env.Compile(d.example); iss.Err() != nil {
			t.Errorf("the example of %s: %v", f, iss.Err())
		}
		row(t, b, "`"+f+"`", "`"+d.example+"`", d.meaning)
	}
	extraKeys(t, "celFuncDocs", celFuncDocs, own)

	b.WriteString("\n### Libraries\n\nThe CEL libraries on beside the standard one:\n\n| library | adds | meaning |\n| --- | --- | --- |\n")
	var libs []string
	for _, l := range env.Libraries() {
		if l != "cel.lib.std" {
			libs = append(libs, l)
		}
	}
	slices.Sort(libs)
	for _, l := range libs {
		d, ok := celLibraryDocs[l]
		if !ok {
			t.Errorf("CEL library %s has no meaning in celLibraryDocs", l)
			continue
		}
		row(t, b, "`"+l+"`", joinCode(libraryNames(t, d.opt, d.macros), "and"), d.meaning)
	}
	extraKeys(t, "celLibraryDocs", celLibraryDocs, libs)
	fmt.Fprintf(b, "\nAn evaluation whose cost passes the limit (%d: roughly the number of\n"+
		"operations, each step of a comprehension counting) ends its check in status\n"+
		"`error`. An expression with no comprehension that calls only operators,\n"+
		"comparisons, conversions and the string tests costs at most in proportion\n"+
		"to what it reads, and its cost is not counted.\n", CostLimit)
}

// probeKey is the unknown field the probes put where the loader reads
// an object's fields.
const probeKey = "zz_probe"

// withChecks wraps members of a verifier (JSON) into a spec file.
func withChecks(members string) string {
	return `{"verifiers": [{"id": "V", "name": "n", "task": "T", ` + members + `}]}`
}

// problemsOf returns the problems of a spec text.
func problemsOf(text string) Problems {
	_, err := Parse("probe.json", []byte(text))
	var ps Problems
	errors.As(err, &ps)
	return ps
}

// hasProblem reports whether the spec text has a problem whose message
// contains msg (any problem when msg is "").
func hasProblem(text, msg string) bool {
	return slices.ContainsFunc(problemsOf(text), func(p Problem) bool { return strings.Contains(p.Msg, msg) })
}

// knownFields returns the fields the loader accepts in the object where
// text has the field probeKey, as its problem's hint names them.
func knownFields(t *testing.T, text string) []string {
	t.Helper()
	for _, p := range problemsOf(text) {
		if strings.HasPrefix(p.Msg, `unknown field "`+probeKey+`"`) {
			if rest, ok := strings.CutPrefix(p.Hint, "known fields: "); ok {
				return strings.Split(rest, ", ")
			}
		}
	}
	t.Fatalf("the loader names no known fields for %s", text)
	return nil
}

// probeCheck is a check of type kind with field set (asserts to a list
// of one assert).
func probeCheck(kind, field string) string {
	value := `"x"`
	if field == "asserts" {
		value = `[{"comparator": "eq", "value": 1}]`
	}
	check := `{"id": "c", "type": "` + kind + `"`
	if field != "id" && field != "type" {
		check += `, "` + field + `": ` + value
	}
	return check + "}"
}

// checkAccepts reports whether the loader takes field in the check of
// type kind of the spec text: no problem says it is not one of its fields.
func checkAccepts(text, field, kind string) bool {
	return !slices.ContainsFunc(problemsOf(text), func(p Problem) bool {
		return strings.HasPrefix(p.Msg, field+" is not a field of") ||
			field == "asserts" && p.Msg == kind+" checks take no asserts" ||
			strings.HasPrefix(p.Msg, "unknown field")
	})
}

// flagAccepts reports whether a flag raised by base (expr or rubric)
// takes field.
func flagAccepts(base, field string) bool {
	flag := `{"id": "f", "expr": "true"}`
	if base == "rubric" {
		flag = `{"id": "f", "rubric": "r"}`
	}
	if field != "id" && field != base {
		flag = strings.TrimSuffix(flag, "}") + `, "` + field + `": "x"}`
	}
	return !slices.ContainsFunc(problemsOf(withChecks(`"checks": [{"id": "c", "type": "expr", "expr": "true"}], "flags": [`+flag+`]`)), func(p Problem) bool {
		return strings.HasPrefix(p.Msg, field+" is not a field of") || strings.Contains(p.Msg, "has both expr and rubric") ||
			strings.HasPrefix(p.Msg, "unknown field")
	})
}

// checkTypesText says which check types take a field: in, of trajectory
// checks, and turn, of turn checks.
func checkTypesText(in, turn, kinds, turnKinds []string) string {
	if len(in) == 0 {
		return "turn checks only (" + strings.Join(turn, ", ") + ")"
	}
	s := strings.Join(in, ", ")
	if len(in) == len(kinds) {
		s = "every type"
	}
	if len(turn) == 0 && slices.ContainsFunc(in, func(k string) bool { return slices.Contains(turnKinds, k) }) {
		s += "; not in turn checks"
	}
	return s
}

// checkKindNames returns the check types in the order of their kinds.
func checkKindNames() []string { return sortedByValue(checkKinds) }

// sortedByValue returns the keys of m in the order of their values.
func sortedByValue[V ~uint8](m map[string]V) []string {
	names := sortedKeys(m)
	slices.SortStableFunc(names, func(a, b string) int { return int(m[a]) - int(m[b]) })
	return names
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// extraKeys reports the keys of docs that are not among names.
func extraKeys[V any](t *testing.T, what string, docs map[string]V, names []string) {
	t.Helper()
	for _, k := range sortedKeys(docs) {
		if !slices.Contains(names, k) {
			t.Errorf("%s documents %s, which the code does not have", what, k)
		}
	}
}

// fieldTable writes the table of an object's fields; which, when set,
// adds a column saying which kinds of the object take each field.
func fieldTable(t *testing.T, b *bytes.Buffer, object string, fields []string, docs map[string]fieldDoc, which func(string) string) {
	t.Helper()
	if which != nil {
		b.WriteString("| field | type | default | in | example | meaning |\n| --- | --- | --- | --- | --- | --- |\n")
	} else {
		b.WriteString("| field | type | default | example | meaning |\n| --- | --- | --- | --- | --- |\n")
	}
	for _, f := range fields {
		d, ok := docs[f]
		if !ok {
			t.Errorf("the %s field %s has no meaning: document it", object, f)
		}
		cells := []string{"`" + f + "`", d.typ, d.def}
		if which != nil {
			cells = append(cells, which(f))
		}
		row(t, b, append(cells, "`"+d.example+"`", d.meaning)...)
	}
	extraKeys(t, object+" fields", docs, fields)
	b.WriteString("\n")
}

// row writes a table row; a cell must not hold a pipe that would split it.
func row(t *testing.T, b *bytes.Buffer, cells ...string) {
	t.Helper()
	for _, c := range cells {
		if strings.Contains(strings.ReplaceAll(c, `\|`, ""), "|") {
			t.Errorf("table cell %q holds a |", c)
		}
	}
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// joinCode joins names in code spans, the last after conj.
func joinCode(names []string, conj string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
}

// varNames returns the variables of a CEL environment, in order.
func varNames(t *testing.T, env func() (*cel.Env, error)) []string {
	t.Helper()
	e, err := env()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range e.Variables() {
		names = append(names, v.Name())
	}
	return names
}

func varDoc(t *testing.T, name string) string {
	t.Helper()
	d, ok := celVarDocs[name]
	if !ok {
		t.Errorf("CEL variable %s has no meaning in celVarDocs", name)
	}
	return d
}

// ownFunctions returns the functions opt adds to CEL's standard ones.
func ownFunctions(t *testing.T, opt cel.EnvOption) []string {
	names, _ := added(t, opt)
	return names
}

// libraryNames returns the functions and macros opt adds to CEL's
// standard ones, its macros called in the namespace prefix.
func libraryNames(t *testing.T, opt cel.EnvOption, prefix string) []string {
	funcs, macros := added(t, opt)
	names := funcs
	for _, m := range macros {
		names = append(names, prefix+m)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// added returns the functions and the macros opt adds to CEL's standard
// environment, sorted.
func added(t *testing.T, opt cel.EnvOption) (funcs, macros []string) {
	t.Helper()
	std, err := cel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env, err := cel.NewEnv(opt)
	if err != nil {
		t.Fatal(err)
	}
	for n := range env.Functions() {
		if !std.HasFunction(n) && !strings.HasPrefix(n, "_") && !strings.Contains(n, "@") {
			funcs = append(funcs, n)
		}
	}
	stdMacros := map[string]bool{}
	for _, m := range std.Macros() {
		stdMacros[m.MacroKey()] = true
	}
	for _, m := range env.Macros() {
		if !stdMacros[m.MacroKey()] {
			macros = append(macros, m.Function())
		}
	}
	slices.Sort(funcs)
	slices.Sort(macros)
	return funcs, slices.Compact(macros)
}

// mathExtNames returns the names of CEL's math extension, as a reward
// expression calls them.
func mathExtNames(t *testing.T) []string {
	return libraryNames(t, ext.Math(), "math.")
}

func mustExpr(t *testing.T, src string) verifiers.Formula {
	t.Helper()
	f, err := verifiers.Expr(src)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// parseFormulaYAML reads a formula written as in a spec file.
func parseFormulaYAML(t *testing.T, text string) verifiers.Formula {
	t.Helper()
	n, err := parseYAML([]byte(text))
	if err != nil {
		t.Fatalf("formula %s: %v", text, err)
	}
	js, _, err := jsonText(n, false)
	if err != nil {
		t.Fatalf("formula %s: %v", text, err)
	}
	f, err := verifiers.ParseFormula(js)
	if err != nil {
		t.Fatalf("formula %s: %v", text, err)
	}
	return f
}

// durationText writes a duration as a spec writes it: 1m, not 1m0s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
