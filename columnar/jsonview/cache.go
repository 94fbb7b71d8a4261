package jsonview

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/gavelhq/gavel/internal/mix"
)

// Cache indexes texts that repeat across rows once and shares the result.
// Rollout datasets repeat the initial state of a task in every rollout of
// that task; with a Cache each distinct state is copied and indexed once,
// and every later row pays only a hash of a sample of its bytes and a
// comparison of all of them.
//
// The map key hashes the text's length and 16 slices of 32 bytes spread
// over it (short texts whole), which costs a fraction of hashing 5 KB;
// texts that share the sample share a key and are told apart by the
// comparison, up to maxChain of them per key (beyond that a text is not
// cached, and parses as without a cache).
//
// A text is admitted on its second sighting, so that a dataset of unique
// states fills neither the cache nor the heap; admitted texts are kept
// until the Cache holds MaxBytes of them, after which no more are
// admitted (rows then parse as without a cache). After missRun lookups in
// a row that neither found nor admitted a text (a dataset whose states do
// not repeat), only one lookup in reprobe is made, the others missing at
// once without hashing anything, until one finds or admits a text again.
// Values returned by Parse
// for cached texts are shared and read-only, like every Value after Parse.
//
// A Cache is safe for concurrent use. The zero value is not: use
// NewCache.
type Cache struct {
	seed     maphash.Seed
	seed64   uint64 // derived from seed, for the sampled key
	maxBytes int

	// misses counts the lookups in a row that neither found nor admitted
	// a text; probes counts the lookups since it reached missRun.
	misses, probes atomic.Int64

	mu    sync.RWMutex
	docs  map[uint64][]*cachedText
	seen  map[uint64]struct{}
	bytes int
	texts int
	// byAddr finds the cached text of a stable text (ParseStable) by its
	// address, without reading it; the weak pointer tells whether the
	// memory seen there is still the memory that was compared.
	byAddr map[uintptr]addrEntry
	// prefixes finds cached objects and arrays by their beginning
	// (MatchPrefix).
	prefixes map[uint64][]*cachedText
}

type addrEntry struct {
	p    weak.Pointer[byte]
	n    int
	text *cachedText
}

// maxAddrs bounds byAddr; it is cleared when full.
const maxAddrs = 1 << 12

type cachedText struct {
	data []byte
	root Value
}

// maxSeen bounds the set of hashes seen once; it is cleared when full.
const maxSeen = 1 << 14

// After missRun misses in a row, only one lookup in reprobe is made.
const (
	missRun = 1 << 12
	reprobe = 64
)

// maxChain bounds the cached texts that share a key.
const maxChain = 8

// Sampling: texts longer than sampleAll bytes are keyed by samples pieces
// of sampleLen bytes.
const (
	sampleAll = 1024
	samples   = 16
	sampleLen = 32
)

// key hashes data's length and a sample of its bytes: 8 bytes at a time,
// each word mixed by a multiplication, with MurmurHash3's finalizer at the
// end. It costs about a tenth of maphash's streaming interface on the same
// samples, which copies them into its buffer first.
func (c *Cache) key(data []byte) uint64 {
	if len(data) <= sampleAll {
		return maphash.Bytes(c.seed, data)
	}
	const m = mix.M
	h := (c.seed64 ^ uint64(len(data))) * m
	step := (len(data) - sampleLen) / (samples - 1)
	for k := range samples {
		s := data[k*step:][:sampleLen]
		for i := 0; i < sampleLen; i += 8 {
			h = (h ^ binary.LittleEndian.Uint64(s[i:])) * m
			h ^= h >> 29
		}
	}
	return mix.Finalize(h)
}

// NewCache returns a cache that keeps at most maxBytes of texts (0: 16 MiB).
func NewCache(maxBytes int) *Cache {
	if maxBytes <= 0 {
		maxBytes = 16 << 20
	}
	seed := maphash.MakeSeed()
	return &Cache{seed: seed, seed64: maphash.String(seed, "gavel"), maxBytes: maxBytes, docs: map[uint64][]*cachedText{}, seen: map[uint64]struct{}{}, byAddr: map[uintptr]addrEntry{}, prefixes: map[uint64][]*cachedText{}}
}

// Parse returns the root of data: a shared cached index when data was
// seen before, else the result of d.Parse(data). cached reports which;
// when it is false the Value belongs to d, as with d.Parse.
func (c *Cache) Parse(d *Doc, data []byte) (v Value, cached bool, err error) {
	if v, ok := c.Lookup(data); ok {
		return v, true, nil
	}
	v, err = d.Parse(data)
	return v, false, err
}

// ParseStable is Parse for a text in memory that is never written again
// while anything references it, such as a value of a Parquet dictionary
// (columnar.Cell.Stable). Once such a text has been found in the cache,
// the same memory is recognized by its address and length without
// reading it; a weak pointer to it tells that it is still the memory
// that was compared, and not new memory at the same address.
func (c *Cache) ParseStable(d *Doc, data []byte) (v Value, cached bool, err error) {
	if v, ok := c.lookup(data, true); ok {
		return v, true, nil
	}
	v, err = d.Parse(data)
	return v, false, err
}

// Lookup returns the shared index of data when it is cached. Otherwise it
// counts a sighting of data and returns false; on the second sighting of a
// valid text it keeps an indexed copy for the rows to come.
func (c *Cache) Lookup(data []byte) (Value, bool) {
	return c.lookup(data, false)
}

func (c *Cache) lookup(data []byte, stable bool) (Value, bool) {
	if c.misses.Load() >= missRun && c.probes.Add(1)%reprobe != 0 {
		return Value{}, false
	}
	v, found, admitted := c.find(data, stable)
	switch {
	case !found && !admitted:
		c.misses.Add(1)
	case c.misses.Load() != 0:
		c.misses.Store(0)
	}
	return v, found
}

// find returns the cached index of data, or counts a sighting of data and
// reports whether it was admitted.
func (c *Cache) find(data []byte, stable bool) (v Value, found, admitted bool) {
	stable = stable && len(data) > 0
	var addr uintptr
	if stable {
		p := unsafe.SliceData(data)
		addr = uintptr(unsafe.Pointer(p))
		c.mu.RLock()
		a, ok := c.byAddr[addr]
		c.mu.RUnlock()
		if ok && a.n == len(data) && a.p.Value() == p {
			return a.text.root, true, false
		}
	}
	h := c.key(data)
	c.mu.RLock()
	chain := c.docs[h]
	c.mu.RUnlock()
	for _, e := range chain {
		if bytes.Equal(e.data, data) {
			if stable {
				c.mu.Lock()
				if len(c.byAddr) >= maxAddrs {
					clear(c.byAddr)
				}
				c.byAddr[addr] = addrEntry{p: weak.Make(unsafe.SliceData(data)), n: len(data), text: e}
				c.mu.Unlock()
			}
			return e.root, true, false
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	chain = c.docs[h]
	_, again := c.seen[h]
	if !again || len(chain) >= maxChain || c.bytes+len(data) > c.maxBytes {
		if len(c.seen) >= maxSeen {
			clear(c.seen)
		}
		c.seen[h] = struct{}{}
		return Value{}, false, false
	}
	for _, e := range chain {
		if bytes.Equal(e.data, data) { // admitted by another goroutine meanwhile
			return e.root, true, false
		}
	}
	// Second sighting: keep an indexed copy for the rows to come.
	own := bytes.Clone(data)
	doc := new(Doc)
	root, err := doc.Parse(own)
	if err != nil {
		return Value{}, false, false
	}
	doc.Share()
	e := &cachedText{data: own, root: root}
	c.docs[h] = append(chain, e)
	if len(own) >= prefixLen && (own[0] == '{' || own[0] == '[') && (own[len(own)-1] == '}' || own[len(own)-1] == ']') {
		// Only a text that is the value alone, without surrounding
		// space, can stand for the value that starts a longer text.
		if k := c.prefixKey(own); len(c.prefixes[k]) < maxChain {
			c.prefixes[k] = append(c.prefixes[k], e)
		}
	}
	c.bytes += len(own)
	c.texts++
	delete(c.seen, h)
	return Value{}, false, true
}

// prefixLen is the length of the beginning of a text that MatchPrefix
// looks cached texts up by.
const prefixLen = 256

// prefixKey hashes the first prefixLen bytes of data.
func (c *Cache) prefixKey(data []byte) uint64 {
	const m = mix.M
	h := c.seed64 * m
	for i := 0; i < prefixLen; i += 8 {
		h = (h ^ binary.LittleEndian.Uint64(data[i:])) * m
		h ^= h >> 29
	}
	return h
}

// MatchPrefix returns the index of a cached text that data begins with
// and that text's length, or 0 when there is none. Only cached objects and
// arrays of at least 256 bytes, without surrounding space, are found, by
// their first 256 bytes, up to maxChain texts per beginning. Since a JSON
// object or array ends at its closing bracket, a cached text that data
// begins with is the whole value at the start of data: the value is
// found, and known valid, without scanning it (Doc.ParseSkipping).
func (c *Cache) MatchPrefix(data []byte) (Value, int) {
	if len(data) < prefixLen {
		return Value{}, 0
	}
	k := c.prefixKey(data)
	c.mu.RLock()
	chain := c.prefixes[k]
	c.mu.RUnlock()
	for _, e := range chain {
		if len(e.data) <= len(data) && bytes.Equal(data[:len(e.data)], e.data) {
			return e.root, len(e.data)
		}
	}
	return Value{}, 0
}

// Len returns the number of texts cached.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.texts
}
