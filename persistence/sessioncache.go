package persistence

import (
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/messages"
)

// sessionCache remembers, per session, some projection rows as this
// Journal's last append to the session left them, tagged with the stream
// head that append wrote: the status, the assistant messages it touched and
// their tool calls. An append whose expected seq equals that head, and whose
// advance then succeeds, may use them instead of reading: heads only grow
// and every change to a session's projections moves its head, so nobody
// changed those rows in between. The same holds for the sessions row, the
// epoch's revision and the prompts it admitted that wait in the inbox, so
// an append at the head skips reading them too, and Session serves the row
// after one read of the stream head that proves it current (the rows can
// change only by an append, which moves the head; heads only grow, and
// another process's append moves it the same way). A turn's events arrive one append at a time
// (text, each tool call, each result, the end), and each would otherwise
// read its assistant message and tool call back. A miss only costs the read.
//
// Entries are immutable once stored (each append builds a new one), and
// bounded: a few messages per session, no large bodies, a total budget.
type sessionCache struct {
	mu    sync.Mutex
	m     map[string]*cacheEntry
	bytes int
}

type cacheEntry struct {
	head   int64
	status Status                // "" unknown
	msgs   []cachedMsg           // assistant messages, oldest first, at most cacheMsgs
	tools  map[[2]string]toolRow // calls of the cached messages, by (assistant message, call)
	sess   *Session              // the sessions row (Status and LastSeq unset: status holds it); nil unknown
	epoch  epochState
	inbox  []cachedInput // admitted, unpromoted prompts this cache saw admitted
	bytes  int
}

// epochState is what the projector knows of the context_epochs row.
type epochState struct {
	known, found     bool
	rev, baselineSeq int64
}

// cachedInput is a session_input row with promoted_seq 0 (and its
// prompt_ids row, which names this session). A prompt missing here may
// still be pending: the database is then read.
type cachedInput struct {
	id, delivery string
	seq          int64
	prompt       []byte // as stored
}

type cachedMsg struct {
	id, role string
	seq      int64
	idx      int
	body     []byte // as stored
	// allTools: every stored call of the message is in tools (the message
	// was created by an append this cache saw), so a miss means none.
	allTools bool
}

const (
	cacheMsgs     = 2         // messages kept per session (the open turn and the one before)
	cacheMaxBody  = 256 << 10 // bodies above this are not kept
	cacheSessions = 16384
	cacheBudget   = 64 << 20 // bytes of bodies over all sessions
	cacheInputs   = 8        // pending prompts kept per session
)

// get returns the entry valid at head expected, nil when there is none.
func (c *sessionCache) get(sid string, expected int64) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[sid]; ok && e.head == expected {
		return e
	}
	return nil
}

// has reports whether the session has an entry (at any head).
func (c *sessionCache) has(sid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[sid]
	return ok
}

// learn records the sessions row s, read at head s.LastSeq in a
// transaction, unless an entry at a later head exists; an entry at that
// head keeps its messages and calls.
func (c *sessionCache) learn(sid string, s Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	head := s.LastSeq
	s.LastSeq = 0
	e := &cacheEntry{head: head, tools: map[[2]string]toolRow{}}
	if old, ok := c.m[sid]; ok {
		switch {
		case old.head > head || (old.head == head && old.sess != nil):
			return
		case old.head == head:
			cp := *old // entries are immutable: a copy sharing its parts
			e = &cp
		}
	}
	e.status = s.Status
	s.Status = ""
	e.sess = &s
	e.bytes += 64 + len(s.ID) + len(s.Location) + len(s.Agent) + len(s.Model.Provider) + len(s.Model.ID) + len(s.Model.Variant) + len(s.Title)
	c.putLocked(sid, e)
}

// put replaces the session's entry; nil forgets the session.
func (c *sessionCache) put(sid string, e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(sid, e)
}

func (c *sessionCache) putLocked(sid string, e *cacheEntry) {
	if old, ok := c.m[sid]; ok {
		c.bytes -= old.bytes
		delete(c.m, sid)
	}
	if e == nil {
		return
	}
	if c.m == nil {
		c.m = map[string]*cacheEntry{}
	}
	for k, old := range c.m { // arbitrary victims until it fits
		if len(c.m) < cacheSessions && c.bytes+e.bytes <= cacheBudget {
			break
		}
		c.bytes -= old.bytes
		delete(c.m, k)
	}
	c.m[sid] = e
	c.bytes += e.bytes
}

// session returns the cached sessions row and the head it is valid at.
func (c *sessionCache) session(sid string) (Session, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[sid]; ok && e.sess != nil {
		s := *e.sess
		s.Status = e.status
		return s, e.head, true
	}
	return Session{}, 0, false
}

// history returns what ModelHistory needs besides the messages: the
// session's history seq and the epoch's baseline seq (found false: no
// epoch), with the head they are valid at.
func (c *sessionCache) history(sid string) (historySeq int64, ep epochState, head int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, hit := c.m[sid]; hit && e.sess != nil && e.epoch.known {
		return e.sess.HistorySeq, e.epoch, e.head, true
	}
	return 0, epochState{}, 0, false
}

func (e *cacheEntry) msg(id string) *cachedMsg {
	if e == nil {
		return nil
	}
	for i := range e.msgs {
		if e.msgs[i].id == id {
			return &e.msgs[i]
		}
	}
	return nil
}

// decode returns the cached message as a projector entry.
func (m *cachedMsg) decode() (messages.Message, error) {
	out := messages.Message{ID: m.id, Seq: m.seq, Index: m.idx, Role: messages.Role(m.role)}
	err := msgpack.Unmarshal(m.body, &out)
	return out, err
}

// next builds the entry for the head an append wrote, from the entry it
// started from (nil on a miss) and what its projector wrote.
func (p *projector) next(head int64) *cacheEntry {
	e := &cacheEntry{head: head, status: p.known, tools: map[[2]string]toolRow{}, epoch: p.ep}
	if s := p.sess; s != nil && p.known != "" {
		e.sess = s // immutable from here on (the projector is done)
		e.bytes += 64 + len(s.ID) + len(s.Location) + len(s.Agent) + len(s.Model.Provider) + len(s.Model.ID) + len(s.Model.Variant) + len(s.Title)
	}
	for _, in := range p.inbox {
		if len(e.inbox) == cacheInputs {
			break // the oldest are kept: they are promoted first
		}
		if len(in.prompt) <= cacheMaxBody {
			e.inbox = append(e.inbox, in)
			e.bytes += 64 + len(in.prompt)
		}
	}
	// Messages: the previous entry's, overlaid with this append's writes.
	var msgs []cachedMsg
	if p.cache != nil {
		for _, m := range p.cache.msgs {
			if _, written := p.bodies[m.id]; !written {
				msgs = append(msgs, m)
			}
		}
	}
	for _, en := range p.order {
		body, written := p.bodies[en.m.ID]
		if !written || en.m.Role != messages.RoleAssistant || len(body) > cacheMaxBody {
			continue
		}
		all := p.fresh[en.m.ID]
		if !all {
			if old := p.cache.msg(en.m.ID); old != nil {
				all = old.allTools
			}
		}
		msgs = append(msgs, cachedMsg{id: en.m.ID, role: string(en.m.Role), seq: en.m.Seq, idx: en.m.Index, body: body, allTools: all})
	}
	// Keep the newest (highest seq) few.
	for len(msgs) > cacheMsgs {
		oldest := 0
		for i := range msgs {
			if msgs[i].seq < msgs[oldest].seq {
				oldest = i
			}
		}
		msgs = append(msgs[:oldest], msgs[oldest+1:]...)
	}
	kept := map[string]bool{}
	for _, m := range msgs {
		kept[m.id] = true
		e.bytes += len(m.body)
	}
	e.msgs = msgs
	if p.cache != nil {
		for k, t := range p.cache.tools {
			if kept[k[0]] {
				e.tools[k] = t
			}
		}
	}
	for _, t := range p.torder {
		if kept[t.am] {
			c := *t
			c.isNew, c.dirty = false, false
			e.tools[[2]string{t.am, t.call}] = c
		}
	}
	e.bytes += 64 * len(e.tools)
	return e
}
