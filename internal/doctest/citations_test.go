package doctest

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// spec is the name of a document that lies outside the repository, spelt
// in pieces so that this file does not cite it.
const spec = "SP" + "EC"

// outsideCitation matches a citation of that document: its file name, one
// of its sections ("<name> 4.3", "<name> section 6", "<name> §5"), its
// possessive ("the <name>'s example"), "the <name>" itself, "the spec's
// VER-00n", and the name of the set of outside documents it belonged to.
// The name is matched in capitals only: a spec file, package spec and
// Go's Spec are the repository's own. The rules belong in the code's
// comments or in docs/.
var outsideCitation = regexp.MustCompile(`\b` + spec + `(\.md\b| (section |§ ?)?[0-9]|'s\b)` +
	`|\bthe ` + spec + `\b` +
	`|(?i:shared ` + `documents)` +
	`|(?i:the spec's VER-[0-9])`)

// TestNoOutsideCitations fails on every line of the repository's text
// files that sends its reader to a document outside the repository.
func TestNoOutsideCitations(t *testing.T) {
	files := repoFiles(t)
	if len(files) == 0 {
		t.Fatal("no files found in the repository")
	}
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the working tree
			}
			t.Fatal(err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, len(data)+1)
		for n := 1; sc.Scan(); n++ {
			if m := outsideCitation.FindString(sc.Text()); m != "" {
				t.Errorf("%s:%d: %q cites a document outside the repository; state the rule, or link to docs/: %s",
					name, n, m, strings.TrimSpace(sc.Text()))
			}
		}
	}
}

// TestOutsideCitationCatches: the pattern finds the citations it is for,
// and leaves alone the words that only look like them.
func TestOutsideCitationCatches(t *testing.T) {
	for _, line := range []string{
		"// Check statuses (" + spec + " 4.2).",
		"// columns of " + spec + " section 6",
		"see " + spec + ".md",
		"as " + spec + " §5 has it",
		"// 507500: the " + spec + "'s example total.",
		"a column the " + spec + " never allows to be null",
		"as the Shared " + "Documents say",
		"the spec's " + "VER-002",
	} {
		if !outsideCitation.MatchString(line) {
			t.Errorf("not caught: %s", line)
		}
	}
	for _, line := range []string{
		`gavel spec check ` + spec + `; gavel grade --allow-impure ...`,
		`TURNS_` + spec + ` = """verifiers:`,
		`    spec.write_text(` + spec + `)`,
		`# run NAME ` + spec + `: grades the chats`,
		"the spec file's directory",
		"the spec's remote.token_env names the variable",
		"type Spec struct",
		"two Values of shared Docs",
	} {
		if outsideCitation.MatchString(line) {
			t.Errorf("caught, but not a citation: %s", line)
		}
	}
}

// repoFiles returns the repository's files, relative to root with
// slashes: those git tracks and those it would add (not ignored), or,
// without git, every file of the tree but for build outputs and
// dependencies.
func repoFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" && !skipped(f) {
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "__pycache__", ".venv":
				return filepath.SkipDir
			}
			if rel == "bin" || rel == "dist" || skipped(rel+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && !skipped(rel) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// skipped reports whether a path is left out of the search: fuzz corpora,
// whose inputs are data, not text for a reader.
func skipped(rel string) bool {
	return strings.Contains("/"+rel, "/testdata/fuzz/")
}
