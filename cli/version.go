package cli

import (
	"runtime/debug"
	"strings"
)

// baseVersion is gavel's version, its one source in the tree: the binary
// prints it (gavel --version) and writes it into manifests, and the
// Python package takes its version from the binary it packs
// (python/hatch_build.py). A release commit sets it to the release
// ("0.2.0"); between releases it is the next release's "-dev" version,
// to which a build appends the commit it was built from (version).
const baseVersion = "0.2.0-dev"

// version is gavel's version as this binary reports it.
var version = fullVersion(baseVersion, debug.ReadBuildInfo)

// fullVersion returns base, and for a development version (base ends in
// -dev) base+gREVISION, the first 7 hex digits of the commit that the
// build's version control stamp names, with .dirty when the tree had
// uncommitted changes: 0.2.0-dev+g1a2b3c4. A build without a stamp (go
// test, -buildvcs=false, a tree that is no checkout) reports base alone.
func fullVersion(base string, readBuildInfo func() (*debug.BuildInfo, bool)) string {
	if !strings.HasSuffix(base, "-dev") {
		return base
	}
	bi, ok := readBuildInfo()
	if !ok {
		return base
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return base
	}
	v := base + "+g" + rev[:min(7, len(rev))]
	if dirty {
		v += ".dirty"
	}
	return v
}
