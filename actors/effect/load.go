package effect

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/session"
)

// The readers below are what an activation starts from: the session as
// its journal holds it. Unlike the executors they do not post: the
// activation reads the state before it takes any message (leftovers are
// settled and the restart policy applied before a queued command sees the
// session), so the actor calls them and waits.
//
// They read projection by projection, not in one snapshot: the caller
// owns the session (AcquireSession), so no other activation writes
// between the reads without fencing the caller's next append.

// Row reads session id's sessions row with the stream head; found is false
// for a session never created, or deleted.
func Row(ctx context.Context, j *persistence.Journal, id string) (row persistence.Session, found bool, err error) {
	row, err = j.Session(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return persistence.Session{}, false, nil
	}
	if err != nil {
		return persistence.Session{}, false, fmt.Errorf("load: %w", err)
	}
	return row, true, nil
}

// Load reads the state of the session whose sessions row is row (as
// AcquireSession or Row read it; row.LastSeq is the stream head): the
// state session.State.Apply folds from its events, but for what only
// matters when work was left open. The model-visible history, and the
// unfinished turns it shows, are read only when a tool call is open or
// the row says a drain is (then Leftovers decides on the turns, and the
// resumed drain reads the history anyway); otherwise History is not
// Loaded and Turns is empty.
func Load(ctx context.Context, j *persistence.Journal, row persistence.Session) (session.State, error) {
	id := row.ID
	st := session.State{Exists: true, Row: session.Row{ID: row.ID, Location: row.Location, Agent: row.Agent, Model: row.Model, Title: row.Title,
		Status: session.Status(row.Status), CreatedSeq: row.CreatedSeq, HistorySeq: row.HistorySeq, LastSeq: row.LastSeq}}
	inbox, err := j.PendingInbox(ctx, id)
	if err != nil {
		return session.State{}, fmt.Errorf("load inbox: %w", err)
	}
	for _, in := range inbox {
		st.Pending = append(st.Pending, session.InboxEntry{MessageID: in.MessageID, AdmittedSeq: in.AdmittedSeq, Delivery: in.Delivery, Prompt: in.Prompt, Held: in.Held})
	}
	ep, ok, err := j.Epoch(ctx, id)
	if err != nil {
		return session.State{}, fmt.Errorf("load context epoch: %w", err)
	}
	if ok {
		st.Epoch = &session.Epoch{Revision: ep.Revision, Baseline: ep.Baseline, Snapshot: ep.Snapshot, Location: ep.Location, BaselineSeq: ep.BaselineSeq, UpdatedSeq: ep.UpdatedSeq}
	}
	if st.Reverts, err = j.Reverts(ctx, id); err != nil {
		return session.State{}, fmt.Errorf("load reverts: %w", err)
	}
	if st.Questions, err = Questions(ctx, j, id); err != nil {
		return session.State{}, fmt.Errorf("load questions: %w", err)
	}
	if err := loadOpen(ctx, j, &st); err != nil {
		return session.State{}, err
	}
	return st, nil
}

// loadOpen reads what the state holds of open work (session.State Calls,
// Asks, Turns): the calls still pending or running, the unanswered
// requests of those calls, and, when a drain or a call was left open, the
// unfinished turns (only then do they decide anything; the history read
// for them serves the resumed drain too).
func loadOpen(ctx context.Context, j *persistence.Journal, st *session.State) error {
	id := st.Row.ID
	open, err := j.ToolCalls(ctx, id, messages.ToolStatePending, messages.ToolStateRunning)
	if err != nil {
		return fmt.Errorf("find open tool calls: %w", err)
	}
	for _, c := range open {
		if st.Calls == nil {
			st.Calls = map[session.CallKey]bool{}
		}
		st.Calls[session.CallKey{AssistantMessageID: c.AssistantMessageID, CallID: c.CallID}] = c.State == messages.ToolStatePending
	}
	if len(open) > 0 {
		asked, err := j.PendingPermissions(ctx, id)
		if err != nil {
			return fmt.Errorf("find open permission requests: %w", err)
		}
		for _, p := range asked {
			k := session.CallKey{AssistantMessageID: p.AssistantMessageID, CallID: p.CallID}
			if _, open := st.Calls[k]; open {
				if st.Asks == nil {
					st.Asks = map[string]session.CallKey{}
				}
				st.Asks[p.RequestID] = k
			}
		}
	}
	if len(open) == 0 && st.Row.Status != session.StatusBusy {
		return nil
	}
	if st.History, err = History(ctx, j, id, st.Row.LastSeq); err != nil {
		return fmt.Errorf("find unfinished turns: %w", err)
	}
	for _, m := range st.History.Msgs {
		if m.Role == messages.RoleAssistant && !m.Finished {
			st.Turns = append(st.Turns, m.ID)
		}
	}
	return nil
}

// History reads session id's model-visible history (ModelHistory) as a
// loaded session.History at through, the stream's last seq.
func History(ctx context.Context, j *persistence.Journal, id string, through int64) (session.History, error) {
	msgs, err := j.ModelHistory(ctx, id)
	if err != nil {
		return session.History{}, err
	}
	var h session.History
	h.Load(msgs, through)
	return h, nil
}

// Questions reads the session's open question requests (the journal's
// pending questions rows) as the session state holds them.
func Questions(ctx context.Context, j *persistence.Journal, id string) (map[string]session.Question, error) {
	qs, err := j.Questions(ctx, id)
	if err != nil {
		return nil, err
	}
	var out map[string]session.Question
	for _, q := range qs {
		if q.State != "pending" {
			continue
		}
		if out == nil {
			out = map[string]session.Question{}
		}
		out[q.RequestID] = session.Question{AssistantMessageID: q.AssistantMessageID, CallID: q.CallID, Questions: q.Questions, Seq: q.Seq}
	}
	return out, nil
}

// Ended says how the session's last drain ended as its journal says, for
// a WaitIdle on an activation that ran no drain itself (after a restart
// or a passivation): ok when a DrainFailed or an Interrupted comes just
// before the last Idle (seq, the stream's last seq), with its message and
// kind; not ok when it ended normally or cannot be read.
func Ended(ctx context.Context, j *persistence.Journal, id string, seq int64) (msg string, kind session.OutcomeKind, ok bool) {
	if seq < 2 {
		return "", "", false
	}
	evs, err := j.ReadEvents(ctx, id, seq-2, 2)
	if err != nil || len(evs) != 2 {
		return "", "", false
	}
	if _, idle := evs[1].Event.(messages.Idle); !idle {
		return "", "", false
	}
	switch e := evs[0].Event.(type) {
	case messages.DrainFailed:
		return e.Message, session.OutcomeKind(e.Kind), true
	case messages.Interrupted:
		return "interrupted", session.Interrupted, true
	}
	return "", "", false
}
