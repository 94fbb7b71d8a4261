package serve

import (
	"container/list"
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

func (s *sessions) size(ss *session) int64 { return int64(len(ss.id) + len(ss.body)) }

// put stores body under id, replacing an earlier one, and evicts the least
// recently used sessions past the bounds. It reports whether id existed.
func (s *sessions) put(id string, body []byte) (replaced bool) {
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
