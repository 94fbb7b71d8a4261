package judge

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// The verdict cache is a directory of append-only logs named
// verdicts-N.log. Each log starts with cacheMagic and holds records
//
//	length uint32 LE | crc32c(payload) uint32 LE | payload
//
// where payload is the 32-byte key followed by the verdict as JSON.
//
// Invariants and choices:
//   - A process appends only to a log it holds an exclusive flock on, so two
//     processes never append to one file; a process that finds every log
//     locked creates a new one. It reads every other log too, up to its last
//     valid record.
//   - Opening a log it can lock, a process reads records until the first
//     short, oversized or checksum-failing one and truncates the file there:
//     a torn tail (a process killed mid-write) never stays, and the records
//     before it are intact. A log locked by a live process is only read, never
//     truncated.
//   - Records are written with one write(2) each (no user-space buffer), so
//     a crash of the process loses nothing written; Sync (and Close) fsync,
//     so a machine crash loses at most the records since the last Sync.
//   - Logs are never rewritten or compacted; a key written twice keeps its
//     last value.
//
// Rejected: one log shared under a lock taken per append (a process opening
// it could not truncate a torn tail while another appends), and a database
// (a dependency, for a map and a file).
const cacheMagic = "GVJUDGE1"

// maxRecord bounds a record's payload; a longer length is a torn or corrupt
// header.
const maxRecord = 16 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// cache is the verdict cache of a directory.
type cache struct {
	mu  sync.RWMutex
	m   map[Key]Verdict
	w   *os.File // the log this process appends to, flocked
	err error    // the first write error; later puts return it
}

// openCache opens (creating it if needed) the cache in dir.
func openCache(dir string) (*cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("judge cache: %w", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "verdicts-*.log"))
	if err != nil {
		return nil, fmt.Errorf("judge cache: %w", err)
	}
	sort.Strings(names)
	c := &cache{m: make(map[Key]Verdict)}
	for _, name := range names {
		if err := c.load(name); err != nil {
			c.close()
			return nil, err
		}
	}
	for n := len(names); c.w == nil; n++ {
		name := filepath.Join(dir, fmt.Sprintf("verdicts-%d.log", n))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("judge cache: %w", err)
		}
		if locked, err := tryLock(f); err != nil || !locked {
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("judge cache: lock %s: %w", name, err)
			}
			continue
		}
		if _, err := f.Write([]byte(cacheMagic)); err != nil {
			f.Close()
			return nil, fmt.Errorf("judge cache: %w", err)
		}
		// The new log's directory entry must survive a crash as its
		// records do: sync the directory once, now.
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, fmt.Errorf("judge cache: %w", err)
		}
		c.w = f
	}
	return c, nil
}

// syncDir makes the entries of directory dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cErr := d.Close(); err == nil {
		err = cErr
	}
	return err
}

// load reads the valid records of one log. A log it can lock has its torn
// tail truncated and becomes the write log if there is none yet.
func (c *cache) load(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("judge cache: %w", err)
	}
	locked, err := tryLock(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("judge cache: lock %s: %w", name, err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("judge cache: read %s: %w", name, err)
	}
	if len(b) < len(cacheMagic) && strings.HasPrefix(cacheMagic, string(b)) {
		b = nil // a log torn before its header was written: start it again
	} else if !strings.HasPrefix(string(b), cacheMagic) {
		f.Close() // not a log of this version; leave it alone
		return nil
	} else {
		b = b[len(cacheMagic):]
	}
	valid := len(cacheMagic) + c.records(b)
	if !locked {
		return f.Close()
	}
	if len(b) == 0 {
		valid = 0
	}
	if err := f.Truncate(int64(valid)); err != nil {
		f.Close()
		return fmt.Errorf("judge cache: truncate %s: %w", name, err)
	}
	if valid == 0 {
		if _, err := f.WriteAt([]byte(cacheMagic), 0); err != nil {
			f.Close()
			return fmt.Errorf("judge cache: %w", err)
		}
		valid = len(cacheMagic)
	}
	if c.w != nil {
		return f.Close()
	}
	if _, err := f.Seek(int64(valid), io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("judge cache: %w", err)
	}
	c.w = f
	return nil
}

// records adds the valid records at the start of b to the map and returns
// their length in bytes.
func (c *cache) records(b []byte) int {
	off := 0
	for len(b)-off >= 8 {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		sum := binary.LittleEndian.Uint32(b[off+4:])
		if n < len(Key{}) || n > maxRecord || n > len(b)-off-8 {
			break
		}
		payload := b[off+8 : off+8+n]
		if crc32.Checksum(payload, crcTable) != sum {
			break
		}
		var v Verdict
		if err := json.Unmarshal(payload[len(Key{}):], &v); err != nil {
			break
		}
		c.m[Key(payload[:len(Key{})])] = v
		off += 8 + n
	}
	return off
}

// get returns the cached verdict for k.
func (c *cache) get(k Key) (Verdict, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

// put records v for k in memory and appends it to the log.
func (c *cache) put(k Key, v Verdict) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	rec := make([]byte, 8, 8+len(k)+len(js))
	rec = append(append(rec, k[:]...), js...)
	binary.LittleEndian.PutUint32(rec, uint32(len(rec)-8))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(rec[8:], crcTable))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = v
	if c.err != nil {
		return c.err
	}
	if _, err := c.w.Write(rec); err != nil {
		c.err = fmt.Errorf("judge cache: write %s: %w", c.w.Name(), err)
	}
	return c.err
}

// sync makes the appended records durable.
func (c *cache) sync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil || c.err != nil {
		return c.err
	}
	if err := c.w.Sync(); err != nil {
		// Sticky: after a failed fsync the kernel may have dropped the
		// dirty pages, and a retried fsync could report success.
		c.err = fmt.Errorf("judge cache: sync %s: %w", c.w.Name(), err)
	}
	return c.err
}

// close syncs and closes the write log, which releases its lock.
func (c *cache) close() error {
	err := c.sync()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w != nil {
		if cerr := c.w.Close(); err == nil {
			err = cerr
		}
		c.w = nil
		if c.err == nil {
			c.err = errors.New("judge cache: closed")
		}
	}
	return err
}
