package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// referenceCLI is the command-line reference, generated from the help of
// every command and subcommand.
const referenceCLI = "../docs/reference/cli.md"

// TestReferenceCLI checks that docs/reference/cli.md is the help of every
// command and subcommand, as gavel prints it; GAVEL_UPDATE_DOCS=1 (make
// docs) rewrites it.
func TestReferenceCLI(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# Command-line reference\n\n" +
		"<!-- Generated from gavel's help by `make docs`; do not edit. -->\n\n" +
		"Every command and subcommand of `gavel`, with every flag, its default and\n" +
		"its meaning, as `gavel help COMMAND` prints them. The guides\n" +
		"([Grading and inputs](../grading.md), [Outputs](../outputs.md), ...)\n" +
		"show them at work.\n\n")
	help := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("gavel %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		return stdout
	}
	section := func(title, text string) {
		fmt.Fprintf(&b, "## %s\n\n```text\n%s\n```\n\n", title, strings.TrimRight(text, "\n"))
	}
	section("gavel", help("help"))
	for _, c := range commands() {
		text := help(c.name, "--help")
		section("gavel "+c.name, text)
		for _, sub := range subcommands(text) {
			section("gavel "+c.name+" "+sub, help(c.name, sub, "--help"))
		}
	}
	section("gavel version", help("help", "version"))
	if os.Getenv("GAVEL_UPDATE_DOCS") != "" {
		if err := os.WriteFile(referenceCLI, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(referenceCLI)
	if err != nil || !bytes.Equal(have, b.Bytes()) {
		t.Errorf("%s is not gavel's help (%v): run make docs", filepath.Base(referenceCLI), err)
	}
}

// subcommands returns the names listed under "Subcommands:" in a
// command's help.
func subcommands(help string) []string {
	var subs []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case line == "Subcommands:":
			in = true
		case in && strings.HasPrefix(line, "  ") && len(strings.Fields(line)) > 0:
			subs = append(subs, strings.Fields(line)[0])
		case in:
			return subs
		}
	}
	return subs
}
