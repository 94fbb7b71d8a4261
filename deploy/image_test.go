package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImage checks the image make image wrote as an OCI layout to
// $GAVEL_IMAGE_OCI (CI builds it; skipped when unset): its entrypoint is
// the binary, it runs as a user without privileges, and its binary is
// $GAVEL_IMAGE_BINARY (bin/gavel) byte for byte.
func TestImage(t *testing.T) {
	dir := os.Getenv("GAVEL_IMAGE_OCI")
	if dir == "" {
		t.Skip("GAVEL_IMAGE_OCI is not set (make image, then GAVEL_IMAGE_OCI=bin/image.oci GAVEL_IMAGE_BINARY=bin/gavel)")
	}
	want, err := os.ReadFile(os.Getenv("GAVEL_IMAGE_BINARY"))
	if err != nil {
		t.Fatalf("GAVEL_IMAGE_BINARY: %v", err)
	}
	blob := func(digest string) []byte {
		t.Helper()
		algo, hex, _ := strings.Cut(digest, ":")
		data, err := os.ReadFile(filepath.Join(dir, "blobs", algo, hex))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	type descriptor struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
	}
	var index struct{ Manifests []descriptor }
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests; want one", err, len(index.Manifests))
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	var config struct {
		Config struct {
			User       string
			Entrypoint []string
			Cmd        []string
		}
	}
	if err := json.Unmarshal(blob(manifest.Config.Digest), &config); err != nil {
		t.Fatal(err)
	}
	const bin = "/usr/local/bin/gavel"
	if c := config.Config; !slices.Equal(c.Entrypoint, []string{bin}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q; want [%s] and none", c.Entrypoint, c.Cmd, bin)
	}
	if u := config.Config.User; u == "" || u == "0" || strings.HasPrefix(u, "0:") || u == "root" {
		t.Errorf("user %q: want a user without privileges", u)
	}
	var found [][]byte
	for _, l := range manifest.Layers {
		var r io.Reader = bytes.NewReader(blob(l.Digest))
		if strings.HasSuffix(l.MediaType, "gzip") {
			zr, err := gzip.NewReader(r)
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimPrefix(h.Name, "./") == strings.TrimPrefix(bin, "/") {
				data, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				found = append(found, data)
			}
		}
	}
	if len(found) != 1 || !bytes.Equal(found[0], want) {
		t.Errorf("the image holds %d copies of %s; want one, equal to GAVEL_IMAGE_BINARY byte for byte", len(found), bin)
	}
}

// TestManifestsNameTheImage checks that every Kubernetes manifest runs the
// image make image builds: the Makefile's IMAGE_REPO, tag latest.
func TestManifestsNameTheImage(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	repo := ""
	for _, line := range strings.Split(string(mk), "\n") {
		if k, v, ok := strings.Cut(line, "?="); ok && strings.TrimSpace(k) == "IMAGE_REPO" {
			repo = strings.TrimSpace(v)
		}
	}
	if repo == "" {
		t.Fatal("no IMAGE_REPO in the Makefile")
	}
	files, _ := filepath.Glob("kubernetes-*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if img, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok && img != repo+":latest" {
				t.Errorf("%s: image %s, want %s:latest, the image make image builds", f, img, repo)
			}
		}
		if !strings.Contains(string(data), "image: "+repo+":latest") {
			t.Errorf("%s names no image %s:latest", f, repo)
		}
	}
}
