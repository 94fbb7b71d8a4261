package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/spec"
)

const specSynopsis = `gavel spec check [--tasks FILE] [--input FILE [--from FORMAT]] FILE...

Loads declarative verifier files (YAML or JSON, or directories of them) as
gavel grade --spec does, and prints every problem with its file, line and
column. With --tasks (a tasks table) or --input (rollouts, read as gavel
grade reads them), it also prints how many of their task ids each verifier
binds, and the task ids no verifier binds. Exit status 0 when every file is
valid, 2 otherwise.`

const specExamples = `  gavel spec check calendar.yaml
  gavel spec check specs/
  gavel spec check --tasks tasks.jsonl specs/
  gavel spec check --input airline.json --from tau-bench airline.yaml
  gavel grade --spec specs/ rollouts.parquet`

func runSpec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(stdout, "Usage: %s\n\nExamples:\n%s\n", specSynopsis, specExamples)
		if len(args) == 0 {
			return usagef("gavel spec check FILE...", "spec: no subcommand given")
		}
		return nil
	}
	if args[0] != "check" {
		return usagef("gavel spec check FILE...", "spec: unknown subcommand %q%s", args[0], didYouMean(args[0], []string{"check"}, ""))
	}
	fs := newFlagSet("spec check", specSynopsis, specExamples, stdout)
	tasksFile := fs.String("tasks", "", "tasks table `FILE`: print how many of its tasks each verifier binds")
	var rolloutFiles listFlag
	fs.Var(&rolloutFiles, "input", "rollouts `FILE` (as gavel grade takes them; repeatable): print how many of their tasks each verifier binds")
	from := fs.String("from", "", "read .json --input files as logs of this harness `FORMAT` (as gavel grade --from)")
	mapping := fs.String("map", "", "read fields from other columns: `K=COL[.PATH],...` (as gavel grade --map)")
	if err := parseFlags(fs, interleaved(fs, args[1:])); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("gavel spec check calendar.yaml", "spec check: no file given")
	}
	if *from != "" && len(rolloutFiles) == 0 {
		return usagef("gavel spec check --input airline.json --from tau-bench airline.yaml", "spec check: --from reads --input files; no --input given")
	}
	fields, err := parseMap(*mapping)
	if err != nil {
		return err
	}
	vs, err := spec.Load(fs.Args())
	var ps spec.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Fprintln(stdout, p.Error())
		}
		return &exitError{code: 2, msg: fmt.Sprintf("%d problems in spec files", len(ps))}
	}
	if err != nil {
		return usagef("gavel spec check FILE...", "%v", err)
	}
	all, err := allVerifiers(vs)
	if err != nil {
		return err
	}
	for _, v := range vs {
		fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\n", v.Source, v.ID, v.Name, taskList(v.Tasks))
	}
	fmt.Fprintf(stdout, "ok: %d verifiers\n", len(vs))
	if *tasksFile != "" {
		tasks, err := inputs.LoadTasks(*tasksFile, fields)
		if err != nil {
			return usagef("gavel spec check --tasks tasks.jsonl FILE...", "%v", err)
		}
		ids := slices.Sorted(maps.Keys(tasks))
		printBindings(stdout, *tasksFile, ids, 0, vs, all)
	}
	if len(rolloutFiles) > 0 {
		ids, invalid, err := inputs.TaskIDs(rolloutFiles, *from, fields, os.Stdin)
		var ce *inputs.ConfigError
		if errors.As(err, &ce) {
			return usagef("gavel spec check --input rollouts.jsonl FILE...", "%v", err)
		}
		if err != nil {
			return err
		}
		printBindings(stdout, strings.Join(rolloutFiles, ", "), ids, invalid, vs, all)
	}
	return nil
}

// taskList describes a verifier's task patterns: "3 tasks" for task ids
// only, else the patterns ("airline/*, all").
func taskList(tasks []string) string {
	if !slices.ContainsFunc(tasks, func(t string) bool { return strings.HasSuffix(t, "*") }) {
		return plural(int64(len(tasks)), "task", "tasks")
	}
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t
		if t == verifiers.AllTasks {
			out[i] = "all"
		}
	}
	return strings.Join(out, ", ")
}

// printBindings prints, for the task ids ids read from source, how many
// each verifier binds (the checked verifiers, listed, in order; then the
// built-in ones that bind any), and the ids that no verifier binds. all
// are the verifiers a grading run would load, which allVerifiers accepted.
func printBindings(w io.Writer, source string, ids []string, invalid int64, checked, all []*verifiers.Verifier) {
	b, _ := verifiers.Bind(all)
	counts := map[*verifiers.Verifier]int{}
	var unbound []string
	for _, id := range ids {
		if v := b.Lookup(id); v != nil {
			counts[v]++
		} else {
			unbound = append(unbound, id)
		}
	}
	fmt.Fprintf(w, "%s: %s\n", source, plural(int64(len(ids)), "task", "tasks"))
	if invalid > 0 {
		fmt.Fprintf(w, "%s: %s without a valid task id\n", source, plural(invalid, "rollout", "rollouts"))
	}
	for _, v := range all {
		if counts[v] > 0 || slices.Contains(checked, v) {
			fmt.Fprintf(w, "%s\tbinds %s\t%s\n", v.ID, plural(int64(counts[v]), "task", "tasks"), taskList(v.Tasks))
		}
	}
	if len(unbound) == 0 {
		fmt.Fprintln(w, "every task is bound")
		return
	}
	fmt.Fprintf(w, "no verifier binds %s:\n", plural(int64(len(unbound)), "task", "tasks"))
	for _, id := range unbound {
		fmt.Fprintf(w, "\t%s\n", id)
	}
}

// loadVerifiers returns the verifiers a grading run uses: the Go verifiers
// compiled in, the built-in spec verifiers (the calendar environment) and
// those of the --spec paths. Invalid specs are a usage error (exit 2)
// listing every problem.
func loadVerifiers(paths []string) ([]*verifiers.Verifier, error) {
	var loaded []*verifiers.Verifier
	if len(paths) > 0 {
		vs, err := spec.Load(paths)
		var ps spec.Problems
		if errors.As(err, &ps) {
			return nil, usagef("gavel spec check "+strings.Join(paths, " "), "invalid spec, nothing graded:\n%s", ps.Error())
		}
		if err != nil {
			return nil, usagef("gavel grade --help", "%v", err)
		}
		loaded = vs
	}
	return allVerifiers(loaded)
}

// allVerifiers appends loaded spec verifiers to the built-in ones, refusing
// an id or a task that two of them claim (pipeline.Bind).
func allVerifiers(loaded []*verifiers.Verifier) ([]*verifiers.Verifier, error) {
	all := append(compiledIn(), loaded...)
	if _, err := pipeline.Bind(all); err != nil {
		return nil, usagef("gavel verifier list", "%v", err)
	}
	return all, nil
}

// checkNewVerifier refuses a new verifier whose id, or task, a built-in
// verifier (Go or spec) or one of others already has.
func checkNewVerifier(id, task string, others []*verifiers.Verifier) error {
	return checkClash(id, task, append(compiledIn(), others...))
}

// checkClash refuses a new verifier whose id, or task, one of vs has.
func checkClash(id, task string, vs []*verifiers.Verifier) error {
	for _, v := range vs {
		if v.ID == id {
			return usagef("gavel verifier list", "verifier %s already exists (%s)", id, v.Source)
		}
		for _, t := range v.Tasks {
			if t == task {
				return usagef("gavel verifier list", "task %s is already bound by %s (%s)", task, v.ID, v.Source)
			}
		}
	}
	return nil
}

// addSpecVerifier appends a scaffold verifier to the spec file path,
// creating it if needed. Its only check is required and fails on purpose.
func addSpecVerifier(path, id, task, name string, stdout io.Writer) error {
	scaffold := fmt.Sprintf(`  - id: %s
    task: %s
    name: %s
    checks:
      - id: todo
        label: "TODO: define success condition"
        type: expr
        expr: "false"
        detail: %s
`, yamlQuote(id), yamlQuote(task), yamlQuote(name), yamlQuote(fmt.Sprintf("%q", "Verifier "+id+" is not implemented yet.")))
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		old = nil
	case err != nil:
		return fmt.Errorf("read spec: %w", err)
	}
	var existing []*verifiers.Verifier
	if len(bytes.TrimSpace(old)) > 0 {
		vs, err := spec.Parse(path, old)
		if err != nil {
			return usagef("gavel spec check "+path, "%s is not a valid spec, fix it first:\n%v", path, err)
		}
		existing = vs
	}
	if err := checkNewVerifier(id, task, existing); err != nil {
		return err
	}
	updated, err := appendScaffold(old, scaffold)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	vs, err := spec.Parse(path, updated)
	if err != nil || len(vs) != len(existing)+1 {
		return fmt.Errorf("append to %s: the result does not load (%v)", path, err)
	}
	if err := os.WriteFile(path, updated, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "Added %s to %s\nNext: replace its failing TODO check, then run gavel spec check %s.\n", id, path, path)
	return nil
}

// appendScaffold adds the scaffold item (block YAML, indented two spaces)
// to the verifiers list of a spec file's text. A block-style file whose
// verifiers list ends the file gets the text appended, keeping its comments
// and layout; any other file (JSON, flow style) is re-encoded as YAML.
func appendScaffold(old []byte, item string) ([]byte, error) {
	if len(bytes.TrimSpace(old)) == 0 {
		return []byte("verifiers:\n" + item), nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(old, &doc); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	var list *yaml.Node
	last := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "verifiers" {
			list = root.Content[i+1]
			last = i+2 == len(root.Content)
		}
	}
	if list == nil {
		return nil, errors.New("no verifiers list")
	}
	if last && list.Style&yaml.FlowStyle == 0 && root.Style&yaml.FlowStyle == 0 && len(list.Content) > 0 {
		col := list.Content[0].Column - 3 // the indentation of the item's dash
		if col >= 0 {
			out := append([]byte(nil), old...)
			if !bytes.HasSuffix(out, []byte("\n")) {
				out = append(out, '\n')
			}
			pad := strings.Repeat(" ", col)
			for _, line := range strings.SplitAfter(item, "\n") {
				if line != "" {
					out = append(out, pad+strings.TrimPrefix(line, "  ")...)
				}
			}
			return out, nil
		}
	}
	var add yaml.Node
	if err := yaml.Unmarshal([]byte("verifiers:\n"+item), &add); err != nil {
		return nil, err
	}
	list.Style = 0
	list.Content = append(list.Content, add.Content[0].Content[1].Content[0])
	root.Style = 0
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// yamlQuote returns s as a double-quoted YAML scalar.
func yamlQuote(s string) string {
	return fmt.Sprintf("%q", s)
}
