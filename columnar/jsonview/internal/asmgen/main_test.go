package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedFiles checks that the assembly and the stubs committed in
// jsonview's directory are what the generator writes.
func TestCommittedFiles(t *testing.T) {
	asm, stub, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{asmFile: asm, stubFile: stub} {
		got, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the generator writes: run go generate in columnar/jsonview", name)
		}
	}
}
