package persistence

import "sync"

// maxPending bounds the rows a slow tailer keeps in memory; past it the
// tailer drops them and re-reads from the database.
const maxPending = 4096

// sub is one tailer's subscription: a capacity-1 dirty signal (repeated
// commits coalesce) plus the rows committed since the tailer last looked, so
// that the common case needs no query. The rows are an optimisation only: a
// tailer uses them when they continue its cursor exactly, and re-reads the
// database on any gap or overflow.
type sub struct {
	dirty    chan struct{}
	mu       sync.Mutex
	pending  []*committed
	overflow bool
}

// take returns and clears the pending rows.
func (s *sub) take() ([]*committed, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, over := s.pending, s.overflow
	s.pending, s.overflow = nil, false
	return rows, over
}

// hub holds the in-process tail subscriptions, per session.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[*sub]struct{}
}

func newHub() *hub { return &hub{subs: map[string]map[*sub]struct{}{}} }

func (h *hub) subscribe(sid string) *sub {
	s := &sub{dirty: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[sid] == nil {
		h.subs[sid] = map[*sub]struct{}{}
	}
	h.subs[sid][s] = struct{}{}
	return s
}

func (h *hub) unsubscribe(sid string, s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[sid], s)
	if len(h.subs[sid]) == 0 {
		delete(h.subs, sid) // inactive sessions keep no wake state
	}
}

// notify hands rows committed to sid to its tailers and marks them dirty.
// Called after COMMIT returned, so the rows are also in the database.
func (h *hub) notify(sid string, rows []*committed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[sid] {
		s.mu.Lock()
		if s.overflow || len(s.pending)+len(rows) > maxPending {
			s.pending, s.overflow = nil, true
		} else {
			s.pending = append(s.pending, rows...)
		}
		s.mu.Unlock()
		select {
		case s.dirty <- struct{}{}:
		default:
		}
	}
}
