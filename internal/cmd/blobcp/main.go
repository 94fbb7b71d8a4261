// Command blobcp copies a directory tree to or from object storage, and
// lists a prefix, through the same drivers and code as gavel's inputs and
// --out URLs (internal/store): the tests and scripts that run gavel on an
// S3 server or an emulator use it to upload inputs and download results.
//
//	blobcp DIR URL     uploads every file under DIR to the prefix URL
//	blobcp URL DIR     downloads every object under the prefix URL into DIR
//	blobcp -l URL      prints "KEY SIZE MODTIME" for every object under URL,
//	                   the key relative to URL, in key order
//
// A URL is a prefix: "s3://bucket/results" holds the object
// "results/summary.json" as the file "summary.json".
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gavelhq/gavel/internal/store"

	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob"
)

func main() {
	list := flag.Bool("l", false, "list the objects under `URL`")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after `D`")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: blobcp DIR URL | blobcp URL DIR | blobcp -l URL")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var err error
	switch {
	case *list && flag.NArg() == 1:
		err = ls(ctx, flag.Arg(0), os.Stdout)
	case !*list && flag.NArg() == 2 && store.IsURL(flag.Arg(1)):
		err = upload(ctx, flag.Arg(0), flag.Arg(1))
	case !*list && flag.NArg() == 2 && store.IsURL(flag.Arg(0)):
		err = download(ctx, flag.Arg(0), flag.Arg(1))
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "blobcp:", err)
		os.Exit(1)
	}
}

// open opens the prefix URL raw; the returned prefix is its key, ending
// in "/" unless empty.
func open(ctx context.Context, raw string) (*store.Location, string, error) {
	loc, err := store.Open(ctx, raw)
	if err != nil {
		return nil, "", err
	}
	prefix := loc.Key
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return loc, prefix, nil
}

func ls(ctx context.Context, raw string, w io.Writer) error {
	loc, prefix, err := open(ctx, raw)
	if err != nil {
		return err
	}
	defer loc.Close()
	objs, err := loc.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, o := range objs {
		fmt.Fprintf(w, "%s %d %s\n", strings.TrimPrefix(o.Key, prefix), o.Size, o.ModTime.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

func upload(ctx context.Context, dir, raw string) error {
	loc, prefix, err := open(ctx, raw)
	if err != nil {
		return err
	}
	defer loc.Close()
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return loc.Upload(ctx, prefix+filepath.ToSlash(rel), f)
	})
}

func download(ctx context.Context, raw, dir string) error {
	loc, prefix, err := open(ctx, raw)
	if err != nil {
		return err
	}
	defer loc.Close()
	objs, err := loc.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, prefix)
		if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains("/"+rel+"/", "/../") {
			return fmt.Errorf("%s: refusing to download the key %q", loc.Name(o.Key), o.Key)
		}
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = loc.Download(ctx, o.Key, f)
		if cErr := f.Close(); err == nil {
			err = cErr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
