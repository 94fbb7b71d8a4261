package serve

import (
	"container/list"
	"strings"
	"sync"
)

// sessions stores the states of gym sessions (PUT /sessions/{id}), bounded
// in count and bytes; the least recently used are evicted first.
type sessions struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64
	lru      *list.List // front: most recently used; values *session
	byID     map[string]*list.Element
}

type session struct {
	id   string
	body []byte // a JSON object with final_state, initial_state, log, output
}

func newSessions(max int, maxBytes int64) *sessions {
	return &sessions{max: max, maxBytes: maxBytes, lru: list.New(), byID: map[string]*list.Element{}}
}

// sessionOverhead is what a session holds beside its id and body: its
// list element, its struct and its map entry.
const sessionOverhead = 160

// size is the memory a session holds: its body is stored in a buffer of
// its exact length (put copies it).
func (s *sessions) size(ss *session) int64 {
	return int64(len(ss.id)+cap(ss.body)) + sessionOverhead
}

// put stores a copy of body under id, replacing an earlier one, and
// evicts the least recently used sessions past the bounds. It reports
// whether id existed.
func (s *sessions) put(id string, body []byte) (replaced bool) {
	body = append(make([]byte, 0, len(body)), body...)
	id = strings.Clone(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[id]; ok {
		s.remove(e)
		replaced = true
	}
	ss := &session{id: id, body: body}
	s.byID[id] = s.lru.PushFront(ss)
	s.bytes += s.size(ss)
	for (s.lru.Len() > s.max || s.bytes > s.maxBytes) && s.lru.Len() > 1 {
		s.remove(s.lru.Back())
	}
	return replaced
}

// get returns the body stored under id and marks it used.
func (s *sessions) get(id string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	s.lru.MoveToFront(e)
	return e.Value.(*session).body, true
}

// delete removes id and reports whether it was stored.
func (s *sessions) delete(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if ok {
		s.remove(e)
	}
	return ok
}

func (s *sessions) remove(e *list.Element) {
	ss := e.Value.(*session)
	s.lru.Remove(e)
	delete(s.byID, ss.id)
	s.bytes -= s.size(ss)
}
