package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/s3test"
	"github.com/gavelhq/gavel/internal/store"
)

// startS3 starts an S3 server on 127.0.0.1 with the bucket "gavel" and
// points the AWS SDK of this process and of the gavel processes it starts
// at it, through the standard variables with dummy keys.
func startS3(t *testing.T) *s3test.Server { return s3test.StartTest(t, "gavel") }

// listObjects returns the objects under the prefix URL raw, by key
// relative to it, with the times the server stored them.
func listObjects(t *testing.T, raw string) map[string]time.Time {
	t.Helper()
	ctx := context.Background()
	loc, err := store.Open(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer loc.Close()
	prefix := strings.TrimSuffix(loc.Key, "/") + "/"
	objs, err := loc.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, o := range objs {
		out[strings.TrimPrefix(o.Key, prefix)] = o.ModTime
	}
	return out
}

// downloadAll copies every object under the prefix URL raw into a new
// local directory.
func downloadAll(t *testing.T, raw string) string {
	t.Helper()
	ctx := context.Background()
	loc, err := store.Open(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer loc.Close()
	dir := t.TempDir()
	prefix := strings.TrimSuffix(loc.Key, "/") + "/"
	objs, err := loc.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		path := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(o.Key, prefix)))
		os.MkdirAll(filepath.Dir(path), 0o755)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		err = loc.Download(ctx, o.Key, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// rewardParts returns the rewards parts among objects.
func rewardParts(objects map[string]time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for k, v := range objects {
		if strings.HasPrefix(k, "rewards/part-") {
			out[k] = v
		}
	}
	return out
}

// TestS3ResumeAfterKill grades rollouts read from an S3 server into
// results on it, kills the run (SIGKILL) twice once parts are uploaded,
// and resumes: the parts uploaded before each kill are kept (the resumed
// run finds them by listing the bucket and uploads none of them again),
// and the final results equal those of an uninterrupted run byte for
// byte, the timing fields of summary.json aside.
func TestS3ResumeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("grades 60,000 rollouts twice")
	}
	srv := startS3(t)
	root := t.TempDir()
	in := filepath.Join(root, "in")
	genFiles(t, in, 2, 5000, 6, 500)
	entries, _ := os.ReadDir(in)
	for _, e := range entries {
		if err := srv.Put("gavel", "in/"+e.Name(), filepath.Join(in, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	args := func(out string, resume bool) []string {
		a := []string{"grade", "--quiet", "--workers", "2", "--out", out, "s3://gavel/in/"}
		if resume {
			a = append(a[:1], append([]string{"--resume"}, a[1:]...)...)
		}
		return a
	}

	cmd, stderr := gavelCmd(t, root, args("s3://gavel/ref", false)...)
	if code := exitCodeOf(cmd.Run()); code != 3 {
		t.Fatalf("uninterrupted run: exit %d, want 3 (the data has bad rows)\n%s", code, stderr)
	}
	total := len(rewardParts(listObjects(t, "s3://gavel/ref")))

	const out = "s3://gavel/run"
	for i, stopAt := range []int{1, total / 2} {
		cmd, stderr := gavelCmd(t, root, args(out, i > 0)...)
		before := rewardParts(listObjects(t, out))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		deadline := time.Now().Add(2 * time.Minute)
	wait:
		for {
			select {
			case err := <-exited:
				t.Fatalf("kill %d: the run ended before %d parts: %v\n%s", i, stopAt, err, stderr)
			case <-time.After(5 * time.Millisecond):
			}
			if len(rewardParts(listObjects(t, out))) >= stopAt {
				break wait
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("kill %d: no progress", i)
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		objects := listObjects(t, out)
		if _, ok := objects["_SUCCESS"]; ok {
			t.Fatalf("kill %d: _SUCCESS after an interrupted run", i)
		}
		parts := rewardParts(objects)
		if len(parts) >= total {
			t.Fatalf("kill %d: the run had uploaded all %d parts", i, total)
		}
		keptParts(t, before, parts)
		t.Logf("kill %d: %d of %d parts uploaded", i, len(parts), total)
	}
	before := rewardParts(listObjects(t, out))
	cmd, stderr = gavelCmd(t, root, args(out, true)...)
	if code := exitCodeOf(cmd.Run()); code != 3 {
		t.Fatalf("final resume: exit %d, want 3\n%s", code, stderr)
	}
	after := rewardParts(listObjects(t, out))
	keptParts(t, before, after)
	if len(after) != total {
		t.Errorf("%d parts after the resume, want %d", len(after), total)
	}
	compareOutputs(t, downloadAll(t, "s3://gavel/ref"), downloadAll(t, out))
}

// keptParts fails the test if a part listed before a resumed run is gone
// or was uploaded again after.
func keptParts(t *testing.T, before, after map[string]time.Time) {
	t.Helper()
	for k, was := range before {
		now, ok := after[k]
		switch {
		case !ok:
			t.Errorf("%s: deleted by the resumed run", k)
		case !now.Equal(was):
			t.Errorf("%s: uploaded again by the resumed run (stored at %v, then at %v)", k, was, now)
		}
	}
}
