package cli

import (
	"context"
	"os"
	"strings"

	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/results"
)

// localResults returns a local directory holding the results at dir: dir
// itself, or for an object storage URL a temporary copy of its manifest,
// summary and parts, which done removes.
func localResults(dir string) (local string, done func(), err error) {
	if !store.IsURL(dir) {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "gavel-results-")
	if err != nil {
		return "", nil, err
	}
	if err := results.FetchResults(context.Background(), dir, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// renamed replaces the temporary directory local in msg by the URL's
// redacted name.
func renamed(msg, local, dir string) string {
	if local == dir {
		return msg
	}
	return strings.ReplaceAll(msg, local, store.Redact(dir))
}
