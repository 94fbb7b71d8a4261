package call

import (
	"encoding/binary"
	"encoding/hex"
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

// A Cache is a directory of append-only logs named PREFIX-N.log (the
// judge's verdicts-N.log, a remote verifier's answers-N.log). Each log
// starts with the cache's magic (8 bytes) and holds records
//
//	length uint32 LE | crc32c(payload) uint32 LE | payload
//
// where payload is the 32-byte key followed by the value as JSON.
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

// maxRecord bounds a record's payload; a longer length is a torn or corrupt
// header.
const maxRecord = 16 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Key identifies a value in a Cache: a sha256 of everything that
// determines it.
type Key [32]byte

// String returns the key in hex.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Cache is a durable map from Key to values of type V (stored as JSON),
// safe for concurrent use. A record that does not decode as a V ends its
// log's valid part, as a torn one does.
type Cache[V any] struct {
	name  string // for messages: "judge cache"
	magic string
	mu    sync.RWMutex
	m     map[Key]V
	w     *os.File // the log this process appends to, flocked
	err   error    // the first write error; later puts return it
}

// Layout names a cache's files and messages.
type Layout struct {
	// Name prefixes error messages ("judge cache").
	Name string
	// Magic is the 8 bytes every log starts with.
	Magic string
	// Prefix names the logs: PREFIX-N.log.
	Prefix string
}

// Open opens (creating it if needed) the cache of layout l in dir.
func Open[V any](dir string, l Layout) (*Cache[V], error) {
	if len(l.Magic) != 8 {
		return nil, fmt.Errorf("%s: magic %q is not 8 bytes", l.Name, l.Magic)
	}
	c := &Cache[V]{name: l.Name, magic: l.Magic, m: make(map[Key]V)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, c.errorf("%w", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, l.Prefix+"-*.log"))
	if err != nil {
		return nil, c.errorf("%w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := c.load(name); err != nil {
			c.Close()
			return nil, err
		}
	}
	for n := len(names); c.w == nil; n++ {
		name := filepath.Join(dir, fmt.Sprintf("%s-%d.log", l.Prefix, n))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, c.errorf("%w", err)
		}
		if locked, err := tryLock(f); err != nil || !locked {
			f.Close()
			if err != nil {
				return nil, c.errorf("lock %s: %w", name, err)
			}
			continue
		}
		if _, err := f.Write([]byte(c.magic)); err != nil {
			f.Close()
			return nil, c.errorf("%w", err)
		}
		// The new log's directory entry must survive a crash as its
		// records do: sync the directory once, now.
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, c.errorf("%w", err)
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
func (c *Cache[V]) load(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return c.errorf("%w", err)
	}
	locked, err := tryLock(f)
	if err != nil {
		f.Close()
		return c.errorf("lock %s: %w", name, err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return c.errorf("read %s: %w", name, err)
	}
	if len(b) < len(c.magic) && strings.HasPrefix(c.magic, string(b)) {
		b = nil // a log torn before its header was written: start it again
	} else if !strings.HasPrefix(string(b), c.magic) {
		f.Close() // not a log of this version; leave it alone
		return nil
	} else {
		b = b[len(c.magic):]
	}
	valid := len(c.magic) + c.records(b)
	if !locked {
		return f.Close()
	}
	if len(b) == 0 {
		valid = 0
	}
	if err := f.Truncate(int64(valid)); err != nil {
		f.Close()
		return c.errorf("truncate %s: %w", name, err)
	}
	if valid == 0 {
		if _, err := f.WriteAt([]byte(c.magic), 0); err != nil {
			f.Close()
			return c.errorf("%w", err)
		}
		valid = len(c.magic)
	}
	if c.w != nil {
		return f.Close()
	}
	if _, err := f.Seek(int64(valid), io.SeekStart); err != nil {
		f.Close()
		return c.errorf("%w", err)
	}
	c.w = f
	return nil
}

// records adds the valid records at the start of b to the map and returns
// their length in bytes.
func (c *Cache[V]) records(b []byte) int {
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
		var v V
		if err := json.Unmarshal(payload[len(Key{}):], &v); err != nil {
			break
		}
		c.m[Key(payload[:len(Key{})])] = v
		off += 8 + n
	}
	return off
}

// Get returns the value cached for k.
func (c *Cache[V]) Get(k Key) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

// Put records v for k in memory and appends it to the log. A write
// error is kept: Put, Sync and Close return it from then on (the value
// stays in memory).
func (c *Cache[V]) Put(k Key, v V) error {
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
		c.err = c.errorf("write %s: %w", c.w.Name(), err)
	}
	return c.err
}

// Sync makes the appended records durable.
func (c *Cache[V]) Sync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil || c.err != nil {
		return c.err
	}
	if err := c.w.Sync(); err != nil {
		// Sticky: after a failed fsync the kernel may have dropped the
		// dirty pages, and a retried fsync could report success.
		c.err = c.errorf("sync %s: %w", c.w.Name(), err)
	}
	return c.err
}

// Close syncs and closes the write log, which releases its lock.
func (c *Cache[V]) Close() error {
	err := c.Sync()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w != nil {
		if cerr := c.w.Close(); err == nil {
			err = cerr
		}
		c.w = nil
		if c.err == nil {
			c.err = errors.New(c.name + ": closed")
		}
	}
	return err
}

// errorf returns an error prefixed with the cache's name.
func (c *Cache[V]) errorf(format string, args ...any) error {
	return fmt.Errorf(c.name+": "+format, args...)
}
