package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateLicenses = flag.Bool("update", false, "rewrite THIRD_PARTY_LICENSES.md from the modules the binary links")

// licenseFile is the list of the licenses of the modules linked into the
// binary, at the repository's root.
const licenseFile = "../../THIRD_PARTY_LICENSES.md"

// permissive are the licenses a module linked into gavel may have: each
// lets gavel, Apache-2.0, be distributed as one static binary with it.
var permissive = []string{"Apache-2.0", "MIT", "BSD-3-Clause", "BSD-2-Clause", "ISC"}

// TestThirdPartyLicenses finds the license of every module linked into
// the binary (go list -deps ./cmd/gavel, from its LICENSE file in the
// module cache), fails on a module with none it recognises or one outside
// the permissive ones, and checks THIRD_PARTY_LICENSES.md lists them all
// (go test ./cmd/gavel -run TestThirdPartyLicenses -update rewrites it).
func TestThirdPartyLicenses(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(lines)
	lines = slices.Compact(lines)
	var b bytes.Buffer
	b.WriteString("# Third-party licenses\n\nThe modules linked into the gavel binary (`go list -deps ./cmd/gavel`) and\ntheir licenses, as their LICENSE files say. gavel itself is Apache-2.0\n(LICENSE). `go test ./cmd/gavel -run TestThirdPartyLicenses -update`\nrewrites this file; the test fails on a module whose license is not one of\n" +
		strings.Join(permissive, ", ") + ".\n\n| module | version | license |\n| --- | --- | --- |\n")
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			t.Fatalf("go list line %q", l)
		}
		path, version, dir := f[0], f[1], f[2]
		lic := moduleLicense(dir)
		if lic == "" {
			t.Errorf("%s %s: no license found in %s", path, version, dir)
			continue
		}
		for _, one := range strings.Split(lic, " AND ") {
			if !slices.Contains(permissive, one) {
				t.Errorf("%s %s: license %s is not one gavel may link", path, version, lic)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", path, version, lic)
	}
	if *updateLicenses {
		if err := os.WriteFile(licenseFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(licenseFile)
	if err != nil || !bytes.Equal(have, b.Bytes()) {
		t.Errorf("THIRD_PARTY_LICENSES.md is not the list of the modules linked (%v): go test ./cmd/gavel -run TestThirdPartyLicenses -update", err)
	}
}

// licenseTexts recognise a license by a sentence of its text.
var licenseTexts = []struct {
	id string
	re *regexp.Regexp
}{
	{"Apache-2.0", regexp.MustCompile(`Apache License,?\s+Version 2\.0`)},
	{"MIT", regexp.MustCompile(`Permission is hereby granted, free of charge`)},
	{"BSD-3-Clause", regexp.MustCompile(`(?s)Redistribution and use in source and binary forms.*(Neither the name|names of its\s+contributors may)`)},
	{"BSD-2-Clause", regexp.MustCompile(`Redistribution and use in source and binary forms`)},
	{"ISC", regexp.MustCompile(`Permission to use, copy, modify, and(/or)? distribute this software for any`)},
	{"MPL-2.0", regexp.MustCompile(`Mozilla Public License,? (v\. |Version )2\.0`)},
	{"GPL", regexp.MustCompile(`GNU (Affero |Lesser )?General Public License`)},
}

// moduleLicense returns the licenses the license files at the root of dir
// state, joined with " AND " ("" when none is recognised).
func moduleLicense(dir string) string {
	var found []string
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		base := strings.ToUpper(filepath.Base(f))
		if !strings.HasPrefix(base, "LICENSE") && !strings.HasPrefix(base, "LICENCE") && !strings.HasPrefix(base, "COPYING") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, lt := range licenseTexts {
			if lt.re.Match(data) {
				if !slices.Contains(found, lt.id) {
					found = append(found, lt.id)
				}
				if lt.id == "BSD-3-Clause" {
					break // not BSD-2-Clause too
				}
			}
		}
	}
	slices.Sort(found)
	return strings.Join(found, " AND ")
}
