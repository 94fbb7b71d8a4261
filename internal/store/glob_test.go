package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	_ "gocloud.dev/blob/s3blob"

	"github.com/gavelhq/gavel/internal/s3test"
	"github.com/gavelhq/gavel/internal/store"
)

// globKeys are the objects of the bucket "b" in TestExpandGlob, stored
// out of order.
var globKeys = []string{
	"in/shard-1.jsonl",
	"in/part-10.parquet",
	"in/shard-0.jsonl",
	"in/part-2.parquet",
	"in/shard-2.jsonl",
	"in/shard-10.jsonl",
	"in/sub/shard-3.jsonl",
	"in/sub/deeper/part-4.parquet",
	"in/a*b.jsonl",
	"in/axb.jsonl",
	"input/shard-0.jsonl",
	"other/shard-0.jsonl",
	"in/part-1.parquet",
}

// TestExpandGlob lists glob URLs on an S3 server: each expands to exactly
// the keys path.Match matches, in key order, where "*" and "?" do not
// cross a "/" and nothing outside the glob's directory is listed.
func TestExpandGlob(t *testing.T) {
	srv := s3test.StartTest(t, "b")
	file := filepath.Join(t.TempDir(), "o")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range globKeys {
		if err := srv.Put("b", k, file); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, url string
		want      []string
	}{
		{"star", "s3://b/in/part-*.parquet", []string{"in/part-1.parquet", "in/part-10.parquet", "in/part-2.parquet"}},
		{"star does not cross a slash", "s3://b/in/*.jsonl", []string{"in/a*b.jsonl", "in/axb.jsonl", "in/shard-0.jsonl", "in/shard-1.jsonl", "in/shard-10.jsonl", "in/shard-2.jsonl"}},
		{"star for a directory", "s3://b/in/*/shard-*.jsonl", []string{"in/sub/shard-3.jsonl"}},
		{"question mark", "s3://b/in/shard-?.jsonl", []string{"in/shard-0.jsonl", "in/shard-1.jsonl", "in/shard-2.jsonl"}},
		{"question mark with bucket options", "s3://b/in/shard-?.jsonl?region=us-east-1", []string{"in/shard-0.jsonl", "in/shard-1.jsonl", "in/shard-2.jsonl"}},
		{"question mark escaped in the URL", "s3://b/in/shard-%3F.jsonl", []string{"in/shard-0.jsonl", "in/shard-1.jsonl", "in/shard-2.jsonl"}},
		{"class", "s3://b/in/shard-[01].jsonl", []string{"in/shard-0.jsonl", "in/shard-1.jsonl"}},
		{"negated class", "s3://b/in/shard-[^01].jsonl", []string{"in/shard-2.jsonl"}},
		{"range", "s3://b/in/shard-[0-9]*.jsonl", []string{"in/shard-0.jsonl", "in/shard-1.jsonl", "in/shard-10.jsonl", "in/shard-2.jsonl"}},
		{"escaped star", `s3://b/in/a\*b.jsonl`, []string{"in/a*b.jsonl"}},
		{"glob in a directory", "s3://b/in*/shard-0.jsonl", []string{"in/shard-0.jsonl", "input/shard-0.jsonl"}},
		{"no match", "s3://b/in/shard-?.parquet", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			loc, err := store.Open(ctx, tt.url)
			if err != nil {
				t.Fatal(err)
			}
			defer loc.Close()
			objs, err := loc.Expand(ctx)
			if err != nil {
				t.Fatalf("Expand(%s): %v", tt.url, err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.Key)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Expand(%s) keys (-want +got):\n%s", tt.url, diff)
			}
		})
	}
}

// TestGlobURLNames: the name of a glob URL, in messages and records,
// keeps its "?" wildcards and drops only the bucket options.
func TestGlobURLNames(t *testing.T) {
	tests := []struct{ in, want string }{
		{"s3://b/in/shard-?.jsonl", "s3://b/in/shard-?.jsonl"},
		{"s3://b/in/shard-?.jsonl?region=us-east-1", "s3://b/in/shard-?.jsonl"},
		{"azblob://c/in/?localemu=true&protocol=http&domain=127.0.0.1:10000", "azblob://c/in/"},
		{"https://h/a.parquet?X-Amz-Signature=s", "https://h/a.parquet"},
	}
	for _, tt := range tests {
		if got := store.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
