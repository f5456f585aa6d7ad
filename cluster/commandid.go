package cluster

import (
	"sync"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/messages"
)

// withCommandID returns msg carrying an ID, so that every delivery of one
// Request (protoactor's retry, our resend after a topology change) names
// the same command. A copy is made when an ID must be added: callers may
// share their message.
func withCommandID(msg any) any {
	switch m := msg.(type) {
	case *actors.Prompt:
		if m.MessageID == "" {
			c := *m
			c.MessageID = messages.NewID("msg")
			return &c
		}
	case *actors.Run:
		if m.ID == "" {
			return &actors.Run{ID: messages.NewID("cmd")}
		}
	case *actors.Wake:
		if m.ID == "" {
			return &actors.Wake{ID: messages.NewID("cmd"), Owed: m.Owed}
		}
	case *actors.Interrupt:
		if m.ID == "" {
			return &actors.Interrupt{ID: messages.NewID("cmd")}
		}
	case *actors.Move:
		if m.ID == "" {
			return &actors.Move{To: m.To, ID: messages.NewID("cmd")}
		}
	}
	return msg
}

// commandID is the ID a grain deduplicates msg by ("" for commands that
// are idempotent by their content: Create, Prompt by message ID, the
// switches, WaitIdle).
func commandID(msg any) string {
	switch m := msg.(type) {
	case *actors.Run:
		return m.ID
	case *actors.Wake:
		return m.ID
	case *actors.Interrupt:
		return m.ID
	case *actors.Move:
		return m.ID
	}
	return ""
}

// recentLimit bounds how many command IDs a grain remembers. A retry comes
// within one call's timeout, so a few hundred is plenty.
const recentLimit = 512

// recentCommands remembers the results of a grain's recent commands by ID.
// A repeated ID waits for (or gets at once) the first delivery's answer
// instead of running the command again. Failures are forgotten, so a retry
// after an error runs the command afresh. The memory is per activation: a
// re-placed grain starts empty, which is safe because the old activation
// is fenced and its drain died with it (a retried Run then rightly resumes
// the session).
type recentCommands struct {
	mu    sync.Mutex
	byID  map[string]*commandResult
	order []string
}

type commandResult struct {
	done chan struct{}
	res  any
}

// begin returns the ID's entry and whether this delivery is the first.
func (r *recentCommands) begin(id string) (*commandResult, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.byID[id]; ok {
		return c, false
	}
	if r.byID == nil {
		r.byID = map[string]*commandResult{}
	}
	c := &commandResult{done: make(chan struct{})}
	r.byID[id] = c
	r.order = append(r.order, id)
	if len(r.order) > recentLimit {
		delete(r.byID, r.order[0])
		r.order = r.order[1:]
	}
	return c, true
}

// finish records the first delivery's answer and releases the waiting repeats.
func (r *recentCommands) finish(id string, c *commandResult, res any) {
	if _, failed := res.(*actors.CommandError); failed {
		r.mu.Lock()
		if r.byID[id] == c {
			delete(r.byID, id)
		}
		r.mu.Unlock()
	}
	c.res = res
	close(c.done)
}
