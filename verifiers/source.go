package verifiers

import (
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Builtin returns the verifiers compiled into gavel, in registry order, each
// with Source ("verifiers/crm.go:87", where its Grade function is defined)
// filled in where the verifier leaves it empty. It computes them once;
// every call returns a new slice of the same verifiers, which callers must
// not modify.
func Builtin() []*Verifier {
	return slices.Clone(builtin())
}

var builtin = sync.OnceValue(func() []*Verifier {
	list := registry()
	out := make([]*Verifier, len(list))
	for i, v := range list {
		cp := *v
		file, line := gradeSource(v.Grade)
		if cp.Source == "" && file != "" {
			cp.Source = file + ":" + strconv.Itoa(line)
		}
		out[i] = &cp
	}
	return out
})

// gradeSource returns the file, relative to the module root
// ("verifiers/crm.go"), and line where grade is defined. file is empty
// when grade is nil or not defined in this package's directory.
func gradeSource(grade func(*Rollout, *Checks) error) (file string, line int) {
	if grade == nil {
		return "", 0
	}
	fn := runtime.FuncForPC(reflect.ValueOf(grade).Pointer())
	if fn == nil {
		return "", 0
	}
	file, line = fn.FileLine(fn.Entry())
	// The path is absolute, or module-qualified under -trimpath; either way
	// the package directory is its last directory.
	const dir = "verifiers/"
	i := strings.LastIndex(file, "/"+dir)
	if i < 0 || strings.Contains(file[i+1+len(dir):], "/") {
		return "", 0
	}
	return file[i+1:], line
}
