package cli

import (
	"fmt"
	"path"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/verifiers"
)

// compiled holds the verifiers Main was given, with their Source filled
// in; set once, before any command runs.
var compiled struct {
	sync.Mutex
	vs []*verifiers.Verifier
}

// setGoVerifiers records vs as the verifiers compiled into this gavel. A
// verifier without an ID, without tasks, or without a Grade function (a
// remote one aside) is refused, named by its place in vs.
func setGoVerifiers(vs []*verifiers.Verifier) error {
	out := make([]*verifiers.Verifier, 0, len(vs))
	mod := mainModule()
	for i, v := range vs {
		switch {
		case v == nil:
			return fmt.Errorf("cli.Main: verifier %d of %d is nil", i+1, len(vs))
		case v.ID == "":
			return fmt.Errorf("cli.Main: verifier %d of %d has no ID", i+1, len(vs))
		case len(v.Tasks) == 0:
			return fmt.Errorf("cli.Main: verifier %s binds no tasks", v.ID)
		case v.Grade == nil && v.Remote == nil:
			return fmt.Errorf("cli.Main: verifier %s has no Grade function", v.ID)
		}
		cp := *v
		if cp.Source == "" {
			cp.Source = gradeSource(v.Grade, mod)
		}
		out = append(out, &cp)
	}
	compiled.Lock()
	compiled.vs = out
	compiled.Unlock()
	return nil
}

// compiledIn returns the verifiers compiled into this gavel, in the order
// Main was given them: a new slice of the same verifiers, which callers
// must not modify.
func compiledIn() []*verifiers.Verifier {
	compiled.Lock()
	defer compiled.Unlock()
	return append([]*verifiers.Verifier(nil), compiled.vs...)
}

// mainModule returns the path of the module the running binary was built
// from ("" when unknown).
func mainModule() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.Main.Path
	}
	return ""
}

// gradeSource says where grade is defined: its file, relative to the main
// module mod ("verifiers/crm/crm.go:87"), or under its package's import
// path when the package is another module's, and the line. "" when grade
// is nil or unknown.
func gradeSource(grade func(*verifiers.Rollout, *verifiers.Checks) error, mod string) string {
	if grade == nil {
		return ""
	}
	fn := runtime.FuncForPC(reflect.ValueOf(grade).Pointer())
	if fn == nil {
		return ""
	}
	file, line := fn.FileLine(fn.Entry())
	// "example.com/env/graders.gradeVER001" (".func1" for a closure): the
	// package path ends at the first dot after the last slash.
	name := fn.Name()
	slash := strings.LastIndexByte(name, '/')
	pkg := name
	if dot := strings.IndexByte(name[slash+1:], '.'); dot >= 0 {
		pkg = name[:slash+1+dot]
	}
	switch {
	case mod != "" && pkg == mod:
		pkg = ""
	case mod != "" && strings.HasPrefix(pkg, mod+"/"):
		pkg = pkg[len(mod)+1:]
	}
	return path.Join(pkg, path.Base(file)) + ":" + strconv.Itoa(line)
}
