package session

import (
	"fmt"

	"github.com/sessionrt/sessionrt/messages"
)

// Status is a session's drain status, as the journal's sessions row holds it.
type Status string

const (
	// StatusIdle: no drain in progress (never drained, or ended with Idle or Interrupted).
	StatusIdle Status = "idle"
	// StatusBusy: a drain started (PromptPromoted, TurnStarted, CompactionStarted)
	// and has not ended; a session found busy at activation was mid-drain.
	StatusBusy Status = "busy"
)

// Row is the session's own record: where it works, with which agent and
// model, and the positions in its stream that matter.
type Row struct {
	ID         string
	Location   string
	Agent      string
	Model      messages.ModelRef
	Title      string // the client's title ("": none)
	Status     Status
	CreatedSeq int64
	HistorySeq int64 // seq of the latest completed compaction (the history boundary); 0 none
	LastSeq    int64 // the stream's last event seq
}

// InboxEntry is one admitted prompt that is not yet promoted.
type InboxEntry struct {
	MessageID   string
	AdmittedSeq int64
	Delivery    messages.Delivery
	Prompt      messages.Prompt
	// Held: no drain is owed for it, so start-up recovery leaves it (the
	// client held it back, or it was pending when the drain was
	// interrupted); the journal's session_input.held.
	Held bool
}

// Epoch is the active Context Epoch.
type Epoch struct {
	Revision    int64
	Baseline    string // verbatim provider-cache prefix
	Snapshot    []byte
	Location    string
	BaselineSeq int64 // seq of the Initialized/Replaced event
	UpdatedSeq  int64 // seq of the last event that changed it
}

// State is everything a session decides on, folded from its events by
// Apply. The same fold serves replay (from seq 1, or from projections read
// back) and the live events a drain appends, so the two cannot drift.
type State struct {
	// Exists is false until SessionCreated and after SessionDeleted.
	Exists bool
	Row    Row
	// Pending is the inbox: admitted, not yet promoted prompts in admission order.
	Pending []InboxEntry
	// Epoch is nil when no Context Epoch is active.
	Epoch *Epoch
	// History is the model-visible history (see History).
	History History
	// Reverts is the session's revert state (the journal's session_reverts).
	Reverts messages.Reverts
	// Questions are the open question requests by request ID: asked
	// (QuestionAsked) and neither replied nor rejected yet, the journal's
	// questions rows in state pending. Their calls stay open across
	// drains and restarts: the user's reply settles them (QuestionReply).
	Questions map[string]Question
	// Calls are the recorded tool calls not settled yet, as the journal's
	// tool_calls rows pending (only their input streamed, true) or running
	// (ToolCalled, false). A dead owner leaves them open; the next one
	// fails them (Leftovers) unless a question call awaits its answer.
	Calls map[CallKey]bool
	// Asks are the unanswered permission requests of open calls, by
	// request ID. A call's settlement closes its requests in the same
	// transaction (stepToolSettled), so one whose call settled can only
	// be left over by an older journal: nobody can act on it, and it is
	// not kept.
	Asks map[string]CallKey
	// Turns are the assistant messages since the history boundary whose
	// turn neither ended nor failed, in the order they started (the
	// unfinished assistant messages of ModelHistory). The actor loads
	// them only for a session a drain or a call was left open in: only
	// then do they decide anything (Leftovers).
	Turns []string
}

// CallKey names a tool call: call IDs are the provider's, unique within
// one assistant message only.
type CallKey struct{ AssistantMessageID, CallID string }

// Question is an open question request: the question tool call that asked
// it and what it asked.
type Question struct {
	AssistantMessageID string
	CallID             string
	Questions          []messages.Question
	Seq                int64 // of its QuestionAsked
}

// NewState is the state of session id before its first event.
func NewState(id string) State { return State{Row: Row{ID: id}} }

// Apply folds the event at seq into the state, exactly as the journal's
// projector changes the rows the state mirrors (sessions, session_input,
// context_epochs, the model-visible session_messages, tool_calls,
// permissions, the pending questions). An error says the event does not fit the state (the
// journal would have refused it); the state is then unreliable and must be
// read again.
func (s *State) Apply(seq int64, ev messages.Event) error {
	if seq <= s.Row.LastSeq {
		return fmt.Errorf("session %s: event %s at seq %d: state is already at %d", s.Row.ID, ev.EventType(), seq, s.Row.LastSeq)
	}
	// The history first: a promotion reads its prompts from the inbox.
	s.History.apply(s, seq, ev)
	switch e := ev.(type) {
	case messages.SessionCreated:
		s.Exists = true
		s.Row = Row{ID: s.Row.ID, Location: e.Location, Agent: e.Agent, Model: e.Model, Title: e.Title, Status: StatusIdle, CreatedSeq: seq}
	case messages.PromptAdmitted:
		s.Pending = append(s.Pending, InboxEntry{MessageID: e.MessageID, AdmittedSeq: seq, Delivery: e.Delivery, Prompt: e.Prompt, Held: e.Held})
	case messages.PromptPromoted:
		for _, id := range e.MessageIDs {
			if s.pendingIndex(id) < 0 {
				return fmt.Errorf("session %s seq %d: promoted prompt %s is not pending", s.Row.ID, seq, id)
			}
		}
		kept := s.Pending[:0]
		for _, p := range s.Pending {
			if !promoted(e.MessageIDs, p.MessageID) {
				kept = append(kept, p)
			}
		}
		clear(s.Pending[len(kept):])
		s.Pending = kept
		s.Row.Status = StatusBusy
	case messages.ContextEpochInitialized:
		s.Epoch = &Epoch{Revision: e.Revision, Baseline: e.Baseline, Snapshot: e.Snapshot, Location: e.Location, BaselineSeq: seq, UpdatedSeq: seq}
	case messages.ContextEpochReplaced:
		s.Epoch = &Epoch{Revision: e.Revision, Baseline: e.Baseline, Snapshot: e.Snapshot, Location: e.Location, BaselineSeq: seq, UpdatedSeq: seq}
	case messages.ContextEpochCleared:
		s.Epoch = nil
	case messages.ContextUpdated:
		if s.Epoch == nil {
			return fmt.Errorf("session %s seq %d: context update without an epoch", s.Row.ID, seq)
		}
		// The projection counts every update as a revision.
		s.Epoch.Snapshot, s.Epoch.UpdatedSeq = e.Snapshot, seq
		s.Epoch.Revision++
	case messages.AgentSwitched:
		s.Row.Agent = e.Agent
	case messages.SessionRenamed:
		s.Row.Title = e.Title
	case messages.SessionDeleted:
		// Gone for every command, as the journal's sessions row is for
		// every read (deleted_seq); the events stay.
		s.Exists = false
	case messages.ModelSwitched:
		s.Row.Model = e.Model
	case messages.Moved:
		s.Row.Location = e.To
		s.Epoch = nil // the destination initializes a fresh baseline
	case messages.CompactionStarted:
		s.Row.Status = StatusBusy
	case messages.QuestionAsked:
		if e.RequestID == "" {
			return s.refuse(seq, ev, "a question request without an ID")
		}
		if _, open := s.Questions[e.RequestID]; open {
			return s.refuse(seq, ev, "question request "+e.RequestID+" is already open")
		}
		if s.Questions == nil {
			s.Questions = map[string]Question{}
		}
		s.Questions[e.RequestID] = Question{AssistantMessageID: e.AssistantMessageID, CallID: e.CallID, Questions: e.Questions, Seq: seq}
	case messages.QuestionReplied:
		if _, open := s.Questions[e.RequestID]; !open {
			return s.refuse(seq, ev, "question request "+e.RequestID+" is not open")
		}
		delete(s.Questions, e.RequestID)
		// An answer is owed a drain: busy from the reply on, as the journal.
		s.Row.Status = StatusBusy
	case messages.QuestionRejected:
		if _, open := s.Questions[e.RequestID]; !open {
			return s.refuse(seq, ev, "question request "+e.RequestID+" is not open")
		}
		delete(s.Questions, e.RequestID)
	case messages.CompactionEnded:
		s.Row.HistorySeq = seq
		s.Turns = nil // behind the boundary, as in ModelHistory
	case messages.HistoryCopied:
		if err := e.Check(); err != nil {
			return s.refuse(seq, ev, err.Error())
		}
		if e.Boundary() {
			s.Row.HistorySeq = seq
			s.Turns = nil
		}
	case messages.TurnStarted:
		s.Row.Status = StatusBusy
		s.Turns = append(s.Turns, e.AssistantMessageID)
	case messages.TurnEnded:
		s.Turns = without(s.Turns, e.AssistantMessageID)
	case messages.TurnFailed:
		s.Turns = without(s.Turns, e.AssistantMessageID)
	case messages.ToolInputStarted:
		s.openCall(CallKey{e.AssistantMessageID, e.CallID}, true)
	case messages.ToolInputEnded:
		s.openCall(CallKey{e.AssistantMessageID, e.CallID}, true)
	case messages.ToolCalled:
		s.openCall(CallKey{e.AssistantMessageID, e.CallID}, false)
	case messages.ToolSucceeded:
		s.settleCall(CallKey{e.AssistantMessageID, e.CallID})
	case messages.ToolFailed:
		s.settleCall(CallKey{e.AssistantMessageID, e.CallID})
	case messages.PermissionAsked:
		if k := (CallKey{e.AssistantMessageID, e.CallID}); hasKey(s.Calls, k) {
			if s.Asks == nil {
				s.Asks = map[string]CallKey{}
			}
			s.Asks[e.RequestID] = k
		}
	case messages.PermissionReplied:
		delete(s.Asks, e.RequestID)
	case messages.Interrupted:
		// The input the interrupt leaves pending waits for a fresh wake,
		// not for start-up recovery (as the projector marks it).
		s.Row.Status = StatusIdle
		for i := range s.Pending {
			s.Pending[i].Held = true
		}
	case messages.Idle:
		s.Row.Status = StatusIdle
	case messages.DrainFailed:
		// the Idle that follows ends the drain
	case messages.RevertStaged, messages.RevertCommitted, messages.RevertCleared, messages.RevertRestored, messages.RevertFinalized:
		if err := s.Reverts.Apply(s.Row.ID, seq, e); err != nil {
			s.Row.LastSeq = seq
			return err
		}
	case messages.TextEnded, messages.ReasoningEnded, messages.ToolProgress:
		// the history only
	default:
		s.Row.LastSeq = seq
		return fmt.Errorf("session %s seq %d: no fold for event %s", s.Row.ID, seq, ev.EventType())
	}
	s.Row.LastSeq = seq
	return nil
}

// openCall records a call as pending (its input streams) or running. The
// journal refuses what does not fit (a call called twice); the fold only
// keeps what is open.
func (s *State) openCall(k CallKey, pending bool) {
	if s.Calls == nil {
		s.Calls = map[CallKey]bool{}
	}
	if was, open := s.Calls[k]; open && !was {
		return // running already: its input does not make it pending again
	}
	s.Calls[k] = pending
}

// settleCall closes a call and whatever permission request of it is
// still open.
func (s *State) settleCall(k CallKey) {
	if _, open := s.Calls[k]; !open {
		return
	}
	delete(s.Calls, k)
	for id, c := range s.Asks {
		if c == k {
			delete(s.Asks, id)
		}
	}
}

func hasKey(m map[CallKey]bool, k CallKey) bool {
	_, ok := m[k]
	return ok
}

func without(ids []string, id string) []string {
	for i, x := range ids {
		if x == id {
			return append(ids[:i:i], ids[i+1:]...)
		}
	}
	return ids
}

// refuse is Apply's error for an event that does not fit the state; the
// state is at seq all the same (the caller reads it again).
func (s *State) refuse(seq int64, ev messages.Event, why string) error {
	s.Row.LastSeq = seq
	return fmt.Errorf("session %s seq %d: %s: %s", s.Row.ID, seq, ev.EventType(), why)
}

// QuestionCall reports whether the call of assistant message assistant
// asked a question that is still open (its answer is awaited).
func (s *State) QuestionCall(assistant, call string) bool {
	for _, q := range s.Questions {
		if q.AssistantMessageID == assistant && q.CallID == call {
			return true
		}
	}
	return false
}

// PendingInput returns the pending prompt with that message ID, or nil.
func (s *State) PendingInput(messageID string) *InboxEntry {
	if i := s.pendingIndex(messageID); i >= 0 {
		return &s.Pending[i]
	}
	return nil
}

func (s *State) pendingIndex(messageID string) int {
	for i := range s.Pending {
		if s.Pending[i].MessageID == messageID {
			return i
		}
	}
	return -1
}

func promoted(ids []string, id string) bool {
	for _, p := range ids {
		if p == id {
			return true
		}
	}
	return false
}
