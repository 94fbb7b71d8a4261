package doctest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/gaveltest"
)

// root is the repository's top directory, from this package's.
var root = filepath.Join("..", "..")

// pages returns the Markdown pages whose examples run: the README and
// every page of docs/.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

// build builds the commands the examples run, gavel and the scripted test
// servers, once per test binary, and returns their directory.
func build(t *testing.T) string {
	t.Helper()
	for _, cmd := range []string{"cmd/gavel", "internal/cmd/fakejudge", "internal/cmd/s3fake"} {
		gaveltest.Build(t, gaveltest.Module+"/"+cmd, gaveltest.Options{})
	}
	return gaveltest.Dir(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	gaveltest.Cleanup()
	os.Exit(code)
}

// fixtures are the repository's directories that examples read, linked
// into each page's directory.
var fixtures = []string{"examples", "columnar", "testdata", "verifiers"}

// TestDocs runs every shell example of README.md and docs/*.md.
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every example of the docs against the built binary")
	}
	var skipped []string
	for _, page := range pages(t) {
		name := strings.TrimPrefix(filepath.ToSlash(page), "../../")
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		steps, err := Parse(string(text))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, s := range steps {
			if s.Skip != "" {
				skipped = append(skipped, fmt.Sprintf("%s:%d: %s", name, s.Line, s.Skip))
			}
		}
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			// Pages run in parallel: each has its own directory, HOME,
			// environment and servers on ports of its own.
			t.Parallel()
			runPage(t, name, steps)
		})
	}
	t.Logf("%d blocks skipped:\n%s", len(skipped), strings.Join(skipped, "\n"))
}

// page is the state of one page's run.
type page struct {
	t     *testing.T
	name  string
	dir   string
	env   []string
	ports map[string]string // port named by the page -> port used
}

func runPage(t *testing.T, name string, steps []Step) {
	bin := build(t)
	dir := t.TempDir()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtures {
		if err := os.Symlink(filepath.Join(abs, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	p := &page{t: t, name: name, dir: dir, ports: map[string]string{}}
	p.env = append(os.Environ(),
		// A page that builds Go (a verifier module) builds against this
		// checkout, with the machine's Go caches.
		"GAVEL_SRC="+abs, "GOCACHE="+goEnv(t, "GOCACHE"), "GOMODCACHE="+goEnv(t, "GOMODCACHE"),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+filepath.Join(dir, ".home"), "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"),
		"TZ=UTC", "LC_ALL=C", "NO_COLOR=1")
	for _, s := range steps {
		if s.Skip != "" {
			continue
		}
		switch s.Kind {
		case Server:
			p.server(s)
		case Setup:
			p.script(s, "setup")
		case Script:
			p.script(s, "sh")
		case Console:
			p.console(s)
		}
		if t.Failed() {
			return // later blocks build on this one
		}
	}
}

// goEnv returns the value of a go env variable.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// ports replaces the ports the page names by those its servers use.
func (p *page) subst(s string) string {
	for from, to := range p.ports {
		s = regexp.MustCompile(`:`+regexp.QuoteMeta(from)+`\b`).ReplaceAllString(s, ":"+to)
	}
	return s
}

// shell runs script with bash in the page's directory and returns its
// output (standard output and error together) and exit status.
func (p *page) shell(script string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = p.dir, p.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Stdin = nil
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String() + "\n[timed out after 5m]", -1
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		p.t.Fatalf("%s: bash: %v", p.name, err)
	}
	return out.String(), 0
}

// script runs an sh block or a setup script: it stops at the first
// command that exits other than 0 or the status the block allows.
func (p *page) script(s Step, what string) {
	trap := fmt.Sprintf("trap 'rc=$?; if [ $rc -ne %d ]; then echo \"doctest: exit $rc: $BASH_COMMAND\" >&2; exit $rc; fi' ERR\n", s.Exit)
	out, code := p.shell("set -o pipefail\n" + trap + p.subst(s.Text))
	if code != 0 && code != s.Exit {
		p.t.Errorf("%s:%d: %s block exited %d\n%s\noutput:\n%s", p.name, s.Line, what, code, s.Text, out)
	}
}

func (p *page) console(s Step) {
	cmds, err := Commands(s.Text, s.Line)
	if err != nil {
		p.t.Errorf("%s: %v", p.name, err)
		return
	}
	for _, c := range cmds {
		// No pipefail: `gavel ... | head -1` is a fine example, and
		// the output shows what went wrong.
		out, code := p.shell(p.subst(c.Cmd))
		if code != c.Exit || !Match(c.Want, out) {
			p.t.Errorf("%s:%d: $ %s\nexit %d, want %d\ngot:\n%s\nwant:\n%s", p.name, c.Line, c.Cmd, code, c.Exit, out, strings.Join(c.Want, "\n"))
		}
	}
}

// server starts the server of s and stops it, by process id, when the
// page ends.
func (p *page) server(s Step) {
	t := p.t
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	p.ports[s.Port] = port
	var env, args []string
	for _, a := range s.Args {
		if len(args) == 0 && strings.Contains(a, "=") {
			env = append(env, a) // NAME=VALUE before the command
			continue
		}
		args = append(args, p.subst(a))
	}
	if len(args) == 0 {
		t.Fatalf("%s:%d: server directive without a command", p.name, s.Line)
	}
	cmd := exec.Command(filepath.Join(gaveltest.Dir(t), args[0]), args[1:]...)
	cmd.Dir, cmd.Env = p.dir, append(append([]string{}, p.env...), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s:%d: start %s: %v", p.name, s.Line, args[0], err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			t.Fatalf("%s:%d: %s exited before accepting connections:\n%s", p.name, s.Line, args[0], out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s:%d: %s does not accept connections on 127.0.0.1:%s after 30s", p.name, s.Line, args[0], port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestParse(t *testing.T) {
	page := "text\n<!-- doctest: skip needs a GPU -->\n```sh\nnvidia-smi\n```\n" +
		"<!-- doctest: setup\ngavel gen --out a.jsonl\n-->\n" +
		"<!-- doctest: exit 3 -->\n  ```sh\n  gavel grade a.jsonl\n  ```\n" +
		"```yaml\nnot: run\n```\n" +
		"<!-- doctest: server 8080 gavel serve --addr 127.0.0.1:8080 -->\n" +
		"```console\n$ gavel x \\\n  --y\nout\n...\n[exit 2]\n$ true\n```\n"
	steps, err := Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{Kind: Script, Line: 3, Text: "nvidia-smi\n", Skip: "needs a GPU"},
		{Kind: Setup, Line: 6, Text: "gavel gen --out a.jsonl\n"},
		{Kind: Script, Line: 10, Text: "gavel grade a.jsonl\n", Exit: 3},
		{Kind: Server, Line: 16, Port: "8080", Args: []string{"gavel", "serve", "--addr", "127.0.0.1:8080"}},
		{Kind: Console, Line: 17, Text: "$ gavel x \\\n  --y\nout\n...\n[exit 2]\n$ true\n"},
	}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Fatalf("Parse =\n%v\nwant\n%v", steps, want)
	}
	cmds, err := Commands(steps[4].Text, steps[4].Line)
	if err != nil {
		t.Fatal(err)
	}
	wantCmds := []Command{{Line: 18, Cmd: "gavel x \\\n  --y", Want: []string{"out", "..."}, Exit: 2}, {Line: 23, Cmd: "true"}}
	if fmt.Sprint(cmds) != fmt.Sprint(wantCmds) {
		t.Fatalf("Commands =\n%v\nwant\n%v", cmds, wantCmds)
	}
	for _, bad := range []string{
		"<!-- doctest: skip -->\n```sh\nx\n```\n",
		"<!-- doctest: frob -->\n",
		"<!-- doctest: skip why -->\n",
		"<!-- doctest: skip why -->\n```yaml\nx\n```\n",
		"```\n$ gavel grade x\n```\n",
		"```\ngavel grade x\n```\n",
		"<!-- doctest: setup\nx\n",
		"<!-- doctest: exit 3 -->\n```console\n$ x\n```\n",
		"```sh\nx\n",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = nil error, want one", bad)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		name string
		want []string
		got  string
		ok   bool
	}{
		{"equal", []string{"a", "b"}, "a\nb\n", true},
		{"a line differs", []string{"a", "b"}, "a\nc\n", false},
		{"an extra line", []string{"a"}, "a\nb\n", false},
		{"a missing line", []string{"a", "b"}, "a\n", false},
		{"nothing wanted, something printed", nil, "x\n", false},
		{"nothing wanted, nothing printed", nil, "", true},
		{"dots for lines", []string{"a", "...", "d"}, "a\nb\nc\nd\n", true},
		{"dots for no line", []string{"a", "...", "d"}, "a\nd\n", true},
		{"dots then a missing line", []string{"a", "...", "e"}, "a\nb\nd\n", false},
		{"dots in a line", []string{"graded 4 rollouts in ..., ... rollouts/s"}, "graded 4 rollouts in 0.1s, 39 rollouts/s\n", true},
		{"dots in a line, text differs", []string{"graded 4 rollouts in ...s"}, "graded 5 rollouts in 0.1s\n", false},
		{"dots at the end", []string{"ok..."}, "ok: 3\n", true},
		{"trailing spaces", []string{"a  "}, "a\n\n", true},
	}
	for _, tt := range tests {
		if got := Match(tt.want, tt.got); got != tt.ok {
			t.Errorf("%s: Match(%q, %q) = %v, want %v", tt.name, tt.want, tt.got, got, tt.ok)
		}
	}
}
