package gaveltest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestBuildOnce builds a small command from many goroutines at once: one
// build, one path, in Dir, removed by Cleanup.
func TestBuildOnce(t *testing.T) {
	pkg := Module + "/internal/cmd/fakejudge"
	paths := make([]string, 4)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() { paths[i] = Build(t, pkg, Options{}) })
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("built at %s and %s, want one path", paths[0], p)
		}
	}
	if want := filepath.Join(Dir(t), "fakejudge"); paths[0] != want {
		t.Errorf("built at %s, want %s", paths[0], want)
	}
	fi, err := os.Stat(paths[0])
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("built command: %v, mode %v", err, fi.Mode())
	}
	dir := Dir(t)
	Cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after Cleanup, %s: %v, want it removed", dir, err)
	}
	// A build after Cleanup makes a new directory.
	if p := Build(t, pkg, Options{}); filepath.Dir(p) == dir {
		t.Errorf("built into the removed %s", dir)
	}
	Cleanup()
}
