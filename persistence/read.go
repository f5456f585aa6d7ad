package persistence

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/messages"
)

var (
	qSession      = stmt(`SELECT location, agent, provider, model, variant, title, status, created_seq, history_seq, deleted_seq FROM {sessions} WHERE session_id = ?`)
	qPendingInbox = stmt(`SELECT admitted_seq, message_id, delivery, prompt, promoted_seq, held FROM {session_input} WHERE session_id = ? AND promoted_seq = 0 ORDER BY session_id, admitted_seq`)
	qMessagesFrom = stmt(`SELECT seq, idx, message_id, role, body FROM {session_messages} WHERE session_id = ? AND seq >= ? ORDER BY session_id, seq, idx`)
	qMessagesPage = stmt(`SELECT seq, idx, message_id, role, body FROM {session_messages} WHERE session_id = ? AND seq >= ? ORDER BY session_id, seq, idx LIMIT ?`)
	qMessagesSpan = stmt(`SELECT seq, idx, message_id, role, body FROM {session_messages} WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY session_id, seq, idx LIMIT ?`)
	qEpoch        = stmt(`SELECT revision, baseline, snapshot, location, baseline_seq, updated_seq FROM {context_epochs} WHERE session_id = ?`)
	qToolCalls    = stmt(`SELECT assistant_message_id, call_id, tool, agent, state, seq, updated_seq FROM {tool_calls} WHERE session_id = ? ORDER BY session_id, assistant_message_id, call_id`)
	qPermissions  = stmt(`SELECT request_id, seq, body, state FROM {permissions} WHERE session_id = ? ORDER BY session_id, request_id`)
	qBusy         = stmt(`SELECT session_id FROM {sessions} WHERE status = 'busy' AND deleted_seq = 0 ORDER BY session_id`)
	qAllSessions  = stmt(`SELECT session_id FROM {streams} ORDER BY session_id`)
	qUnpromoted   = stmt(`SELECT DISTINCT session_id FROM {session_input} WHERE promoted_seq = 0 AND held = 0`)
	qHistoryState = stmt(`SELECT history_seq FROM {sessions} WHERE session_id = ?`)
)

// Session reads the sessions row and the stream head. ErrNotFound when the
// session was never created, or was deleted (session.deleted).
//
// When this Journal's last append to the session left its row in the
// sessionCache, one read of the stream head proves the row current (the row
// changes only with the head) and the sessions row is not read.
func (j *Journal) Session(ctx context.Context, sessionID string) (Session, error) {
	if s, head, ok := j.cache.session(sessionID); ok {
		var epoch int64
		err := j.db.QueryRowContext(ctx, j.n.q(qStream), sessionID).Scan(&s.LastSeq, &epoch)
		if err == nil && s.LastSeq == head {
			return s, nil
		}
	}
	return j.readSession(ctx, j.db, sessionID)
}

// rowQuerier is a *sql.DB or a *sql.Tx.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (j *Journal) readSession(ctx context.Context, db rowQuerier, sessionID string) (Session, error) {
	s, err := j.readSessionRow(ctx, db, sessionID)
	if err != nil {
		return Session{}, err
	}
	var epoch int64
	if err := db.QueryRowContext(ctx, j.n.q(qStream), sessionID).Scan(&s.LastSeq, &epoch); err != nil {
		return Session{}, fmt.Errorf("read session %s stream: %w", sessionID, err)
	}
	return s, nil
}

// DeletedSession reads the sessions row of a session, deleted or not
// (Session.Deleted says which; LastSeq 0): what a stream needs to place
// the session.deleted event it forwards. ErrNotFound when never created.
func (j *Journal) DeletedSession(ctx context.Context, sessionID string) (Session, error) {
	return j.sessionRow(ctx, j.db, sessionID, true)
}

// readSessionRow reads the sessions row alone (LastSeq 0); a deleted
// session is not found.
func (j *Journal) readSessionRow(ctx context.Context, db rowQuerier, sessionID string) (Session, error) {
	return j.sessionRow(ctx, db, sessionID, false)
}

func (j *Journal) sessionRow(ctx context.Context, db rowQuerier, sessionID string, withDeleted bool) (Session, error) {
	s := Session{ID: sessionID}
	var status string
	var deleted int64
	err := db.QueryRowContext(ctx, j.n.q(qSession), sessionID).Scan(&s.Location, &s.Agent, &s.Model.Provider, &s.Model.ID, &s.Model.Variant, &s.Title, &status, &s.CreatedSeq, &s.HistorySeq, &deleted)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && deleted > 0 && !withDeleted) {
		return Session{}, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	} else if err != nil {
		return Session{}, fmt.Errorf("read session %s: %w", sessionID, err)
	}
	s.Status, s.Deleted = Status(status), deleted > 0
	return s, nil
}

// PendingInbox lists the session's admitted, not yet promoted prompts in
// admission order.
func (j *Journal) PendingInbox(ctx context.Context, sessionID string) ([]InboxEntry, error) {
	rows, err := j.db.QueryContext(ctx, j.n.q(qPendingInbox), sessionID)
	if err != nil {
		return nil, fmt.Errorf("read inbox of %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []InboxEntry
	for rows.Next() {
		e := InboxEntry{SessionID: sessionID}
		var delivery string
		var prompt []byte
		var held int
		if err := rows.Scan(&e.AdmittedSeq, &e.MessageID, &delivery, &prompt, &e.PromotedSeq, &held); err != nil {
			return nil, fmt.Errorf("read inbox of %s: %w", sessionID, err)
		}
		e.Delivery, e.Held = messages.Delivery(delivery), held != 0
		if err := msgpack.Unmarshal(prompt, &e.Prompt); err != nil {
			return nil, fmt.Errorf("read inbox of %s: prompt %s: %w", sessionID, e.MessageID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read inbox of %s: %w", sessionID, err)
	}
	return out, nil
}

func scanMessages(rows *sql.Rows, sessionID string, keep func(*messages.Message) bool) ([]messages.Message, error) {
	defer rows.Close()
	var out []messages.Message
	for rows.Next() {
		var m messages.Message
		var role string
		var body []byte
		if err := rows.Scan(&m.Seq, &m.Index, &m.ID, &role, &body); err != nil {
			return nil, err
		}
		if err := msgpack.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("message %s (seq %d) of %s: %w", m.ID, m.Seq, sessionID, err)
		}
		m.Role = messages.Role(role)
		if keep != nil && !keep(&m) {
			continue
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ModelHistory is the model-visible history for the next provider turn:
// messages in event order from the latest completed compaction on (the
// compaction checkpoint included), without Mid-Conversation System Messages
// from before the current Context Epoch's baseline (the baseline restates
// them).
//
// It reads and decodes the whole history (three statements); the Session
// actor reads it once per activation and keeps its own copy current from
// its appends (actors/history.go), which its tests compare with this.
func (j *Journal) ModelHistory(ctx context.Context, sessionID string) ([]messages.Message, error) {
	historySeq, hasEpoch, baselineSeq, err := j.historyBounds(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	rv, err := j.Reverts(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	rows, err := j.db.QueryContext(ctx, j.n.q(qMessagesFrom), sessionID, historySeq)
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", sessionID, err)
	}
	out, err := scanMessages(rows, sessionID, func(m *messages.Message) bool {
		return !(hasEpoch && m.Role == messages.RoleSystem && m.Seq < baselineSeq) && !rv.Hides(*m)
	})
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", sessionID, err)
	}
	return out, nil
}

// historyBounds reads the session's history seq and its epoch's baseline
// seq, or takes them from the sessionCache when one read of the stream head
// proves its entry current.
func (j *Journal) historyBounds(ctx context.Context, sessionID string) (historySeq int64, hasEpoch bool, baselineSeq int64, err error) {
	if hs, ep, head, ok := j.cache.history(sessionID); ok {
		var last, epoch int64
		if err := j.db.QueryRowContext(ctx, j.n.q(qStream), sessionID).Scan(&last, &epoch); err == nil && last == head {
			return hs, ep.found, ep.baselineSeq, nil
		}
	}
	err = j.db.QueryRowContext(ctx, j.n.q(qHistoryState), sessionID).Scan(&historySeq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, 0, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	} else if err != nil {
		return 0, false, 0, fmt.Errorf("read history of %s: %w", sessionID, err)
	}
	ep, hasEpoch, err := j.Epoch(ctx, sessionID)
	return historySeq, hasEpoch, ep.BaselineSeq, err
}

// Messages pages through the full projected history (compacted and
// superseded messages included) in event order: up to limit messages
// strictly after the cursor. More says exactly whether any remain, for
// every limit, also when a revert hides some of them: the page after a
// More page is never empty.
//
// Messages a committed or finalized revert hides are left out without
// being decoded: the history is read span by span between what the
// reverts hide (visibleSpans), each span a key range that ends at the
// next hidden message, until limit+1 visible messages are found (the one
// past the page, not decoded, is More) or the spans run out. Without a
// revert that is one range read of at most limit+1 rows (plus the rows of
// the cursor's seq up to the cursor), as it is with a revert when the page
// ends before the first hidden message; no read goes past a committed
// revert's boundary, which hides the rest of the history.
//
// The revert state and the rows are read in one read-only transaction (one
// snapshot, readTx): read apart, a revert committed and finalized between
// them, with messages appended after it, made a page of rows the revert
// hides next to rows that exist only because of it, true of no state the
// session was ever in.
func (j *Journal) Messages(ctx context.Context, sessionID string, after Cursor, limit int) (Page, error) {
	if limit <= 0 {
		return Page{}, fmt.Errorf("page history of %s: limit %d must be positive", sessionID, limit)
	}
	tx, err := j.readTx(ctx)
	if err != nil {
		return Page{}, fmt.Errorf("page history of %s: %w", sessionID, err)
	}
	defer tx.Rollback() // it only read
	rv, err := j.reverts(ctx, tx, sessionID)
	if err != nil {
		return Page{}, err
	}
	if j.afterMessagesReverts != nil {
		j.afterMessagesReverts()
	}
	// The first position after the cursor (positions are integer pairs).
	from := Cursor{Seq: after.Seq, Index: after.Index + 1}
	p := Page{Next: after}
	for _, sp := range visibleSpans(&rv) {
		lo := sp.from
		if cursorBefore(lo, from) {
			lo = from
		}
		if sp.bounded && !cursorBefore(lo, sp.to) {
			continue // the span is behind the cursor
		}
		p.Messages, p.More, err = j.readSpan(ctx, tx, sessionID, lo, sp, limit-len(p.Messages), p.Messages)
		if err != nil {
			return Page{}, fmt.Errorf("page history of %s: %w", sessionID, err)
		}
		if p.More {
			break
		}
	}
	if n := len(p.Messages); n > 0 {
		p.Next = Cursor{Seq: p.Messages[n-1].Seq, Index: p.Messages[n-1].Index}
	}
	return p, nil
}

// readSpan appends to out up to need messages of span sp from position lo
// on (lo inside sp), in order, in one range read; more says a further one
// is in the span (read, not decoded).
func (j *Journal) readSpan(ctx context.Context, tx *sql.Tx, sessionID string, lo Cursor, sp span, need int, out []messages.Message) (_ []messages.Message, more bool, err error) {
	// Rows of lo.Seq before lo.Index (prompts promoted together; at most
	// lo.Index of them) are skipped in Go, as are those of the span's last
	// seq from sp.to.Index on (they come last): each range stays a plain
	// key prefix (no OR, no full scan).
	fetch := need + 1 + max(lo.Index, 0)
	var rows *sql.Rows
	if !sp.bounded {
		rows, err = tx.QueryContext(ctx, j.n.q(qMessagesPage), sessionID, lo.Seq, fetch)
	} else {
		last := sp.to.Seq // the last seq holding messages of the span
		if sp.to.Index == 0 {
			last--
		}
		rows, err = tx.QueryContext(ctx, j.n.q(qMessagesSpan), sessionID, lo.Seq, last, fetch)
	}
	if err != nil {
		return out, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var m messages.Message
		var role string
		var body []byte
		if err := rows.Scan(&m.Seq, &m.Index, &m.ID, &role, &body); err != nil {
			return out, false, err
		}
		at := Cursor{Seq: m.Seq, Index: m.Index}
		if more || cursorBefore(at, lo) || (sp.bounded && !cursorBefore(at, sp.to)) {
			continue // drain the rows: the iterator must be read to the end
		}
		if need == 0 {
			more = true
			continue
		}
		if err := msgpack.Unmarshal(body, &m); err != nil {
			return out, false, fmt.Errorf("message %s (seq %d): %w", m.ID, m.Seq, err)
		}
		m.Role = messages.Role(role)
		out = append(out, m)
		need--
	}
	return out, more, rows.Err()
}

// span is a run of history positions [from, to) no revert hides; to is
// meaningful only when bounded.
type span struct {
	from, to Cursor
	bounded  bool
}

// wholeHistory is the one span of a history no revert hides (read only).
var wholeHistory = []span{{}}

// visibleSpans are the runs of positions the reverts leave visible, in
// order: the complement of the ranges finalized reverts hid and of the
// committed revert's tail (from its boundary on). Without a revert it is
// one unbounded span from the start. Hidden ranges may overlap (a later
// revert reaching back before an earlier one) and come in any order; an
// empty one hides nothing.
func visibleSpans(rv *messages.Reverts) []span {
	if len(rv.Hidden) == 0 && (rv.Open == nil || !rv.Open.Committed) {
		return wholeHistory
	}
	hidden := make([]span, 0, len(rv.Hidden)+1)
	for _, h := range rv.Hidden {
		if h := (span{from: Cursor{Seq: h.FromSeq, Index: h.FromIndex}, to: Cursor{Seq: h.ToSeq}, bounded: true}); cursorBefore(h.from, h.to) {
			hidden = append(hidden, h)
		}
	}
	if o := rv.Open; o != nil && o.Committed {
		hidden = append(hidden, span{from: Cursor{Seq: o.BoundarySeq, Index: o.BoundaryIndex}})
	}
	slices.SortFunc(hidden, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.from.Seq, b.from.Seq), cmp.Compare(a.from.Index, b.from.Index))
	})
	var out []span
	at := Cursor{}
	for _, h := range hidden {
		if cursorBefore(at, h.from) {
			out = append(out, span{from: at, to: h.from, bounded: true})
		}
		if !h.bounded {
			return out // hidden from here to the end
		}
		if cursorBefore(at, h.to) {
			at = h.to
		}
	}
	return append(out, span{from: at})
}

// readTx begins a read-only transaction whose statements all read one
// snapshot of the journal: on the embedded engine one bbolt read
// transaction (START TRANSACTION READ ONLY neither takes nor waits for the
// writer), on MariaDB/MySQL InnoDB's consistent read, taken at the first
// statement, asked for explicitly because the server's default isolation
// may be READ COMMITTED (a snapshot per statement). The caller ends it.
func (j *Journal) readTx(ctx context.Context) (*sql.Tx, error) {
	return j.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
}

// cursorBefore orders history positions.
func cursorBefore(a, b Cursor) bool {
	return a.Seq < b.Seq || (a.Seq == b.Seq && a.Index < b.Index)
}

// Epoch reads the current Context Epoch; found is false when there is none
// (never initialized, or cleared by a move).
func (j *Journal) Epoch(ctx context.Context, sessionID string) (Epoch, bool, error) {
	var e Epoch
	var baseline, loc []byte
	err := j.db.QueryRowContext(ctx, j.n.q(qEpoch), sessionID).Scan(&e.Revision, &baseline, &e.Snapshot, &loc, &e.BaselineSeq, &e.UpdatedSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return Epoch{}, false, nil
	} else if err != nil {
		return Epoch{}, false, fmt.Errorf("read epoch of %s: %w", sessionID, err)
	}
	e.Baseline, e.Location = string(baseline), string(loc)
	return e, true, nil
}

// ToolCalls lists the session's tool calls in the given states (all when
// none given), ordered by assistant message ID and call ID. Crash recovery
// asks for messages.ToolStatePending and ToolStateRunning.
func (j *Journal) ToolCalls(ctx context.Context, sessionID string, states ...messages.ToolState) ([]ToolCall, error) {
	rows, err := j.db.QueryContext(ctx, j.n.q(qToolCalls), sessionID)
	if err != nil {
		return nil, fmt.Errorf("read tool calls of %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []ToolCall
	for rows.Next() {
		c := ToolCall{SessionID: sessionID}
		var state string
		if err := rows.Scan(&c.AssistantMessageID, &c.CallID, &c.Tool, &c.Agent, &state, &c.Seq, &c.UpdatedSeq); err != nil {
			return nil, fmt.Errorf("read tool calls of %s: %w", sessionID, err)
		}
		c.State = messages.ToolState(state)
		if len(states) == 0 || containsState(states, c.State) {
			out = append(out, c)
		}
	}
	return out, rows.Err()
}

func containsState(states []messages.ToolState, s messages.ToolState) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}

// PendingPermissions lists the session's unanswered permission requests.
func (j *Journal) PendingPermissions(ctx context.Context, sessionID string) ([]Permission, error) {
	rows, err := j.db.QueryContext(ctx, j.n.q(qPermissions), sessionID)
	if err != nil {
		return nil, fmt.Errorf("read permissions of %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []Permission
	for rows.Next() {
		var p Permission
		var body []byte
		var state string
		if err := rows.Scan(&p.RequestID, &p.Seq, &body, &state); err != nil {
			return nil, fmt.Errorf("read permissions of %s: %w", sessionID, err)
		}
		if state != "pending" {
			continue
		}
		if err := msgpack.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("read permission %s of %s: %w", p.RequestID, sessionID, err)
		}
		p.SessionID, p.Pending = sessionID, true
		out = append(out, p)
	}
	return out, rows.Err()
}

var qPendingAll = stmt(`SELECT session_id, request_id, seq, body FROM {permissions} WHERE state = 'pending' ORDER BY session_id, request_id`)

// AllPendingPermissions lists every session's unanswered permission requests.
func (j *Journal) AllPendingPermissions(ctx context.Context) ([]Permission, error) {
	rows, err := j.db.QueryContext(ctx, j.n.q(qPendingAll))
	if err != nil {
		return nil, fmt.Errorf("read pending permissions: %w", err)
	}
	defer rows.Close()
	var out []Permission
	for rows.Next() {
		var p Permission
		var body []byte
		if err := rows.Scan(&p.SessionID, &p.RequestID, &p.Seq, &body); err != nil {
			return nil, fmt.Errorf("read pending permissions: %w", err)
		}
		sid := p.SessionID
		if err := msgpack.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("read permission %s of %s: %w", p.RequestID, sid, err)
		}
		p.SessionID, p.Pending = sid, true
		out = append(out, p)
	}
	return out, rows.Err()
}

// MidDrain lists the sessions whose last drain did not end (status busy):
// at start-up, the sessions that were mid-drain when the server stopped.
func (j *Journal) MidDrain(ctx context.Context) ([]string, error) {
	return j.ids(ctx, qBusy)
}

// SessionIDs lists every session with a stream (created or only acquired).
func (j *Journal) SessionIDs(ctx context.Context) ([]string, error) {
	return j.ids(ctx, qAllSessions)
}

// Owed lists, sorted, the sessions that owe work to a client whatever their
// status: those mid-drain (MidDrain) and those holding admitted input that no
// drain promoted yet (a server killed between a prompt's receipt and its
// drain's start, or a drain the journal stopped before it promoted), unless
// the client held all of it back (PromptAdmitted.Held: it waits for the
// client's wake, as it would have without the restart). A
// pending permission reply is owed only by a drain, so by a busy session.
// Start-up recovery and a cluster member taking sessions over wake each of
// them, so that a receipt means the work happens without further help from
// the client.
func (j *Journal) Owed(ctx context.Context) ([]string, error) {
	busy, err := j.ids(ctx, qBusy)
	if err != nil {
		return nil, err
	}
	waiting, err := j.ids(ctx, qUnpromoted)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(busy)+len(waiting))
	out := make([]string, 0, len(busy)+len(waiting))
	for _, id := range append(busy, waiting...) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (j *Journal) ids(ctx context.Context, q string) ([]string, error) {
	rows, err := j.db.QueryContext(ctx, j.n.q(q))
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

var (
	qSessionQuestions = stmt(`SELECT request_id, seq, body, state FROM {questions} WHERE session_id = ? ORDER BY session_id, request_id`)
	qPendingQuestions = stmt(`SELECT session_id, request_id, seq, body, state FROM {questions} WHERE state = 'pending' ORDER BY session_id, request_id`)
)

// Questions lists the session's question requests (every state).
func (j *Journal) Questions(ctx context.Context, sessionID string) ([]QuestionRequest, error) {
	rows, err := j.db.QueryContext(ctx, j.n.q(qSessionQuestions), sessionID)
	if err != nil {
		return nil, fmt.Errorf("read questions of %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []QuestionRequest
	for rows.Next() {
		q := QuestionRequest{SessionID: sessionID}
		var body []byte
		if err := rows.Scan(&q.RequestID, &q.Seq, &body, &q.State); err != nil {
			return nil, fmt.Errorf("read questions of %s: %w", sessionID, err)
		}
		if err := msgpack.Unmarshal(body, &q); err != nil {
			return nil, fmt.Errorf("read question %s of %s: %w", q.RequestID, sessionID, err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// AllPendingQuestions lists every session's unanswered question requests.
func (j *Journal) AllPendingQuestions(ctx context.Context) ([]QuestionRequest, error) {
	rows, err := j.db.QueryContext(ctx, j.n.q(qPendingQuestions))
	if err != nil {
		return nil, fmt.Errorf("read pending questions: %w", err)
	}
	defer rows.Close()
	var out []QuestionRequest
	for rows.Next() {
		var q QuestionRequest
		var body []byte
		if err := rows.Scan(&q.SessionID, &q.RequestID, &q.Seq, &body, &q.State); err != nil {
			return nil, fmt.Errorf("read pending questions: %w", err)
		}
		if err := msgpack.Unmarshal(body, &q); err != nil {
			return nil, fmt.Errorf("read question %s of %s: %w", q.RequestID, q.SessionID, err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// Reverts reads the session's revert state (empty when it never reverted).
func (j *Journal) Reverts(ctx context.Context, sessionID string) (messages.Reverts, error) {
	return j.reverts(ctx, j.db, sessionID)
}

func (j *Journal) reverts(ctx context.Context, db rowQuerier, sessionID string) (messages.Reverts, error) {
	var body []byte
	err := db.QueryRowContext(ctx, j.n.q(qReverts), sessionID).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return messages.Reverts{}, nil
	} else if err != nil {
		return messages.Reverts{}, fmt.Errorf("read reverts of %s: %w", sessionID, err)
	}
	return decodeReverts(sessionID, body)
}

var qMessagePos = stmt(`SELECT seq, idx, role FROM {session_messages} WHERE message_id = ? AND session_id = ?`)

// MessagePosition returns where message messageID of the session is in its
// stream (the seq of the event that made it, its index there) and its
// role; ErrNotFound when the session has no such message.
func (j *Journal) MessagePosition(ctx context.Context, sessionID, messageID string) (seq int64, idx int, role messages.Role, err error) {
	var r string
	err = j.db.QueryRowContext(ctx, j.n.q(qMessagePos), messageID, sessionID).Scan(&seq, &idx, &r)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, "", fmt.Errorf("message %s of session %s: %w", messageID, sessionID, ErrNotFound)
	} else if err != nil {
		return 0, 0, "", fmt.Errorf("read message %s of session %s: %w", messageID, sessionID, err)
	}
	return seq, idx, messages.Role(r), nil
}

// Two point reads on primary keys rather than a join, whose plan the
// embedded engine does not promise.
var (
	qAdmissionID  = stmt(`SELECT session_id, admitted_seq FROM {prompt_ids} WHERE message_id = ?`)
	qAdmissionRow = stmt(`SELECT delivery, prompt, promoted_seq FROM {session_input} WHERE session_id = ? AND admitted_seq = ?`)
)

// Admission returns the admitted prompt messageID of the session (its
// session_input row), promoted or not: a promotion event names its prompts
// by ID only, and a reader that did not see the admission (a stream that
// starts after it) finds the prompt here. ErrNotFound when the session
// never admitted that message.
func (j *Journal) Admission(ctx context.Context, sessionID, messageID string) (InboxEntry, error) {
	e := InboxEntry{SessionID: sessionID, MessageID: messageID}
	var owner, delivery string
	var prompt []byte
	err := j.db.QueryRowContext(ctx, j.n.q(qAdmissionID), messageID).Scan(&owner, &e.AdmittedSeq)
	if err == nil && owner != sessionID {
		err = sql.ErrNoRows
	}
	if err == nil {
		err = j.db.QueryRowContext(ctx, j.n.q(qAdmissionRow), sessionID, e.AdmittedSeq).Scan(&delivery, &prompt, &e.PromotedSeq)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return e, fmt.Errorf("admission of %s in session %s: %w", messageID, sessionID, ErrNotFound)
	} else if err != nil {
		return e, fmt.Errorf("read admission of %s in session %s: %w", messageID, sessionID, err)
	}
	e.Delivery = messages.Delivery(delivery)
	if err := msgpack.Unmarshal(prompt, &e.Prompt); err != nil {
		return e, fmt.Errorf("read admission of %s in session %s: prompt: %w", messageID, sessionID, err)
	}
	return e, nil
}
