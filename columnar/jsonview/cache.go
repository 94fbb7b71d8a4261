package jsonview

import (
	"bytes"
	"hash/maphash"
	"sync"
)

// Cache indexes texts that repeat across rows once and shares the result.
// Rollout datasets repeat the initial state of a task in every rollout of
// that task; with a Cache each distinct state is copied and indexed once,
// and every later row pays only a hash and a comparison of its bytes.
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
	docs  map[uint64]*cachedText
	seen  map[uint64]struct{}
	bytes int
}

type cachedText struct {
	data []byte
	root Value
}

// maxSeen bounds the set of hashes seen once; it is cleared when full.
const maxSeen = 1 << 14

// NewCache returns a cache that keeps at most maxBytes of texts (0: 16 MiB).
func NewCache(maxBytes int) *Cache {
	if maxBytes <= 0 {
		maxBytes = 16 << 20
	}
	return &Cache{seed: maphash.MakeSeed(), maxBytes: maxBytes, docs: map[uint64]*cachedText{}, seen: map[uint64]struct{}{}}
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
	h := maphash.Bytes(c.seed, data)
	c.mu.RLock()
	e := c.docs[h]
	c.mu.RUnlock()
	if e != nil {
		if bytes.Equal(e.data, data) {
			return e.root, true
		}
		return Value{}, false // a collision: the first text keeps the slot
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, again := c.seen[h]; !again || c.docs[h] != nil || c.bytes+len(data) > c.maxBytes {
		if len(c.seen) >= maxSeen {
			clear(c.seen)
		}
		c.seen[h] = struct{}{}
		return Value{}, false
	}
	// Second sighting: keep an indexed copy for the rows to come.
	own := bytes.Clone(data)
	doc := new(Doc)
	root, err := doc.Parse(own)
	if err != nil {
		delete(c.seen, h)
		return Value{}, false
	}
	doc.Share()
	c.docs[h] = &cachedText{data: own, root: root}
	c.bytes += len(own)
	delete(c.seen, h)
	return Value{}, false
}

// Len returns the number of texts cached.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.docs)
}
