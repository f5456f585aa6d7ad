package effect

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// Journal is one activation's port to its session's journal: the
// ownership epoch that fences its writes and the stream's last seq as the
// activation knows it live here, not in the actor. Every write is fenced
// by the ownership and expects that seq, so a write that another
// activation (another member, a newer incarnation) overtook fails as
// JournalStale instead of landing after the other's.
//
// Like Load, its calls block: the actor makes them on its mailbox, since
// the next message must see what they wrote.
type Journal struct {
	Ctx       context.Context // the process's sessions: cancelled when they stop
	J         *persistence.Journal
	ID, Owner string           // the session; this process in ownership records
	Metrics   *metrics.Runtime // nil records nothing
	// Appends and HistoryLoads count the appends made and the
	// model-visible histories read; nil counts nothing.
	Appends, HistoryLoads *atomic.Int64

	epoch, seq int64
}

// Seq is the stream's last seq as this activation knows it.
func (p *Journal) Seq() int64 { return p.seq }

// Epoch is this activation's ownership epoch (0 before Acquire).
func (p *Journal) Epoch() int64 { return p.epoch }

// JournalFault says what a failed journal call means to the activation.
type JournalFault uint8

const (
	// JournalRefused: the journal refused what was asked and would again
	// (an event a projection refuses or that does not encode), or the
	// process is stopping.
	JournalRefused JournalFault = iota
	// JournalStale: another activation owns the session (fenced) or
	// wrote since (conflict): nothing was written, and this activation
	// must stop; the next command activates afresh.
	JournalStale
	// JournalFailed: the journal's own failure (a full disk, a lost
	// database): the same call may succeed later. After an ambiguous
	// commit the journal may even hold the write.
	JournalFailed
	// JournalDuplicate: an ID reused, a prompt's with other content or a
	// deleted session's.
	JournalDuplicate
	// JournalFull: the inbox is at its limit.
	JournalFull
)

// JournalError is a failed journal call with its fault. Err is the
// journal's error; the message says it as the activation's client hears
// it (Err's own when empty).
type JournalError struct {
	Fault JournalFault
	Err   error
	msg   string
}

func (e *JournalError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.Err.Error()
}

func (e *JournalError) Unwrap() error { return e.Err }

// fault classifies a write's error; a call cancelled because the process
// stops is refused, not failed: nobody waits for the journal then.
func (p *Journal) fault(err error) JournalFault {
	switch {
	case errors.Is(err, persistence.ErrFenced), errors.Is(err, persistence.ErrConflict):
		return JournalStale
	case errors.Is(err, persistence.ErrPromptConflict), errors.Is(err, persistence.ErrDeleted):
		return JournalDuplicate
	case errors.Is(err, persistence.ErrBacklogFull):
		return JournalFull
	case errors.Is(err, persistence.ErrProjection), errors.Is(err, persistence.ErrInvalidEvent),
		errors.Is(err, context.Canceled), p.Ctx.Err() != nil:
		return JournalRefused
	}
	return JournalFailed
}

// Acquire takes the session's ownership (fencing every earlier
// activation's writes) and reads its state (Load). A session never
// created, or deleted, reads as session.NewState (Exists false).
// Failures of the reads after the ownership are plain errors.
func (p *Journal) Acquire() (session.State, error) {
	// The sessions row comes with the ownership, read in its transaction.
	own, row, found, err := p.J.AcquireSession(p.Ctx, p.ID, p.Owner)
	if err != nil {
		return session.State{}, &JournalError{Fault: p.fault(err), Err: err, msg: fmt.Sprintf("session %s: acquire: %v", p.ID, err)}
	}
	p.epoch, p.seq = own.Epoch, own.LastSeq
	return p.load(row, found)
}

// Reload reads the session's state again (an activation whose state is in
// doubt).
func (p *Journal) Reload() (session.State, error) {
	row, found, err := Row(p.Ctx, p.J, p.ID)
	if err != nil {
		return session.State{}, fmt.Errorf("session %s: %w", p.ID, err)
	}
	return p.load(row, found)
}

func (p *Journal) load(row persistence.Session, found bool) (session.State, error) {
	if !found {
		return session.NewState(p.ID), nil
	}
	p.seq = max(p.seq, row.LastSeq)
	st, err := Load(p.Ctx, p.J, row)
	if err != nil {
		return session.State{}, fmt.Errorf("session %s: %w", p.ID, err)
	}
	if st.History.Loaded {
		count(p.HistoryLoads)
	}
	return st, nil
}

// History reads the model-visible history at the last seq (History).
func (p *Journal) History() (session.History, error) {
	h, err := History(p.Ctx, p.J, p.ID, p.seq)
	if err == nil {
		count(p.HistoryLoads)
	}
	return h, err
}

// Append writes events after the last seq in one transaction fenced by
// the ownership and returns the seq of the first; the last seq advances
// only when they were written. Every append's latency is recorded, and a
// committed one's batch size, or a fenced one.
func (p *Journal) Append(events ...messages.Event) (first int64, err error) {
	if len(events) == 0 {
		return p.seq + 1, nil
	}
	start := time.Now()
	last, err := p.J.Append(p.Ctx, p.ID, p.seq, p.epoch, events...)
	if m := p.Metrics; m != nil {
		m.JournalAppended(time.Since(start))
		if err == nil {
			m.JournalBatch(len(events))
		} else if errors.Is(err, persistence.ErrFenced) {
			m.JournalFenced()
		}
	}
	if err != nil {
		e := &JournalError{Fault: p.fault(err), Err: err, msg: fmt.Sprintf("session %s: append: %v", p.ID, err)}
		if e.Fault == JournalStale {
			e.msg = fmt.Sprintf("session %s: session ownership moved to another activation: %v", p.ID, err)
		}
		return 0, e
	}
	count(p.Appends)
	first, p.seq = p.seq+1, last
	return first, nil
}

// Create writes the session's SessionCreated, and with it the history a
// fork copies (persistence's CreateSession: of two racing creates one
// creates) and returns its state as a reload would find it: the fold of
// those events when this call created it (nothing is read), else read, as
// another activation created it. A deleted session's ID is refused as
// JournalDuplicate.
func (p *Journal) Create(ev messages.SessionCreated, copied ...messages.HistoryCopied) (st session.State, created bool, err error) {
	row, created, err := p.J.CreateSession(p.Ctx, p.ID, p.epoch, ev, copied...)
	if errors.Is(err, persistence.ErrDeleted) {
		// The journal keeps a deleted session's events under its ID.
		return st, false, &JournalError{Fault: JournalDuplicate, Err: err,
			msg: fmt.Sprintf("session %s was deleted; its ID cannot be reused (create the session without an ID, or with another one)", p.ID)}
	}
	if err != nil {
		return st, false, &JournalError{Fault: p.fault(err), Err: err}
	}
	if !created {
		st, err = p.Reload()
		return st, false, err
	}
	// The fold of its events gives the row CreateSession wrote, and a
	// complete history.
	st = session.NewState(p.ID)
	_ = st.Apply(1, ev)
	for i, h := range copied {
		_ = st.Apply(int64(2+i), h)
	}
	p.seq = max(p.seq, row.LastSeq)
	return st, true, nil
}

// AdmitPrompt writes a prompt's admission (persistence's AdmitPrompt:
// idempotent by its message ID; limit > 0 refuses it as JournalFull when
// that many prompts are pending). A duplicate writes nothing and leaves
// the last seq alone.
func (p *Journal) AdmitPrompt(ev messages.PromptAdmitted, limit int) (persistence.Receipt, error) {
	rec, err := p.J.AdmitPrompt(p.Ctx, p.ID, p.seq, p.epoch, ev, limit)
	if err != nil {
		return rec, &JournalError{Fault: p.fault(err), Err: err}
	}
	if !rec.Duplicate {
		p.seq = rec.LastSeq
	}
	return rec, nil
}

// Message is where message id sits in the session's stream (persistence's
// MessagePosition); nil when the session has no such message.
func (p *Journal) Message(id string) (*session.MessageAt, error) {
	seq, idx, role, err := p.J.MessagePosition(p.Ctx, p.ID, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &session.MessageAt{Seq: seq, Index: idx, Role: role}, nil
}

// Events reads up to limit of the session's events after seq after.
func (p *Journal) Events(after int64, limit int) ([]messages.Envelope, error) {
	return p.J.ReadEvents(p.Ctx, p.ID, after, limit)
}

// Ended is how the session's last drain ended as its journal says at the
// last seq (Ended).
func (p *Journal) Ended() (msg string, kind session.OutcomeKind, ok bool) {
	return Ended(p.Ctx, p.J, p.ID, p.seq)
}

func count(n *atomic.Int64) {
	if n != nil {
		n.Add(1)
	}
}
