package harness

import (
	"encoding/binary"
	"io"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// First returns the first trajectory of the file that could be mapped, as
// OpenFile and Next read it, or nil when there is none (or the file
// cannot be read that far); the error is OpenFile's. The file is left
// open. Of an .eval archive it reads the zip directory in place, without
// building an entry for every sample, when the archive is a plain one;
// other archives are opened whole.
func First(path string, file File, f Format) ([]byte, error) {
	if f == Inspect && IsEvalArchive(path) {
		if st, err := file.Stat(); err == nil {
			if b, ok := firstEval(path, newReadAhead(file, 64<<10), st.Size()); ok {
				return b, nil
			}
		}
	}
	r, err := OpenFile(path, file, f)
	if err != nil {
		return nil, err
	}
	for {
		it, err := r.Next()
		if err != nil {
			return nil, nil
		}
		if it.Err == nil {
			return it.Rollout, nil
		}
	}
}

// Zip record signatures and sizes (APPNOTE.TXT).
const (
	sigDirEnd      = 0x06054b50
	sigDirEnd64    = 0x06064b50
	sigDirEnd64Loc = 0x07064b50
	sigDirEntry    = 0x02014b50
	dirEndLen      = 22
	dirEnd64LocLen = 20
	dirEnd64Len    = 56
	dirEntryLen    = 46
	max32          = 0xffffffff
)

// scanDir reads the zip directory of an archive of size bytes in place:
// its entries, in order. ok is false, and archive/zip is to read it,
// unless the directory ends the file (no archive comment, nothing
// prepended) and its entries need no Zip64 fields, for any name that
// archive/zip could find insecure, and for any error.
func scanDir(ra io.ReaderAt, size int64) (entries []member, ok bool) {
	var end [dirEndLen]byte
	if size < dirEndLen {
		return nil, false
	}
	endOff := size - dirEndLen
	if k, _ := ra.ReadAt(end[:], endOff); k < len(end) || le32(end[:]) != sigDirEnd || le16(end[20:]) != 0 {
		return nil, false
	}
	count, dirSize, dirOff := uint64(le16(end[10:])), uint64(le32(end[12:])), uint64(le32(end[16:]))
	if count == 0xffff || dirSize == max32 || dirOff == max32 {
		var loc [dirEnd64LocLen]byte
		if endOff < dirEnd64LocLen {
			return nil, false
		}
		if k, _ := ra.ReadAt(loc[:], endOff-dirEnd64LocLen); k < len(loc) || le32(loc[:]) != sigDirEnd64Loc {
			return nil, false
		}
		endOff = int64(binary.LittleEndian.Uint64(loc[8:]))
		var end64 [dirEnd64Len]byte
		if endOff < 0 || endOff > size-dirEnd64Len {
			return nil, false
		}
		if k, _ := ra.ReadAt(end64[:], endOff); k < len(end64) || le32(end64[:]) != sigDirEnd64 {
			return nil, false
		}
		count = binary.LittleEndian.Uint64(end64[32:])
		dirSize = binary.LittleEndian.Uint64(end64[40:])
		dirOff = binary.LittleEndian.Uint64(end64[48:])
	}
	if dirOff > uint64(endOff) || dirSize != uint64(endOff)-dirOff || count > dirSize/dirEntryLen {
		return nil, false
	}
	raw := make([]byte, dirSize)
	if k, _ := ra.ReadAt(raw, int64(dirOff)); k < len(raw) {
		return nil, false
	}
	dir := string(raw) // one string: the names are parts of it
	raw = nil
	entries = make([]member, 0, count)
	for p := 0; p < len(dir); {
		e := dir[p:]
		if len(e) < dirEntryLen || le32s(e) != sigDirEntry {
			return nil, false
		}
		nameLen, extraLen, commentLen := int(le16s(e[28:])), int(le16s(e[30:])), int(le16s(e[32:]))
		next := p + dirEntryLen + nameLen + extraLen + commentLen
		if next > len(dir) {
			return nil, false
		}
		x := member{
			name:   e[dirEntryLen : dirEntryLen+nameLen],
			method: le16s(e[10:]), flags: le16s(e[8:]), crc: le32s(e[16:]),
			csize: uint64(le32s(e[20:])), size: uint64(le32s(e[24:])), headerOffset: int64(le32s(e[42:])),
			idx: len(entries),
		}
		if x.csize == max32 || x.size == max32 || x.headerOffset == max32 ||
			strings.Contains(x.name, "..") || strings.ContainsRune(x.name, '\\') || strings.HasPrefix(x.name, "/") {
			return nil, false
		}
		entries = append(entries, x)
		p = next
	}
	if uint64(len(entries)) != count {
		return nil, false
	}
	return entries, true
}

// firstEval is First of an .eval archive of size bytes whose directory
// scanDir reads, and whose first sample (in the order NewEvalReader reads
// them) maps without error. ok is false for any other, and for any
// error: NewEvalReader then reads it, and says what is wrong.
func firstEval(name string, ra io.ReaderAt, size int64) (rollout []byte, ok bool) {
	entries, ok := scanDir(ra, size)
	if !ok {
		return nil, false
	}
	var header, start, sample *member
	for i := range entries {
		e := &entries[i]
		switch {
		case e.name == "header.json":
			header = e
		case e.name == "_journal/start.json":
			start = e
		case sample == nil && strings.HasPrefix(e.name, "samples/") && strings.HasSuffix(e.name, ".json"):
			sample = e
		}
	}
	if sample == nil {
		return nil, false
	}
	// A sample written again is read where it was last written.
	for _, e := range entries[sample.idx+1:] {
		if e.name == sample.name {
			return nil, false
		}
	}
	if header == nil {
		header = start
	}
	if header == nil {
		return nil, false
	}
	m := memberReader{ra: ra}
	r := &Reader{name: name, format: Inspect}
	var hdr evalHeader
	data, ok := m.readMember(header, nil)
	if !ok {
		return nil, false
	}
	root, err := r.doc.Parse(data)
	if err != nil || root.Get("eval").Kind() != jsonview.Object {
		return nil, false
	}
	hdr.read(root.Get("eval"))
	if data, ok = m.readMember(sample, data); !ok {
		return nil, false
	}
	if root, err = r.doc.Parse(skipBOMBytes(data)); err != nil {
		return nil, false
	}
	it := r.inspectSample(&hdr, root, sampleWhere(sample.name))
	if it.Err != nil {
		return nil, false
	}
	return it.Rollout, true
}

// readMember reads e whole into buf, in the common case only.
func (m *memberReader) readMember(e *member, buf []byte) ([]byte, bool) {
	body, ok := m.bodyOffset(e)
	if !ok {
		return buf, false
	}
	return m.fast(e, body, buf)
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

func le16s(s string) uint16 { return uint16(s[0]) | uint16(s[1])<<8 }
func le32s(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
