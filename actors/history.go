package actors

import (
	"fmt"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// history is the actor's copy of the journal's model-visible history
// (persistence.Journal.ModelHistory), kept between turns so that building a
// request reads nothing. It is loaded from the journal once per activation
// (or after anything made it doubtful) and then advanced by the events this
// actor itself appends, mirroring the journal's message projection. The
// actor is the session's only writer, so the copy cannot miss an event;
// when in doubt (an append that failed, an event it does not model) it is
// dropped and read again.
type history struct {
	valid bool
	msgs  []messages.Message
	// through is the last seq applied. Events up to it were applied ahead
	// of their append (see sessionActor.historyWithStaged) and are skipped
	// when their append lands.
	through int64
}

func (h *history) invalidate() {
	h.valid = false
	h.msgs = nil
	h.through = 0
}

// history returns the model-visible history, reading it from the journal
// when the in-memory copy is not valid. The slice is the actor's own: use
// it on the actor goroutine only, and do not keep it.
func (a *sessionActor) history() ([]messages.Message, error) {
	if !a.hist.valid {
		msgs, err := a.rt.journal.ModelHistory(a.rt.ctx, a.id)
		if err != nil {
			return nil, err
		}
		a.rt.historyLoads.Add(1)
		a.hist = history{valid: true, msgs: msgs, through: a.seq}
	}
	return a.hist.msgs, nil
}

// historyWithStaged is history with the staged events (not yet appended)
// applied at the seqs they will get. The very next append of this handler
// carries them; if it fails, or they are dropped, the copy is invalidated.
func (a *sessionActor) historyWithStaged() ([]messages.Message, error) {
	msgs, err := a.history()
	if err != nil || len(a.staged) == 0 {
		return msgs, err
	}
	for i, ev := range a.staged {
		a.applyHistory(a.seq+1+int64(i), ev)
	}
	a.hist.through = a.seq + int64(len(a.staged))
	return a.hist.msgs, nil
}

// applyHistory advances the in-memory history by one event, exactly as the
// journal's projector changes the rows ModelHistory reads. It runs before
// the actor's own apply, while a promoted prompt is still in a.pending.
func (a *sessionActor) applyHistory(seq int64, ev messages.Event) {
	h := &a.hist
	if !h.valid || seq <= h.through {
		return
	}
	h.through = seq
	switch e := ev.(type) {
	case messages.PromptPromoted:
		for i, id := range e.MessageIDs {
			p := a.pendingEntry(id)
			if p == nil {
				h.invalidate() // not ours to know: read it back
				return
			}
			pr := p.Prompt
			h.msgs = append(h.msgs, messages.Message{ID: id, Seq: seq, Index: i, Role: messages.RoleUser, Prompt: &pr, Delivery: p.Delivery})
		}
	case messages.ContextUpdated:
		id := e.MessageID
		if id == "" {
			id = fmt.Sprintf("ctx_%d", seq)
		}
		h.msgs = append(h.msgs, messages.Message{ID: id, Seq: seq, Role: messages.RoleSystem, Text: e.Text})
	case messages.ContextEpochInitialized, messages.ContextEpochReplaced:
		// A new baseline restates every earlier chronological update.
		kept := h.msgs[:0]
		for _, m := range h.msgs {
			if m.Role != messages.RoleSystem || m.Seq >= seq {
				kept = append(kept, m)
			}
		}
		clear(h.msgs[len(kept):])
		h.msgs = kept
	case messages.ContextEpochCleared, messages.Moved:
		// Without an epoch the journal shows the superseded updates again;
		// rare enough to read back rather than model.
		h.invalidate()
	case messages.CompactionEnded:
		id := e.CompactionID
		if id == "" {
			id = fmt.Sprintf("cmp_%d", seq)
		}
		clear(h.msgs)
		h.msgs = append(h.msgs[:0], messages.Message{ID: id, Seq: seq, Role: messages.RoleCompaction, Text: e.Summary, RecentContext: e.RecentContext})
	case messages.TurnStarted:
		h.msgs = append(h.msgs, messages.Message{ID: e.AssistantMessageID, Seq: seq, Role: messages.RoleAssistant, Agent: e.Agent, Model: e.Model})
	case messages.TurnEnded:
		if m := h.assistant(e.AssistantMessageID); m != nil {
			m.Finished, m.FinishReason, m.Usage, m.ProviderMetadata = true, e.FinishReason, e.Usage, e.ProviderMetadata
		}
	case messages.TurnFailed:
		if m := h.assistant(e.AssistantMessageID); m != nil {
			m.Finished, m.ErrorKind, m.Error = true, e.ErrorKind, e.Message
		}
	case messages.TextEnded:
		if m := h.assistant(e.AssistantMessageID); m != nil {
			m.Parts = append(m.Parts, messages.Part{Kind: messages.PartText, Seq: seq, Text: e.Text, ProviderMetadata: e.ProviderMetadata})
		}
	case messages.ReasoningEnded:
		if m := h.assistant(e.AssistantMessageID); m != nil {
			m.Parts = append(m.Parts, messages.Part{Kind: messages.PartReasoning, Seq: seq, Text: e.Text, ProviderMetadata: e.ProviderMetadata})
		}
	case messages.ToolCalled:
		if m := h.assistant(e.AssistantMessageID); m != nil {
			m.Parts = append(m.Parts, messages.Part{Kind: messages.PartTool, Seq: seq, Tool: &messages.ToolPart{
				CallID: e.CallID, Tool: e.Tool, Agent: e.Agent, Input: e.Input, State: messages.ToolStateRunning, CallMetadata: e.ProviderMetadata}})
		}
	case messages.ToolProgress:
		if tp := h.toolPart(e.AssistantMessageID, e.CallID); tp != nil {
			tp.Title = e.Title
		}
	case messages.ToolSucceeded:
		if tp := h.toolPart(e.AssistantMessageID, e.CallID); tp != nil {
			tp.State, tp.Output, tp.Structured, tp.ManagedPath, tp.Lossy, tp.ResultMetadata =
				messages.ToolStateCompleted, e.Output, e.Structured, e.ManagedPath, e.Lossy, e.ProviderMetadata
		}
	case messages.ToolFailed:
		// A call that never got a part (failed while pending) changes no
		// message, as in the journal.
		if m := h.find(e.AssistantMessageID); m != nil {
			if tp := partOf(m, e.CallID); tp != nil {
				tp.State, tp.Error = messages.ToolStateFailed, e.Error
			}
		}
	case messages.SessionCreated, messages.PromptAdmitted, messages.AgentSwitched, messages.ModelSwitched,
		messages.ToolInputStarted, messages.ToolInputEnded, messages.PermissionAsked, messages.PermissionReplied,
		messages.CompactionStarted, messages.Interrupted, messages.DrainFailed, messages.Idle:
		// no model-visible message changes
	default:
		h.invalidate()
	}
}

// find returns the message with id, newest first (the open turn is last).
// A message before the history boundary is not found: its changes are
// invisible to ModelHistory too.
func (h *history) find(id string) *messages.Message {
	for i := len(h.msgs) - 1; i >= 0; i-- {
		if h.msgs[i].ID == id {
			return &h.msgs[i]
		}
	}
	return nil
}

// assistant returns the assistant message id; an event about a message the
// copy does not hold as an assistant message makes the copy doubtful.
func (h *history) assistant(id string) *messages.Message {
	m := h.find(id)
	if m == nil || m.Role != messages.RoleAssistant {
		h.invalidate()
		return nil
	}
	return m
}

func (h *history) toolPart(assistantID, callID string) *messages.ToolPart {
	m := h.assistant(assistantID)
	if m == nil {
		return nil
	}
	tp := partOf(m, callID)
	if tp == nil {
		h.invalidate()
	}
	return tp
}

// partOf is the journal's lookup: the newest part with that call ID.
func partOf(m *messages.Message, callID string) *messages.ToolPart {
	for i := len(m.Parts) - 1; i >= 0; i-- {
		if t := m.Parts[i].Tool; t != nil && t.CallID == callID {
			return t
		}
	}
	return nil
}

func (a *sessionActor) pendingEntry(messageID string) *persistence.InboxEntry {
	for i := range a.pending {
		if a.pending[i].MessageID == messageID {
			return &a.pending[i]
		}
	}
	return nil
}
