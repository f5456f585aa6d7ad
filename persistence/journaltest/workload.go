// Package journaltest holds helpers for tests of the journal and of its
// users: Embedded and MariaDB open a fresh journal per test, and Workload
// generates a randomized but valid session workload. It must not be imported
// by production code.
package journaltest

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// Workload generates plausible session event batches: every batch is valid
// for the projections (no unknown prompt is promoted, no tool settles twice),
// and together they exercise every event type.
type Workload struct {
	rng      *rand.Rand
	sessions []*sim
	n        int
}

type sim struct {
	id      string
	last    int64
	loc     string
	created bool
	fork    bool // created with a copied history (a fork)
	epoch   bool
	rev     int64
	pending []string
	turn    string   // open assistant message, "" none
	inputs  []string // tool calls with input started, not called
	running []string // tool calls called, not settled
	perms   []string
	compact string
	busy    bool
	counter int
}

// New makes a workload over the given number of sessions, deterministic for a seed.
func New(seed uint64, sessions int, prefix string) *Workload {
	w := &Workload{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for i := 0; i < sessions; i++ {
		// Every third session is a fork (decided without the random
		// source, so the other sessions' workloads stay as they were).
		w.sessions = append(w.sessions, &sim{id: fmt.Sprintf("%s%04d", prefix, i), loc: "/work/p0", fork: i%3 == 2})
	}
	return w
}

// Sessions lists the workload's session IDs.
func (w *Workload) Sessions() []string {
	out := make([]string, len(w.sessions))
	for i, s := range w.sessions {
		out[i] = s.id
	}
	return out
}

// Next returns the next batch: a session, its expected seq and 1..4 events.
// Call Done after the batch is appended (the simulation advances only then).
func (w *Workload) Next() (sessionID string, expectedSeq int64, events []messages.Event) {
	s := w.sessions[w.rng.IntN(len(w.sessions))]
	return s.id, s.last, w.step(s)
}

// Done records that n events were appended to the session.
func (w *Workload) Done(sessionID string, lastSeq int64) {
	for _, s := range w.sessions {
		if s.id == sessionID {
			s.last = lastSeq
		}
	}
}

func (s *sim) next(prefix string) string {
	s.counter++
	return fmt.Sprintf("%s_%s_%d", prefix, s.id, s.counter)
}

func (w *Workload) model() messages.ModelRef {
	return messages.ModelRef{Provider: "scripted", ID: fmt.Sprintf("m%d", w.rng.IntN(3))}
}

// step mutates s as if the batch were appended and returns the batch.
func (w *Workload) step(s *sim) []messages.Event {
	r := w.rng
	if !s.created {
		s.created = true
		out := []messages.Event{messages.SessionCreated{Location: s.loc, Agent: "build", Model: w.model()}}
		if s.fork {
			out = append(out, messages.HistoryCopied{From: "ses_source", Messages: []messages.CopiedMessage{
				{ID: s.next("cu"), Role: messages.RoleUser, Body: messages.Message{Prompt: &messages.Prompt{Text: "copied"}, Delivery: messages.Steer}},
				{ID: s.next("ca"), Role: messages.RoleAssistant, Body: messages.Message{Agent: "build", Finished: true, FinishReason: "stop",
					Parts: []messages.Part{{Kind: messages.PartText, Text: "copied answer"}}}}}})
		}
		return out
	}
	var out []messages.Event
	for len(out) == 0 || (len(out) < 4 && r.IntN(2) == 0) {
		out = append(out, w.one(s))
	}
	return out
}

func pop(xs *[]string, i int) string {
	x := (*xs)[i]
	*xs = append((*xs)[:i], (*xs)[i+1:]...)
	return x
}

func (w *Workload) one(s *sim) messages.Event {
	r := w.rng
	for {
		switch r.IntN(22) {
		case 0, 1:
			id := s.next("msg")
			s.pending = append(s.pending, id)
			d := messages.Steer
			if r.IntN(3) == 0 {
				d = messages.Queue
			}
			return messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: fmt.Sprintf("prompt %d of %s", s.counter, s.id)}, Delivery: d}
		case 2:
			if len(s.pending) == 0 {
				continue
			}
			n := 1 + r.IntN(len(s.pending))
			ids := append([]string(nil), s.pending[:n]...)
			s.pending = s.pending[n:]
			s.busy = true
			return messages.PromptPromoted{MessageIDs: ids}
		case 3:
			if s.epoch && r.IntN(4) == 0 {
				s.epoch = false
				return messages.ContextEpochCleared{Reason: "test"}
			}
			if s.epoch {
				s.rev++
				return messages.ContextEpochReplaced{Revision: s.rev, Baseline: fmt.Sprintf("baseline %d\n", s.rev), Snapshot: []byte{byte(s.rev)}, Location: s.loc}
			}
			s.epoch = true
			s.rev++
			return messages.ContextEpochInitialized{Revision: s.rev, Baseline: fmt.Sprintf("baseline %d\n", s.rev), Snapshot: []byte{1}, Location: s.loc}
		case 4:
			if !s.epoch {
				continue
			}
			s.rev++ // the projector counts updates into the revision
			return messages.ContextUpdated{Text: fmt.Sprintf("<system-update>%d</system-update>", s.counter), Snapshot: []byte{byte(s.counter)}}
		case 5, 6:
			if s.turn != "" {
				continue
			}
			s.turn = s.next("am")
			s.busy = true
			return messages.TurnStarted{AssistantMessageID: s.turn, Agent: "build", Model: w.model()}
		case 7, 8:
			if s.turn == "" {
				continue
			}
			return messages.TextEnded{AssistantMessageID: s.turn, Text: fmt.Sprintf("text %d", s.counter)}
		case 9:
			if s.turn == "" {
				continue
			}
			return messages.ReasoningEnded{AssistantMessageID: s.turn, Text: "thinking", ProviderMetadata: []byte("sig")}
		case 10:
			if s.turn == "" {
				continue
			}
			if len(s.inputs) > 0 && r.IntN(2) == 0 {
				return messages.ToolInputEnded{AssistantMessageID: s.turn, CallID: s.inputs[0], Tool: "bash", Input: []byte(`{}`)}
			}
			call := s.next("call")
			s.inputs = append(s.inputs, call)
			return messages.ToolInputStarted{AssistantMessageID: s.turn, CallID: call, Tool: "bash"}
		case 11, 12:
			if s.turn == "" {
				continue
			}
			var call string
			if len(s.inputs) > 0 && r.IntN(2) == 0 {
				call = pop(&s.inputs, 0)
			} else {
				call = s.next("call")
			}
			s.running = append(s.running, s.turn+"|"+call)
			return messages.ToolCalled{AssistantMessageID: s.turn, CallID: call, Tool: "bash", Input: []byte(`{"command":"ls"}`), Agent: "build"}
		case 13, 14:
			if len(s.running) == 0 {
				continue
			}
			am, call := split(pop(&s.running, r.IntN(len(s.running))))
			if r.IntN(4) == 0 {
				return messages.ToolFailed{AssistantMessageID: am, CallID: call, Error: "Tool execution interrupted"}
			}
			return messages.ToolSucceeded{AssistantMessageID: am, CallID: call, Output: fmt.Sprintf("out %d", s.counter), Lossy: r.IntN(5) == 0}
		case 15:
			if len(s.running) == 0 {
				continue
			}
			am, call := split(s.running[r.IntN(len(s.running))])
			return messages.ToolProgress{AssistantMessageID: am, CallID: call, Title: "working"}
		case 16:
			if s.turn == "" {
				continue
			}
			am := s.turn
			s.turn = ""
			s.inputs = nil // never called: left pending, like a crash would
			if r.IntN(5) == 0 {
				return messages.TurnFailed{AssistantMessageID: am, ErrorKind: "provider", Message: "boom"}
			}
			return messages.TurnEnded{AssistantMessageID: am, FinishReason: "stop", Usage: messages.Usage{InputTokens: 10, OutputTokens: 3}}
		case 17:
			if s.turn == "" {
				continue
			}
			id := s.next("per")
			s.perms = append(s.perms, id)
			return messages.PermissionAsked{RequestID: id, AssistantMessageID: s.turn, CallID: "c", Action: "bash", Resources: []string{"ls"}}
		case 18:
			if len(s.perms) == 0 {
				continue
			}
			return messages.PermissionReplied{RequestID: pop(&s.perms, 0), Reply: messages.ReplyOnce}
		case 19:
			if s.compact == "" {
				s.compact = s.next("cmp")
				s.busy = true
				return messages.CompactionStarted{CompactionID: s.compact}
			}
			id := s.compact
			s.compact = ""
			return messages.CompactionEnded{CompactionID: id, Summary: "summary", RecentContext: "recent"}
		case 20:
			switch r.IntN(3) {
			case 0:
				return messages.AgentSwitched{Agent: "plan"}
			case 1:
				return messages.ModelSwitched{Model: w.model()}
			}
			to := fmt.Sprintf("/work/p%d", s.counter)
			from := s.loc
			s.loc, s.epoch = to, false
			return messages.Moved{From: from, To: to}
		case 21:
			if s.turn != "" {
				continue
			}
			s.busy = false
			if r.IntN(3) == 0 {
				return messages.Interrupted{Reason: "client"}
			}
			return messages.Idle{}
		}
	}
}

func split(s string) (string, string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '|' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// Run appends batches until at least events events were written and returns
// how many were.
func (w *Workload) Run(ctx context.Context, j *persistence.Journal, events int) (int, error) {
	written := 0
	for written < events {
		sid, expected, batch := w.Next()
		last, err := j.Append(ctx, sid, expected, 0, batch...)
		if err != nil {
			return written, fmt.Errorf("workload batch %d on %s: %w", w.n, sid, err)
		}
		w.n++
		w.Done(sid, last)
		written += len(batch)
	}
	return written, nil
}
