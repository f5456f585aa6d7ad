package persistence

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/messages"
)

// CreateSession appends SessionCreated as seq 1 unless the session already
// exists, and with it the history copied into it (a fork), from seq 2. It returns the session row and whether this call created it; a
// reused ID returns the existing session (its content is not compared), and
// of two racing creates exactly one creates. The existence check runs in the
// append's transaction, so it sees what that transaction would conflict with.
//
// A new ID is the common case: the append is tried first without that
// check (a session exists exactly when its stream is past seq 0, so the
// stream advance refuses a reused ID), and only a refusal looks.
func (j *Journal) CreateSession(ctx context.Context, sessionID string, ownerEpoch int64, c messages.SessionCreated, copied ...messages.HistoryCopied) (Session, bool, error) {
	var existing Session
	pre := func(tx *sql.Tx) (bool, error) {
		if row, err := j.sessionRow(ctx, tx, sessionID, true); err == nil && row.Deleted {
			return false, fmt.Errorf("session %s: %w", sessionID, ErrDeleted)
		}
		s, err := j.readSession(ctx, tx, sessionID)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		existing = s
		return true, err
	}
	evs := []messages.Event{c}
	for _, h := range copied {
		evs = append(evs, h)
	}
	_, _, err := j.appendTx(ctx, sessionID, 0, ownerEpoch, evs, nil)
	for attempt := 0; ; attempt++ {
		switch {
		case err == nil && existing.ID != "":
			return existing, false, nil
		case err == nil:
			// The row this append wrote (in the cache unless evicted at once).
			if s, head, ok := j.cache.session(sessionID); ok && head == int64(len(evs)) {
				s.LastSeq = head
				return s, true, nil
			}
			s, err := j.Session(ctx, sessionID)
			if err != nil {
				return Session{}, false, fmt.Errorf("create session %s: %w", sessionID, err)
			}
			return s, true, nil
		case attempt == 0 || (errors.Is(err, ErrConflict) && attempt < 4):
			// Refused: look whether it exists (or a racing create committed
			// after our snapshot: look again).
			existing = Session{}
			_, _, err = j.appendTx(ctx, sessionID, 0, ownerEpoch, evs, pre)
		default:
			return Session{}, false, fmt.Errorf("create session %s: %w", sessionID, err)
		}
	}
}

var (
	qPendingCount = stmt(`SELECT COUNT(*) FROM {session_input} WHERE session_id = ? AND promoted_seq = 0`)
)

// AdmitPrompt appends PromptAdmitted idempotently by a.MessageID:
//   - a new ID is admitted at expectedSeq+1 (Receipt.AdmittedSeq);
//   - the same ID with the same session, prompt and delivery returns the
//     original receipt (Duplicate=true) and writes nothing;
//   - the same ID with another session, prompt or delivery: ErrPromptConflict.
//
// backlogLimit > 0 refuses a new admission with ErrBacklogFull when that many
// prompts are already pending. Seq and epoch rules are Append's.
//
// A new ID is the common case: the append is tried without looking the ID
// up first (prompt_ids' primary key refuses a reused one inside it). Any
// refusal runs it again the careful way, which looks first, so a reused ID
// is reported as before whatever else the first try ran into.
func (j *Journal) AdmitPrompt(ctx context.Context, sessionID string, expectedSeq, ownerEpoch int64, a messages.PromptAdmitted, backlogLimit int) (Receipt, error) {
	if a.MessageID == "" {
		return Receipt{}, fmt.Errorf("admit to session %s: empty message ID", sessionID)
	}
	if !a.Delivery.Valid() {
		return Receipt{}, fmt.Errorf("admit %s to session %s: delivery %q is neither steer nor queue", a.MessageID, sessionID, a.Delivery)
	}
	r := Receipt{SessionID: sessionID, MessageID: a.MessageID, Delivery: a.Delivery}
	backlog := func(tx *sql.Tx) (bool, error) {
		if backlogLimit <= 0 {
			return false, nil
		}
		var pending int
		if err := tx.QueryRowContext(ctx, j.n.q(qPendingCount), sessionID).Scan(&pending); err != nil {
			return true, err
		}
		if pending >= backlogLimit {
			return true, fmt.Errorf("%w: %d prompts pending, limit %d", ErrBacklogFull, pending, backlogLimit)
		}
		return false, nil
	}
	evs := []messages.Event{a}
	if last, at, err := j.appendTx(ctx, sessionID, expectedSeq, ownerEpoch, evs, backlog); err == nil {
		r.AdmittedSeq, r.LastSeq, r.Admitted = last, last, time.UnixMicro(at).UTC()
		return r, nil
	}
	prompt, err := msgpack.Marshal(a.Prompt)
	if err != nil {
		return Receipt{}, fmt.Errorf("admit %s to session %s: %w", a.MessageID, sessionID, err)
	}
	pre := func(tx *sql.Tx) (bool, error) {
		var owner string
		var admitted int64
		err := tx.QueryRowContext(ctx, j.n.q(qPromptID), a.MessageID).Scan(&owner, &admitted)
		if err == nil {
			if owner != sessionID {
				return true, fmt.Errorf("%w: %s belongs to session %s", ErrPromptConflict, a.MessageID, owner)
			}
			var delivery string
			var stored []byte
			var promoted int64
			if err := tx.QueryRowContext(ctx, j.n.q(qInput), sessionID, admitted).Scan(&delivery, &stored, &promoted); err != nil {
				return true, fmt.Errorf("inbox row of %s: %w", a.MessageID, err)
			}
			if delivery != string(a.Delivery) {
				return true, fmt.Errorf("%w: %s was admitted as %s, not %s", ErrPromptConflict, a.MessageID, delivery, a.Delivery)
			}
			if !bytes.Equal(stored, prompt) {
				return true, fmt.Errorf("%w: %s was admitted with another prompt", ErrPromptConflict, a.MessageID)
			}
			r.AdmittedSeq, r.Duplicate = admitted, true
			return true, nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return true, err
		}
		return backlog(tx)
	}
	last, at, err := j.appendTx(ctx, sessionID, expectedSeq, ownerEpoch, evs, pre)
	if err != nil {
		return Receipt{}, fmt.Errorf("admit %s to session %s after seq %d: %w", a.MessageID, sessionID, expectedSeq, err)
	}
	if r.Duplicate {
		// The stream may have moved on; report its head, not the caller's guess.
		var epoch int64
		if err := j.db.QueryRowContext(ctx, j.n.q(qStream), sessionID).Scan(&r.LastSeq, &epoch); err != nil {
			return Receipt{}, fmt.Errorf("admit %s to session %s: %w", a.MessageID, sessionID, err)
		}
		return r, nil
	}
	r.AdmittedSeq, r.LastSeq, r.Admitted = last, last, time.UnixMicro(at).UTC()
	return r, nil
}
