// Package doctest reads the shell examples of the project's Markdown pages
// so that a test can run them: every fenced block labelled sh, bash, shell
// or console, with the directives written before it in HTML comments.
//
// A page is run from top to bottom in one temporary directory, so files
// carry over from block to block (shell variables do not: each block, and
// each command of a console block, runs in a shell of its own).
//
//   - An `sh` block is a script run with `set -o pipefail` that stops at
//     the first command exiting other than 0, or than the status a
//     `<!-- doctest: exit N -->` before it allows (3 for a grade whose
//     rows have status error).
//   - A `console` block holds commands after `$ ` (a line ending in `\`
//     continues the command) each followed by the output it must print,
//     standard output and standard error together. A line `...` stands for
//     any number of lines, and `...` inside a line for any text; a last
//     line `[exit N]` says the command exits N (0 otherwise).
//   - `<!-- doctest: skip REASON -->` skips the next block; the reason is
//     required and the skipped blocks are listed.
//   - `<!-- doctest: setup` followed by lines of shell and `-->` runs those
//     lines, unseen by readers, at that point of the page.
//   - `<!-- doctest: server PORT [NAME=VALUE...] CMD ARGS... -->` starts CMD (gavel or one
//     of the scripted test servers) with PORT replaced by a free port of
//     127.0.0.1, waits until it accepts connections, and replaces `:PORT`
//     by that port in every later block of the page; the server is stopped
//     by process id when the page ends.
package doctest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Kind is what a block or directive does.
type Kind int

// The kinds of Step.
const (
	Script  Kind = iota // an sh block
	Console             // a console block
	Setup               // a hidden setup script
	Server              // a server to start
)

// Step is one thing a page asks to run, in page order.
type Step struct {
	Kind Kind
	// Line is the 1-based line of the block's opening fence or of the
	// directive.
	Line int
	// Text is the block's content (its indentation removed) or the setup
	// script.
	Text string
	// Exit is the exit status other than 0 the commands of a script may
	// end with.
	Exit int
	// Skip, when set, is why the block is not run.
	Skip string
	// Port and Args describe a server: the port the page names and the
	// command line.
	Port string
	Args []string
}

// Command is one command of a console block and the output it must print.
type Command struct {
	Line int
	Cmd  string
	Want []string
	Exit int
}

var (
	fenceRE     = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([A-Za-z0-9_-]*)")
	directiveRE = regexp.MustCompile(`^\s*<!--\s*doctest:\s*(\S+)\s*(.*?)\s*(-->)?\s*$`)
	exitRE      = regexp.MustCompile(`^\[exit (\d+)\]$`)
)

// shellLangs are the fence labels of blocks that are run.
var shellLangs = map[string]Kind{"sh": Script, "bash": Script, "shell": Script, "console": Console}

// Parse returns the steps of a Markdown page. It refuses a directive it
// does not know, a skip without a reason, a directive that applies to no
// block, and an unlabelled block that looks like shell (its first line
// starts with `$ ` or `gavel `): such a block must say whether it runs.
func Parse(page string) ([]Step, error) {
	lines := strings.Split(page, "\n")
	var steps []Step
	var skip string
	exit, exitSet := 0, false
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := directiveRE.FindStringSubmatch(line); m != nil {
			name, rest, closed := m[1], m[2], m[3] != ""
			switch name {
			case "skip":
				if !closed || rest == "" {
					return nil, fmt.Errorf("line %d: want <!-- doctest: skip REASON -->", i+1)
				}
				skip, pendingLine = rest, i+1
			case "exit":
				n, err := strconv.Atoi(rest)
				if err != nil || !closed {
					return nil, fmt.Errorf("line %d: want <!-- doctest: exit N -->", i+1)
				}
				exit, exitSet, pendingLine = n, true, i+1
			case "server":
				f := strings.Fields(rest)
				if !closed || len(f) < 2 {
					return nil, fmt.Errorf("line %d: want <!-- doctest: server PORT CMD ARGS... -->", i+1)
				}
				steps = append(steps, Step{Kind: Server, Line: i + 1, Port: f[0], Args: f[1:]})
			case "setup":
				if closed {
					return nil, fmt.Errorf("line %d: a setup directive holds lines of shell, then --> on a line of its own", i+1)
				}
				start := i + 1
				var body []string
				for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "-->"; i++ {
					body = append(body, lines[i])
				}
				if i == len(lines) {
					return nil, fmt.Errorf("line %d: setup directive not closed by -->", start)
				}
				steps = append(steps, Step{Kind: Setup, Line: start, Text: strings.Join(body, "\n") + "\n"})
			default:
				return nil, fmt.Errorf("line %d: unknown doctest directive %q", i+1, name)
			}
			continue
		}
		m := fenceRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent, fence, lang := m[1], m[2], m[3]
		start := i + 1
		var body []string
		for i++; i < len(lines); i++ {
			l := lines[i]
			if t := strings.TrimLeft(l, " \t"); strings.HasPrefix(t, fence) && strings.TrimSpace(t[len(fence):]) == "" {
				break
			}
			body = append(body, strings.TrimPrefix(l, indent))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: code block not closed", start)
		}
		kind, run := shellLangs[lang]
		if !run {
			if (skip != "" || exitSet) && pendingLine > 0 {
				return nil, fmt.Errorf("line %d: the doctest directive applies to a block labelled %q, which is not run", pendingLine, lang)
			}
			if lang == "" && len(body) > 0 && (strings.HasPrefix(body[0], "$ ") || strings.HasPrefix(body[0], "gavel ")) {
				return nil, fmt.Errorf("line %d: a block of shell commands must be labelled sh or console", start)
			}
			continue
		}
		if exitSet && kind != Script {
			return nil, fmt.Errorf("line %d: an exit directive applies to sh blocks; a console block writes [exit N] after the output", pendingLine)
		}
		steps = append(steps, Step{Kind: kind, Line: start, Text: strings.Join(body, "\n") + "\n", Exit: exit, Skip: skip})
		skip, exit, exitSet, pendingLine = "", 0, false, 0
	}
	if pendingLine > 0 {
		return nil, fmt.Errorf("line %d: the doctest directive applies to no block", pendingLine)
	}
	return steps, nil
}

// Commands splits a console block, which starts on line first, into its
// commands.
func Commands(text string, first int) ([]Command, error) {
	var cmds []Command
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "$ ") {
			if len(cmds) == 0 {
				return nil, fmt.Errorf("line %d: a console block starts with a command after `$ `", first+1+i)
			}
			c := &cmds[len(cmds)-1]
			c.Want = append(c.Want, l)
			continue
		}
		c := Command{Line: first + 1 + i, Cmd: strings.TrimPrefix(l, "$ ")}
		for strings.HasSuffix(c.Cmd, `\`) && i+1 < len(lines) {
			i++
			c.Cmd += "\n" + lines[i]
		}
		cmds = append(cmds, c)
	}
	for i := range cmds {
		c := &cmds[i]
		for len(c.Want) > 0 && strings.TrimSpace(c.Want[len(c.Want)-1]) == "" {
			c.Want = c.Want[:len(c.Want)-1]
		}
		if n := len(c.Want); n > 0 {
			if m := exitRE.FindStringSubmatch(strings.TrimSpace(c.Want[n-1])); m != nil {
				c.Exit, _ = strconv.Atoi(m[1])
				c.Want = c.Want[:n-1]
			}
		}
	}
	return cmds, nil
}

// Match reports whether the output got matches want, line by line: a want
// line "..." matches any number of lines, and "..." inside a line any
// text. Trailing spaces and trailing empty lines are ignored.
func Match(want []string, got string) bool {
	g := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if strings.TrimSpace(got) == "" {
		g = nil
	}
	for i := range g {
		g[i] = strings.TrimRight(g[i], " \t\r")
	}
	w := make([]string, len(want))
	for i := range want {
		w[i] = strings.TrimRight(want[i], " \t\r")
	}
	return matchLines(w, g)
}

func matchLines(w, g []string) bool {
	for len(w) > 0 {
		if w[0] == "..." {
			for k := 0; k <= len(g); k++ {
				if matchLines(w[1:], g[k:]) {
					return true
				}
			}
			return false
		}
		if len(g) == 0 || !matchLine(w[0], g[0]) {
			return false
		}
		w, g = w[1:], g[1:]
	}
	return len(g) == 0
}

// matchLine matches one line with "..." standing for any text.
func matchLine(w, g string) bool {
	parts := strings.Split(w, "...")
	if len(parts) == 1 {
		return w == g
	}
	if !strings.HasPrefix(g, parts[0]) {
		return false
	}
	g = g[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(g, p)
		if i < 0 {
			return false
		}
		g = g[i+len(p):]
	}
	return len(g) >= len(last) && strings.HasSuffix(g, last)
}
