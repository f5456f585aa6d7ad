package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/sessionrt/sessionrt/messages"
)

// Reading only what is new. ModelHistory reads and decodes a session's whole
// projected history on every call; a session's owner, which is its only
// writer, can instead load it once (LoadHistory) and keep it current from
// what each of its appends reports (AppendProjected → History.Apply).

// AppendResult is what a committed AppendProjected wrote.
type AppendResult struct {
	FirstSeq, LastSeq int64 // the seqs the events were given
	// Messages are the projected messages the append created or changed,
	// each exactly as a read would now return it (decoded from the stored
	// body), ordered by (Seq, Index). Messages created earlier but changed
	// by this append (an assistant message whose tool settled) have their
	// original Seq and Index.
	Messages []Message
}

// AppendProjected is Append that also reports the projected messages it
// wrote (AppendResult). Same rules, errors and cost in statements; the
// messages are decoded from the bodies the append stored.
func (j *Journal) AppendProjected(ctx context.Context, sessionID string, expectedSeq, ownerEpoch int64, events ...messages.Event) (AppendResult, error) {
	var written []Message
	last, err := j.appendTx(ctx, sessionID, expectedSeq, ownerEpoch, events, nil, &written)
	if err != nil {
		return AppendResult{}, fmt.Errorf("append session %s after seq %d: %w", sessionID, expectedSeq, err)
	}
	return AppendResult{FirstSeq: expectedSeq + 1, LastSeq: last, Messages: written}, nil
}

// History is an in-memory copy of one session's model-visible history (what
// ModelHistory returns), kept current by applying the owner's appends. It is
// not safe for concurrent use. It is only as current as the appends applied
// to it: load it while no other writer appends (after Acquire), apply every
// append in order, and reload after an append that failed with anything but
// a refusal (ErrConflict, ErrFenced, ErrProjection, ErrPromptConflict and
// ErrBacklogFull write nothing).
type History struct {
	sessionID   string
	head        int64 // last seq applied
	historySeq  int64 // latest compaction (history starts there)
	baselineSeq int64 // current epoch's baseline seq, when hasEpoch
	hasEpoch    bool
	msgs        []Message // Seq >= historySeq, ordered by (Seq, Index)
}

// LoadHistory reads a session's model-visible history with the stream head
// it belongs to. ErrNotFound when the session was never created.
func (j *Journal) LoadHistory(ctx context.Context, sessionID string) (*History, error) {
	h := &History{sessionID: sessionID}
	// The head first: if an append slips in before the messages are read,
	// the copy holds more than head says, and applying that append again
	// (FirstSeq = head+1) replaces its messages with the same values.
	var epoch int64
	if err := j.db.QueryRowContext(ctx, j.n.q(qStream), sessionID).Scan(&h.head, &epoch); errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("load history of %s: %w", sessionID, err)
	}
	if err := j.db.QueryRowContext(ctx, j.n.q(qHistoryState), sessionID).Scan(&h.historySeq); errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("load history of %s: %w", sessionID, err)
	}
	ep, ok, err := j.Epoch(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	h.hasEpoch, h.baselineSeq = ok, ep.BaselineSeq
	rows, err := j.db.QueryContext(ctx, j.n.q(qMessagesFrom), sessionID, h.historySeq)
	if err != nil {
		return nil, fmt.Errorf("load history of %s: %w", sessionID, err)
	}
	if h.msgs, _, err = scanMessages(rows, sessionID, nil, 0); err != nil {
		return nil, fmt.Errorf("load history of %s: %w", sessionID, err)
	}
	return h, nil
}

// Result is the AppendResult of an admission: its PromptAdmitted event at
// AdmittedSeq, which writes no message; zero for a duplicate, which wrote
// nothing.
func (r Receipt) Result() AppendResult {
	if r.Duplicate {
		return AppendResult{}
	}
	return AppendResult{FirstSeq: r.AdmittedSeq, LastSeq: r.AdmittedSeq}
}

// SessionID is the session the history belongs to.
func (h *History) SessionID() string { return h.sessionID }

// Head is the last seq the copy reflects.
func (h *History) Head() int64 { return h.head }

// Apply brings the copy forward by one committed append: events are the
// events passed to AppendProjected and r its result. Every append to the
// session must be applied, in order: an admission as
// h.Apply([]messages.Event{a}, receipt.Result()) (a duplicate's zero result
// changes nothing). An append that does not continue the copy
// (r.FirstSeq != Head()+1) is refused with an error and changes nothing:
// reload.
func (h *History) Apply(events []messages.Event, r AppendResult) error {
	if r.FirstSeq == 0 && r.LastSeq == 0 && len(r.Messages) == 0 {
		return nil // nothing was written (a duplicate admission)
	}
	if r.FirstSeq != h.head+1 || r.LastSeq != h.head+int64(len(events)) {
		return fmt.Errorf("history of %s is at seq %d; append of seqs %d..%d (%d events) does not continue it",
			h.sessionID, h.head, r.FirstSeq, r.LastSeq, len(events))
	}
	for i, ev := range events {
		seq := r.FirstSeq + int64(i)
		switch ev.(type) {
		case messages.ContextEpochInitialized, messages.ContextEpochReplaced:
			h.hasEpoch, h.baselineSeq = true, seq
		case messages.ContextEpochCleared, messages.Moved:
			h.hasEpoch, h.baselineSeq = false, 0
		case messages.CompactionEnded:
			h.historySeq = seq
		}
	}
	if n := h.firstFrom(h.historySeq); n > 0 {
		h.msgs = slices.Delete(h.msgs, 0, n)
	}
	for _, m := range r.Messages {
		if m.Seq < h.historySeq {
			continue // before the latest compaction: not model-visible
		}
		i, found := slices.BinarySearchFunc(h.msgs, m, cmpMessage)
		if found {
			h.msgs[i] = m
		} else {
			h.msgs = slices.Insert(h.msgs, i, m)
		}
	}
	h.head = r.LastSeq
	return nil
}

// firstFrom is the index of the first message with Seq >= seq.
func (h *History) firstFrom(seq int64) int {
	i, _ := slices.BinarySearchFunc(h.msgs, Message{Seq: seq}, cmpMessage)
	return i
}

// Model is the model-visible history, as ModelHistory would return it at
// Head(): messages from the latest compaction on, without the Mid-
// Conversation System Messages from before the current epoch's baseline.
// The slice is new; the messages share their parts with the copy, so do
// not modify them.
func (h *History) Model() []Message {
	out := make([]Message, 0, len(h.msgs))
	for _, m := range h.msgs {
		if h.hasEpoch && m.Role == RoleSystem && m.Seq < h.baselineSeq {
			continue
		}
		out = append(out, m)
	}
	return out
}
