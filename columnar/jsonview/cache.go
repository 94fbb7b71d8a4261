package jsonview

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync"
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
// admitted (rows then parse as without a cache). Values returned by Parse
// for cached texts are shared and read-only, like every Value after Parse.
//
// A Cache is safe for concurrent use. The zero value is not: use
// NewCache.
type Cache struct {
	seed     maphash.Seed
	maxBytes int

	mu    sync.RWMutex
	docs  map[uint64][]*cachedText
	seen  map[uint64]struct{}
	bytes int
	texts int
}

type cachedText struct {
	data []byte
	root Value
}

// maxSeen bounds the set of hashes seen once; it is cleared when full.
const maxSeen = 1 << 14

// maxChain bounds the cached texts that share a key.
const maxChain = 8

// Sampling: texts longer than sampleAll bytes are keyed by samples pieces
// of sampleLen bytes.
const (
	sampleAll = 1024
	samples   = 16
	sampleLen = 32
)

// key hashes data's length and a sample of its bytes.
func (c *Cache) key(data []byte) uint64 {
	if len(data) <= sampleAll {
		return maphash.Bytes(c.seed, data)
	}
	var h maphash.Hash
	h.SetSeed(c.seed)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(data)))
	h.Write(n[:])
	step := (len(data) - sampleLen) / (samples - 1)
	for k := range samples {
		off := k * step
		h.Write(data[off : off+sampleLen])
	}
	return h.Sum64()
}

// NewCache returns a cache that keeps at most maxBytes of texts (0: 16 MiB).
func NewCache(maxBytes int) *Cache {
	if maxBytes <= 0 {
		maxBytes = 16 << 20
	}
	return &Cache{seed: maphash.MakeSeed(), maxBytes: maxBytes, docs: map[uint64][]*cachedText{}, seen: map[uint64]struct{}{}}
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

// Lookup returns the shared index of data when it is cached. Otherwise it
// counts a sighting of data and returns false; on the second sighting of a
// valid text it keeps an indexed copy for the rows to come.
func (c *Cache) Lookup(data []byte) (Value, bool) {
	h := c.key(data)
	c.mu.RLock()
	chain := c.docs[h]
	c.mu.RUnlock()
	for _, e := range chain {
		if bytes.Equal(e.data, data) {
			return e.root, true
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
		return Value{}, false
	}
	for _, e := range chain {
		if bytes.Equal(e.data, data) { // admitted by another goroutine meanwhile
			return e.root, true
		}
	}
	// Second sighting: keep an indexed copy for the rows to come.
	own := bytes.Clone(data)
	doc := new(Doc)
	root, err := doc.Parse(own)
	if err != nil {
		return Value{}, false
	}
	doc.Share()
	c.docs[h] = append(chain, &cachedText{data: own, root: root})
	c.bytes += len(own)
	c.texts++
	delete(c.seen, h)
	return Value{}, false
}

// Len returns the number of texts cached.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.texts
}
