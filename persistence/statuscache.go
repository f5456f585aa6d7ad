package persistence

import "sync"

// statusCache remembers, per session, the status this Journal's last append
// left in the sessions row, tagged with the stream head that append wrote.
// An append whose expected seq equals that head, and whose advance then
// succeeds, knows the stored status without reading it: heads only grow and
// every change to a session's projections moves its head, so nobody changed
// the row in between. The projector then skips writing a status that is
// already stored (a turn's TurnStarted on a busy session is the common case).
// A miss costs nothing but that skipped optimisation.
type statusCache struct {
	mu sync.Mutex
	m  map[string]statusEntry
}

type statusEntry struct {
	head   int64
	status Status
}

// statusCacheMax bounds the entries; past it an arbitrary one is dropped.
const statusCacheMax = 16384

// get returns the status stored at head expected, "" when not known.
func (c *statusCache) get(sid string, expected int64) Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[sid]; ok && e.head == expected {
		return e.status
	}
	return ""
}

// put records the status stored at head; an empty status forgets the session.
func (c *statusCache) put(sid string, head int64, status Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if status == "" {
		delete(c.m, sid)
		return
	}
	if c.m == nil {
		c.m = map[string]statusEntry{}
	}
	if _, ok := c.m[sid]; !ok && len(c.m) >= statusCacheMax {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[sid] = statusEntry{head: head, status: status}
}
