package harness

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"
)

// archive writes a zip archive of the named members with method, the
// contents of member i being body(i).
func archive(t *testing.T, method uint16, names []string, body func(int) string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zipZstd, zstd.ZipCompressor())
	for i, name := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body(i))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// evalBody is a header for member 0 and samples after it.
func evalBody(i int) string {
	if i == 0 {
		return inspectHeader + "}"
	}
	return inspectSample(i)
}

// TestMemberFast checks that members of each method are read in place
// (not by archive/zip) with the bytes archive/zip reads, and that a
// member whose checksum is wrong is left to archive/zip.
func TestMemberFast(t *testing.T) {
	names := []string{"header.json", "samples/1_epoch_1.json", "samples/q-2_epoch_1.json", "empty.json"}
	body := func(i int) string {
		if i == 3 {
			return ""
		}
		return evalBody(i)
	}
	run, err := os.ReadFile(filepath.Join("testdata", "inspect", "run.eval"))
	if err != nil {
		t.Fatal(err)
	}
	archives := map[string][]byte{
		"deflate, data descriptors": archive(t, zip.Deflate, names, body),
		"stored, data descriptors":  archive(t, zip.Store, names, body),
		"zstd, data descriptors":    archive(t, zipZstd, names, body),
		"deflate, no descriptors":   run,
	}
	for name, data := range archives {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		zr.RegisterDecompressor(zipZstd, zstd.ZipDecompressor())
		m := memberReader{ra: newReadAhead(bytes.NewReader(data), 4096)}
		var got []byte
		for _, f := range zr.File {
			want, err := readMember(f, nil)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, f.Name, err)
			}
			body, err := f.DataOffset()
			if err != nil {
				t.Fatal(err)
			}
			e := member{name: f.Name, method: f.Method, flags: f.Flags, crc: f.CRC32, csize: f.CompressedSize64, size: f.UncompressedSize64}
			var ok bool
			if got, ok = m.fast(&e, body, got); !ok || !bytes.Equal(got, want) {
				t.Errorf("%s: %s read in place: ok %v, %d bytes; want ok, the %d of archive/zip", name, f.Name, ok, len(got), len(want))
			}
			e.crc++
			if _, ok := m.fast(&e, body, got); ok {
				t.Errorf("%s: %s with a wrong checksum read in place", name, f.Name)
			}
		}
	}
}

// TestFirst checks that First returns the first rollout Next returns
// without an error, reading the zip directory in place when the archive
// is a plain one and opening it whole otherwise.
func TestFirst(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", "inspect", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	many := make([]string, 70000) // a Zip64 directory: over 65535 entries
	many[0] = "header.json"
	for i := 1; i < len(many); i++ {
		many[i] = fmt.Sprintf("samples/%d_epoch_1.json", i)
	}
	bad := func(i int) string {
		if i == 1 {
			return "{not json"
		}
		return evalBody(i)
	}
	// The Zip64 archive's samples after the first two are short: neither
	// First nor the first Next reads them, and 70,000 full samples took
	// most of the test's time under the race detector.
	short := func(i int) string {
		if i < 3 {
			return evalBody(i)
		}
		return fmt.Sprintf(`{"id":%d,"epoch":1}`, i)
	}
	run := read("run.eval")
	tests := []struct {
		name    string
		data    []byte
		inPlace bool
	}{
		{"run.eval", run, true},
		{"unfinished.eval", read("unfinished.eval"), true},
		{"zip64.eval", archive(t, zip.Store, many, short), true},
		{"zstd.eval", archive(t, zipZstd, many[:5], evalBody), true},
		// the first sample is written again: read where it was last written
		{"rewritten.eval", archive(t, zip.Deflate, []string{"header.json", "samples/1_epoch_1.json", "samples/2_epoch_1.json", "samples/1_epoch_1.json"}, evalBody), false},
		{"bad-first.eval", archive(t, zip.Deflate, many[:4], bad), false},
		{"commented.eval", append(run[:len(run)-2:len(run)-2], 1, 0, 'x'), false},
		{"no-samples.eval", archive(t, zip.Deflate, many[:1], evalBody), false},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path, Inspect)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var want []byte
			for {
				it, err := r.Next()
				if err != nil {
					break
				}
				if it.Err == nil {
					want = bytes.Clone(it.Rollout)
					break
				}
			}
			file, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			got, err := First(path, file, Inspect)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("First = %s, %v; want %s", got, err, want)
			}
			if _, ok := firstEval(path, bytes.NewReader(tt.data), int64(len(tt.data))); ok != tt.inPlace {
				t.Errorf("read in place: %v, want %v", ok, tt.inPlace)
			}
		})
	}
}

// TestEvalDirInPlace checks that NewEvalReader reads a plain archive's
// directory and members in place, without archive/zip, and reads what it
// reads of the same archive with a comment, which is left to archive/zip.
func TestEvalDirInPlace(t *testing.T) {
	run, err := os.ReadFile(filepath.Join("testdata", "inspect", "run.eval"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"header.json", "samples/1_epoch_1.json", "samples/2_epoch_1.json", "samples/1_epoch_1.json", "samples/3_epoch_1.json"}
	archives := map[string][]byte{
		"run.eval":     run,
		"deflate.eval": archive(t, zip.Deflate, names, evalBody),
		"zstd.eval":    archive(t, zipZstd, names, evalBody),
		"stored.eval":  archive(t, zip.Store, names, evalBody),
	}
	readAll := func(data []byte) (items []string, viaZip bool) {
		r, err := NewEvalReader("x.eval", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for {
			it, err := r.Next()
			if err != nil {
				items = append(items, err.Error())
				break
			}
			items = append(items, fmt.Sprintf("%s %v %s", it.Rollout, it.Err, it.Where))
		}
		return items, r.src.(*evalArchive).zr != nil
	}
	for name, data := range archives {
		got, viaZip := readAll(data)
		if viaZip {
			t.Errorf("%s: read through archive/zip", name)
		}
		want, viaZip := readAll(append(data[:len(data)-2:len(data)-2], 1, 0, 'x'))
		if !viaZip {
			t.Errorf("%s with a comment: not read through archive/zip", name)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-archive/zip +in place):\n%s", name, diff)
		}
	}
}
