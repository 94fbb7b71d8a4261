package spec

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// selector says which rows of _result a path starts from.
type selector uint8

const (
	selWhole selector = iota // "_result": the list itself
	selEach                  // "_result[*]": each row
	selIndex                 // "_result[N]": one row
)

// Path is a parsed path argument of an assert function: "_result",
// "_result[*]", "_result[*].a.b", "_result[N]" or "_result[N].a.b".
type Path struct {
	sel    selector
	index  int
	fields []string
	text   string
}

// String returns the path as written.
func (p Path) String() string { return p.text }

// ParsePath parses a path argument. Field names are separated by dots and
// may hold any character but '.', '[' and ']'.
func ParsePath(s string) (Path, error) {
	const root = "_result"
	p := Path{text: s}
	if !strings.HasPrefix(s, root) {
		return p, errors.New("a path starts with _result")
	}
	rest := s[len(root):]
	switch {
	case rest == "":
		return p, nil
	case strings.HasPrefix(rest, "[*]"):
		p.sel = selEach
		rest = rest[3:]
	case strings.HasPrefix(rest, "["):
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return p, errors.New("unclosed [ in path")
		}
		n, err := strconv.Atoi(rest[1:end])
		if err != nil || n < 0 || rest[1] == '+' {
			return p, errors.New("an index is [*] or a non-negative integer [N]")
		}
		p.sel, p.index = selIndex, n
		rest = rest[end+1:]
	default:
		return p, errors.New("after _result comes [*] or [N]")
	}
	if rest == "" {
		return p, nil
	}
	if rest[0] != '.' {
		return p, errors.New("fields follow the index after a dot: _result[*].a.b")
	}
	fields, err := parseFields(rest[1:])
	if err != nil {
		return p, err
	}
	p.fields = fields
	return p, nil
}

// parseFields splits a dotted field path ("crm.deals").
func parseFields(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("empty field path")
	}
	fields := strings.Split(s, ".")
	for _, f := range fields {
		if f == "" {
			return nil, errors.New("empty field name in " + strconv.Quote(s))
		}
		if strings.ContainsAny(f, "[]") {
			return nil, errors.New("field names cannot hold [ or ] in " + strconv.Quote(s))
		}
	}
	return fields, nil
}

// walk follows fields from v with Get.
func walk(v jsonview.Value, fields []string) jsonview.Value {
	for _, f := range fields {
		v = v.Get(f)
	}
	return v
}

// selectValues appends the values p selects from rows to dst. whole is
// true for "_result", which selects the list itself (dst is then rows).
func (p *Path) selectValues(dst, rows []jsonview.Value) (out []jsonview.Value, whole bool) {
	switch p.sel {
	case selWhole:
		return rows, true
	case selIndex:
		if p.index < len(rows) {
			if v := walk(rows[p.index], p.fields); v.Exists() {
				dst = append(dst, v)
			}
		}
		return dst, false
	}
	for _, r := range rows {
		if v := walk(r, p.fields); v.Exists() {
			dst = append(dst, v)
		}
	}
	return dst, false
}
