package persistence

import (
	"container/list"
	"sync"
	"time"

	"github.com/sessionrt/sessionrt/messages"
)

// committed is one event row this Journal committed, as the writer stored
// it: what the hub hands to tailers and the recent-events cache keeps. It is
// decoded at most once, on first use, and the decoded event is shared by
// every reader — which is why ReadEvents and Events document their events as
// read-only. The payload is dropped once decoded.
type committed struct {
	seq  int64
	typ  messages.EventType
	at   int64
	cost int // bytes charged to the cache: payload now, decoded value later

	once    sync.Once
	payload []byte // nil once decoded
	ev      messages.Event
	err     error
}

// committedOverhead is a rough per-event charge on top of the payload (the
// struct, the envelope fields, the decoded value's headers). The decoded
// event is about as large as its payload again.
const committedOverhead = 160

func newCommitted(seq int64, typ messages.EventType, at int64, payload []byte) *committed {
	return &committed{seq: seq, typ: typ, at: at, payload: payload, cost: 2*len(payload) + committedOverhead}
}

// envelope decodes the row (once) and returns it as an envelope of sid.
func (c *committed) envelope(reg *messages.Registry, sid string) (messages.Envelope, error) {
	c.once.Do(func() {
		c.ev, c.err = reg.Unmarshal(c.typ, c.payload)
		c.payload = nil
	})
	if c.err != nil {
		return messages.Envelope{}, &DecodeError{SessionID: sid, Seq: c.seq, Type: c.typ, Err: c.err}
	}
	return messages.Envelope{SessionID: sid, Seq: c.seq, Type: c.typ, Time: time.UnixMicro(c.at).UTC(), Event: c.ev}, nil
}

// DefaultRecentEventBytes is Config.RecentEventBytes's default.
const DefaultRecentEventBytes = 4 << 20

// recentEvents keeps, per session, the events this Journal itself committed
// most recently, as one contiguous seq window, so that a stream opened right
// after a turn (the common client pattern: prompt, then subscribe and replay
// from 0) is served from memory instead of a range read and a decode per
// event. Event rows are immutable once committed — the journal never deletes
// or rewrites them, and a duplicate seq is refused, never overwritten — so
// a cached row stays true forever; the only thing to guard is the window's
// contiguity, and that it holds only rows whose COMMIT returned success.
//
// It is bounded by the bytes it charges (committed.cost): a session's window
// drops its oldest rows past a quarter of the budget, and whole sessions
// are evicted least recently used first.
type recentEvents struct {
	mu     sync.Mutex
	budget int
	bytes  int
	m      map[string]*list.Element // of *window
	lru    list.List                // front: most recently used
}

// window is one session's cached rows, seqs rows[0].seq, rows[0].seq+1, …
type window struct {
	sid   string
	rows  []*committed
	bytes int
}

func newRecentEvents(budget int) *recentEvents {
	return &recentEvents{budget: budget, m: map[string]*list.Element{}}
}

// add records rows that continue one commit of sid (consecutive seqs). A
// commit that does not continue the session's window replaces it: the
// window never has a gap.
func (r *recentEvents) add(sid string, rows []*committed) {
	if r.budget <= 0 || len(rows) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.m[sid]
	if !ok {
		el = r.lru.PushFront(&window{sid: sid})
		r.m[sid] = el
	}
	r.lru.MoveToFront(el)
	w := el.Value.(*window)
	if n := len(w.rows); n > 0 && w.rows[n-1].seq+1 != rows[0].seq {
		r.bytes -= w.bytes
		clear(w.rows)
		w.rows, w.bytes = w.rows[:0], 0
	}
	for _, c := range rows {
		w.rows = append(w.rows, c)
		w.bytes += c.cost
		r.bytes += c.cost
	}
	r.trim(w, r.budget/4)
	if len(w.rows) == 0 { // one commit larger than a window may be
		r.drop(w)
		return
	}
	for r.bytes > r.budget {
		back := r.lru.Back().Value.(*window)
		if back == w {
			r.trim(w, r.budget) // w alone is over the budget
			break
		}
		r.drop(back)
	}
}

// trim drops w's oldest rows until it charges at most max bytes.
func (r *recentEvents) trim(w *window, max int) {
	k := 0
	for k < len(w.rows) && w.bytes > max {
		w.bytes -= w.rows[k].cost
		r.bytes -= w.rows[k].cost
		k++
	}
	if k == 0 {
		return
	}
	clear(w.rows[:k]) // the backing array must not keep them alive
	w.rows = w.rows[k:]
}

func (r *recentEvents) drop(w *window) {
	r.bytes -= w.bytes
	r.lru.Remove(r.m[w.sid])
	delete(r.m, w.sid)
}

// get returns up to limit cached rows of sid with seq > after, starting at
// after+1 exactly, and the first seq of the session's window (0 when there
// is none): no rows when the window does not reach back to after+1. The
// slice is the caller's.
func (r *recentEvents) get(sid string, after int64, limit int) (rows []*committed, lo int64) {
	if r.budget <= 0 {
		return nil, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.m[sid]
	if !ok {
		return nil, 0
	}
	w := el.Value.(*window)
	if len(w.rows) == 0 {
		return nil, 0
	}
	lo, hi := w.rows[0].seq, w.rows[len(w.rows)-1].seq
	if limit <= 0 || after+1 < lo || after >= hi {
		return nil, lo
	}
	r.lru.MoveToFront(el)
	from := int(after + 1 - lo)
	to := from + min(limit, len(w.rows)-from)
	return append([]*committed(nil), w.rows[from:to]...), lo
}
