// Package spec loads declarative verifiers: spec files in YAML or JSON whose
// checks are the check objects of the Scale gym verifier API plus
// `optional`, `label`, `state` and the `expr` type (docs/verifiers.md,
// "Declarative verifiers (spec files)"). Loading turns each verifier of a
// spec file into a *verifiers.Verifier that grades like a compiled-in one.
//
// Everything that can be decided without data is decided at load: check and
// comparator names, paths, patterns and literal values (parsed once into
// jsonview documents), regular expressions and CEL programs (compiled once).
// Every problem is reported with its file, line and column and a hint, and a
// spec with any problem loads no verifier at all. Grading then reads the
// rollout's states through the same jsonview values Go verifiers read; CEL
// expressions see them through lazy wrappers (see cel.go).
//
// The files: load.go (the loader and its checks), node.go (YAML nodes to
// JSON constants), path.go (the _result paths), eval.go (grading and the
// comparators), cel.go (CEL), let.go (let bindings, memoized per initial
// state), manual.go (the registry of manual functions), builtin.go (the
// calendar environment, calendar.yaml, built in).
//
//	vs, err := spec.Load([]string{"specs/"})
//	if err != nil {
//		return err // a Problems listing every problem
//	}
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gavelhq/gavel/verifiers"
)

// Problem is one thing wrong with a spec file, found at load.
type Problem struct {
	// File is the spec file's path as given.
	File string
	// Line and Column locate the offending node, 1-based (0 when unknown).
	Line, Column int
	// Msg says what is wrong, lowercase.
	Msg string
	// Hint says how to fix it; may be empty.
	Hint string
}

// Error returns "file:line:col: msg (hint)".
func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
	}
	b.WriteString(": ")
	b.WriteString(p.Msg)
	if p.Hint != "" {
		b.WriteString(" (hint: ")
		b.WriteString(p.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Problems is every problem found in the spec files loaded together, in
// file and position order. It is the error Load and Parse return when a
// spec is invalid.
type Problems []Problem

// Error returns the problems one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Extensions are the file name endings Load reads inside directories.
var Extensions = []string{".yaml", ".yml", ".json"}

// Load reads the spec files named by paths (files, or directories whose
// spec files, those with one of Extensions, are read recursively in
// lexicographic order) and returns their verifiers in order. When any file
// has a problem it returns nil and a Problems holding all of them; other
// errors (a file that cannot be read) are returned as they are.
func Load(paths []string) ([]*verifiers.Verifier, error) {
	files, err := ExpandPaths(paths)
	if err != nil {
		return nil, err
	}
	var all []*verifiers.Verifier
	var at []position
	var problems Problems
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read spec: %w", err)
		}
		vs, pos, err := parse(f, data)
		var ps Problems
		if errors.As(err, &ps) {
			problems = append(problems, ps...)
			continue
		} else if err != nil {
			return nil, err
		}
		all = append(all, vs...)
		at = append(at, pos...)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	if ps := duplicateIDs(all, at); len(ps) > 0 {
		return nil, ps
	}
	return all, nil
}

// FixturesDir is the directory beside a spec file that holds its
// verifiers' fixtures (gavel verifier test).
const FixturesDir = "fixtures"

// ExpandPaths returns the spec files that paths name: a file as given, a
// directory's spec files in lexicographic path order, leaving out the
// fixtures directories below it (FixturesDir: the rollouts gavel verifier
// test reads beside a spec file are not specs).
func ExpandPaths(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("spec: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == FixturesDir && path != p {
				return filepath.SkipDir
			}
			if !d.IsDir() && isSpecFile(path) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("spec: %w", err)
		}
		sort.Strings(found)
		if len(found) == 0 {
			return nil, fmt.Errorf("spec: directory %s holds no .yaml, .yml or .json file", p)
		}
		files = append(files, found...)
	}
	return files, nil
}

func isSpecFile(path string) bool {
	for _, ext := range Extensions {
		if strings.HasSuffix(strings.ToLower(path), ext) {
			return true
		}
	}
	return false
}

// duplicateIDs reports verifier ids defined by two spec files; at holds
// where each verifier starts in its file.
func duplicateIDs(vs []*verifiers.Verifier, at []position) Problems {
	seen := map[string]*verifiers.Verifier{}
	var ps Problems
	for i, v := range vs {
		if prev := seen[v.ID]; prev != nil {
			file := v.Source
			if j := strings.LastIndexByte(file, ':'); j >= 0 {
				file = file[:j]
			}
			ps = append(ps, Problem{File: file, Line: at[i].line, Column: at[i].column,
				Msg:  fmt.Sprintf("duplicate verifier id %q (also at %s)", v.ID, prev.Source),
				Hint: "give each verifier its own id"})
			continue
		}
		seen[v.ID] = v
	}
	return ps
}
