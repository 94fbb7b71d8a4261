package spec

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/verifiers"
)

// A plain decode of a spec file, for FuzzParse to compare the loader
// with: yaml.Unmarshal into Go maps and lists (aliases followed, repeated
// keys refused, as YAML has them), read for the fields that name things:
// each verifier's id, name and tasks, and each check's id, label, type
// and optional, with the loader's rules for them (known fields only,
// ids and names non-empty strings, ids not repeated, a required check).
//
// Where the loader reads more leniently than this decode, the decode
// says so: a timestamp scalar (2001-01-01) is a string to the loader,
// read as written, which yaml.Unmarshal turns into a time; a document
// naming one where an id, name, label or task is read is not compared
// (skip).

type plainVerifier struct {
	id, name string
	tasks    []string
	checks   []plainCheck
}

type plainCheck struct {
	id, label, typ string
	required       bool
}

var (
	plainVerifierFields = []string{"id", "name", "task", "tasks", "let", "checks", "description", "judge", "reward"}
	plainCheckFields    = []string{"id", "type", "label", "optional", "asserts", "table", "state", "function", "function_args",
		"steps", "rubric", "query", "context", "expr", "detail", "allow", "keys", "description"}
	plainCheckTypes = []string{"state", "log", "sequential", "manual", "rubric", "expr", "unchanged"}
)

// errSkip marks a document this decode does not compare.
var errSkip = errors.New("a timestamp where a name is read: not compared")

// plainString reads a string field; errSkip for a timestamp.
func plainString(v any) (string, bool, error) {
	switch v := v.(type) {
	case string:
		return v, true, nil
	case time.Time:
		return "", false, errSkip
	}
	return "", false, nil
}

// plainMap returns a mapping's members by key, checking they are known.
func plainMap(v any, known []string) (map[string]any, error) {
	var m map[string]any
	switch v := v.(type) {
	case map[string]any:
		m = v
	case map[any]any:
		m = make(map[string]any, len(v))
		for k, x := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("key %v is not a string", k)
			}
			m[ks] = x
		}
	default:
		return nil, errors.New("not an object")
	}
	for k := range m {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("unknown field %q", k)
		}
	}
	return m, nil
}

// plainSpec decodes a spec text plainly; an error says what makes it no
// spec, or is errSkip.
func plainSpec(data []byte) ([]plainVerifier, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	top, err := plainMap(doc, []string{"verifiers"})
	if err != nil {
		return nil, err
	}
	list, ok := top["verifiers"].([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New("no verifiers list")
	}
	var out []plainVerifier
	ids := map[string]bool{}
	for i, x := range list {
		v, err := plainMap(x, plainVerifierFields)
		if err != nil {
			return nil, fmt.Errorf("verifier %d: %w", i, err)
		}
		var w plainVerifier
		var idOK, nameOK bool
		var err1, err2 error
		w.id, idOK, err1 = plainString(v["id"])
		w.name, nameOK, err2 = plainString(v["name"])
		if err := errors.Join(err1, err2); err != nil {
			return nil, errSkip
		}
		if !idOK || !nameOK || w.id == "" || w.name == "" {
			return nil, fmt.Errorf("verifier %d: id or name not a non-empty string", i)
		}
		if ids[w.id] {
			return nil, fmt.Errorf("verifier %d: repeated id %q", i, w.id)
		}
		ids[w.id] = true
		var patterns []any
		switch t, ts := v["task"], v["tasks"]; {
		case t != nil && ts != nil:
			return nil, fmt.Errorf("verifier %d: task and tasks", i)
		case t != nil:
			patterns = []any{t}
		case ts == "all" || ts == "*":
			patterns = []any{"all"}
		case ts != nil:
			patterns, _ = ts.([]any)
			if len(patterns) == 0 {
				return nil, fmt.Errorf("verifier %d: tasks not a non-empty list", i)
			}
		default:
			return nil, fmt.Errorf("verifier %d: no task", i)
		}
		for _, p := range patterns {
			s, ok, err := plainString(p)
			if err != nil {
				return nil, err
			}
			if !ok || s == "" {
				return nil, fmt.Errorf("verifier %d: a task not a non-empty string", i)
			}
			if s == "all" {
				s = verifiers.AllTasks
			}
			w.tasks = append(w.tasks, s)
		}
		checks, ok := v["checks"].([]any)
		if !ok || len(checks) == 0 {
			return nil, fmt.Errorf("verifier %d: no checks list", i)
		}
		checkIDs := map[string]bool{}
		required := false
		for j, y := range checks {
			c, err := plainMap(y, plainCheckFields)
			if err != nil {
				return nil, fmt.Errorf("verifier %d check %d: %w", i, j, err)
			}
			var wc plainCheck
			var typOK, labelOK bool
			var err3 error
			wc.id, idOK, err1 = plainString(c["id"])
			wc.typ, typOK, err2 = plainString(c["type"])
			wc.label, labelOK, err3 = plainString(c["label"])
			if err := errors.Join(err1, err2, err3); err != nil {
				return nil, errSkip
			}
			if !idOK || wc.id == "" || !typOK || !slices.Contains(plainCheckTypes, wc.typ) {
				return nil, fmt.Errorf("verifier %d check %d: id or type", i, j)
			}
			if checkIDs[wc.id] {
				return nil, fmt.Errorf("verifier %d check %d: repeated id %q", i, j, wc.id)
			}
			checkIDs[wc.id] = true
			if c["label"] != nil && !labelOK {
				return nil, fmt.Errorf("verifier %d check %d: label not a string", i, j)
			}
			if wc.label == "" {
				wc.label = wc.id
			}
			opt, ok := c["optional"].(bool)
			if c["optional"] != nil && !ok {
				return nil, fmt.Errorf("verifier %d check %d: optional not a boolean", i, j)
			}
			wc.required = !opt
			required = required || wc.required
			w.checks = append(w.checks, wc)
		}
		if !required {
			return nil, fmt.Errorf("verifier %d: no required check", i)
		}
		out = append(out, w)
	}
	return out, nil
}
