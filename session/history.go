package session

import (
	"fmt"

	"github.com/sessionrt/sessionrt/messages"
)

// History is the session's model-visible history as the journal's
// ModelHistory reads it: the messages since the last completed compaction,
// without the mid-conversation system messages a newer baseline restates.
//
// It is either Complete (folded from the session's first event, or from
// creation on: it then also keeps the superseded system messages, so a
// cleared epoch shows them again as the journal does), loaded (read back
// with ModelHistory: everything but the superseded messages), or not
// Loaded at all. An event a loaded copy cannot model (a cleared epoch, an
// event about a message it does not hold) unloads it: the owner reads it
// again rather than guess.
type History struct {
	Loaded bool
	// Complete: also holds Superseded; never needs to be read again.
	Complete bool
	Msgs     []messages.Message
	// Superseded are the system messages since the boundary that a newer
	// baseline restates (kept when Complete).
	Superseded []messages.Message
	// Reverted are the messages a committed revert hides (kept when
	// Complete, so a clear brings them back).
	Reverted []messages.Message
	// Through is the last seq applied. Events up to it were applied ahead
	// of their append (ApplyAhead) and are skipped when the append lands.
	Through int64
}

// Load sets the history read back from the journal at seq through.
func (h *History) Load(msgs []messages.Message, through int64) {
	*h = History{Loaded: true, Msgs: msgs, Through: through}
}

// Unload drops the copy: the next reader loads it again.
func (h *History) Unload() { *h = History{} }

// ApplyAhead applies events to the history only, at the seqs first,
// first+1, … they will get when appended, before they are: a request built
// now shows what the very append that carries them will make durable. The
// rest of the state changes when they are applied for real (Apply), which
// then skips them here. If that append fails, Unload.
func (s *State) ApplyAhead(first int64, evs []messages.Event) {
	for i, ev := range evs {
		s.History.apply(s, first+int64(i), ev)
	}
}

// apply advances the history by one event, as the journal's projector
// changes the rows ModelHistory reads. It runs before the rest of Apply,
// while a promoted prompt is still pending.
func (h *History) apply(s *State, seq int64, ev messages.Event) {
	if _, created := ev.(messages.SessionCreated); created {
		*h = History{Loaded: true, Complete: true, Through: seq}
		return
	}
	if !h.Loaded || seq <= h.Through {
		return
	}
	h.Through = seq
	switch e := ev.(type) {
	case messages.PromptPromoted:
		for i, id := range e.MessageIDs {
			p := s.PendingInput(id)
			if p == nil {
				h.Unload() // not ours to know: read it back
				return
			}
			pr := p.Prompt
			h.Msgs = append(h.Msgs, messages.Message{ID: id, Seq: seq, Index: i, Role: messages.RoleUser, Prompt: &pr, Delivery: p.Delivery})
		}
	case messages.ContextUpdated:
		id := e.MessageID
		if id == "" {
			id = fmt.Sprintf("ctx_%d", seq)
		}
		h.Msgs = append(h.Msgs, messages.Message{ID: id, Seq: seq, Role: messages.RoleSystem, Text: e.Text})
	case messages.ContextEpochInitialized, messages.ContextEpochReplaced:
		// A new baseline restates every earlier chronological update.
		kept := h.Msgs[:0]
		for _, m := range h.Msgs {
			if m.Role != messages.RoleSystem || m.Seq >= seq {
				kept = append(kept, m)
			} else if h.Complete {
				h.Superseded = append(h.Superseded, m)
			}
		}
		clear(h.Msgs[len(kept):])
		h.Msgs = kept
	case messages.ContextEpochCleared, messages.Moved:
		// Without an epoch the journal shows the superseded updates again.
		if !h.Complete {
			h.Unload() // rare enough to read back rather than model
			return
		}
		h.restoreSuperseded()
	case messages.CompactionEnded:
		id := e.CompactionID
		if id == "" {
			id = fmt.Sprintf("cmp_%d", seq)
		}
		clear(h.Msgs)
		h.Superseded = nil
		h.Msgs = append(h.Msgs[:0], messages.Message{ID: id, Seq: seq, Role: messages.RoleCompaction, Text: e.Summary, RecentContext: e.RecentContext})
	case messages.HistoryCopied:
		if e.Boundary() {
			clear(h.Msgs)
			h.Msgs, h.Superseded = h.Msgs[:0], nil
		}
		h.Msgs = append(h.Msgs, e.At(seq)...)
	case messages.TurnStarted:
		h.Msgs = append(h.Msgs, messages.Message{ID: e.AssistantMessageID, Seq: seq, Role: messages.RoleAssistant, Agent: e.Agent, Model: e.Model})
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
	case messages.RevertCommitted:
		o := s.Reverts.Open
		if o == nil || !h.Complete {
			h.Unload() // a loaded copy is read back with the revert applied
			return
		}
		kept := h.Msgs[:0]
		for _, m := range h.Msgs {
			if !before(m, o.Boundary()) {
				h.Reverted = append(h.Reverted, m)
			} else {
				kept = append(kept, m)
			}
		}
		clear(h.Msgs[len(kept):])
		h.Msgs = kept
	case messages.RevertCleared:
		if o := s.Reverts.Open; o != nil && o.Committed {
			if !h.Complete {
				h.Unload()
				return
			}
			h.Msgs = append(h.Msgs, h.Reverted...) // all after the kept ones
			h.Reverted = nil
		}
	case messages.RevertFinalized:
		h.Reverted = nil
	case messages.RevertStaged, messages.RevertRestored:
		// no model-visible message changes until a commit
	case messages.PromptAdmitted, messages.AgentSwitched, messages.ModelSwitched, messages.SessionRenamed, messages.SessionDeleted,
		messages.ToolInputStarted, messages.ToolInputEnded, messages.PermissionAsked, messages.PermissionReplied,
		messages.QuestionAsked, messages.QuestionReplied, messages.QuestionRejected,
		messages.CompactionStarted, messages.Interrupted, messages.DrainFailed, messages.Idle:
		// no model-visible message changes
	default:
		h.Unload()
	}
}

// restoreSuperseded puts the superseded system messages back in event order.
func (h *History) restoreSuperseded() {
	if len(h.Superseded) == 0 {
		return
	}
	merged := make([]messages.Message, 0, len(h.Msgs)+len(h.Superseded))
	i, j := 0, 0
	for i < len(h.Msgs) || j < len(h.Superseded) {
		if j == len(h.Superseded) || (i < len(h.Msgs) && before(h.Msgs[i], h.Superseded[j])) {
			merged = append(merged, h.Msgs[i])
			i++
		} else {
			merged = append(merged, h.Superseded[j])
			j++
		}
	}
	h.Msgs, h.Superseded = merged, nil
}

func before(a, b messages.Message) bool {
	return a.Seq < b.Seq || (a.Seq == b.Seq && a.Index < b.Index)
}

// find returns the message with id, newest first (the open turn is last).
// A message before the history boundary is not found: its changes are
// invisible to ModelHistory too.
func (h *History) find(id string) *messages.Message {
	for i := len(h.Msgs) - 1; i >= 0; i-- {
		if h.Msgs[i].ID == id {
			return &h.Msgs[i]
		}
	}
	return nil
}

// assistant returns the assistant message id. A complete history that does
// not hold it knows the message lies before the boundary (nothing visible
// changes); a loaded copy cannot tell and unloads.
func (h *History) assistant(id string) *messages.Message {
	m := h.find(id)
	if m == nil || m.Role != messages.RoleAssistant {
		if !h.Complete {
			h.Unload()
		}
		return nil
	}
	return m
}

func (h *History) toolPart(assistantID, callID string) *messages.ToolPart {
	m := h.assistant(assistantID)
	if m == nil {
		return nil
	}
	tp := partOf(m, callID)
	if tp == nil && !h.Complete {
		h.Unload()
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
