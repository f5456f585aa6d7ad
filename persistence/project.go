package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/messages"
)

// querier is what the projector needs: a *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// projector applies one session's events to the projection tables inside
// one transaction. Messages touched by several events of the same batch are
// read once, changed in memory and written once by flush.
type projector struct {
	ctx    context.Context
	tx     querier
	n      *names
	sid    string
	msgs   map[string]*msgEntry
	order  []*msgEntry
	tools  map[[2]string]*toolRow // by (assistant message ID, call ID)
	torder []*toolRow
	status Status // pending status change, written by flush
	// known is the stored status when the caller knows it (sessionCache),
	// else "": flush skips writing a status equal to it.
	known Status
	// cache holds rows as they are stored at this append's expected seq
	// (sessionCache); nil when nothing is known. Never modified.
	cache *cacheEntry
	// bodies and fresh record what flush wrote, for the next cache entry.
	bodies map[string][]byte
	fresh  map[string]bool
	// sess, ep and inbox track the sessions row (its status is known), the
	// epoch and the pending prompts as this batch leaves them, when known
	// (from the cache or written here). sess is shared with the cache entry
	// until editSession copies it.
	sess      *Session
	sessOwned bool
	ep        epochState
	inbox     []cachedInput
	// reverts is the session_reverts row as this batch leaves it, once read.
	reverts      *messages.Reverts
	revertsFound bool
	// creation is the seq of the last event this projector applied when
	// it was the SessionCreated or a HistoryCopied (0 otherwise): a copy
	// must follow one of them directly.
	creation int64
}

// toolRow is a cached tool_calls row; flush writes new and changed ones.
type toolRow struct {
	am, call, tool, agent string
	state                 messages.ToolState
	seq, updated          int64
	isNew, dirty          bool
}

type msgEntry struct {
	m            messages.Message
	isNew, dirty bool
	ev           messages.Event // the event that created it (for errors)
}

func newProjector(ctx context.Context, tx querier, n *names, sessionID string) *projector {
	return &projector{ctx: ctx, tx: tx, n: n, sid: sessionID, msgs: map[string]*msgEntry{}, tools: map[[2]string]*toolRow{}}
}

// use starts the projector from the rows a cache entry holds (valid at this
// append's expected seq).
func (p *projector) use(c *cacheEntry) {
	p.cache, p.known, p.ep = c, c.status, c.epoch
	p.sess = c.sess
	p.inbox = append([]cachedInput(nil), c.inbox...)
}

func (p *projector) refuse(seq int64, e messages.Event, format string, args ...any) error {
	return fmt.Errorf("%w: session %s seq %d %s: %s", ErrProjection, p.sid, seq, e.EventType(), fmt.Sprintf(format, args...))
}

func (p *projector) exec(q string, args ...any) (sql.Result, error) {
	return p.tx.ExecContext(p.ctx, p.n.q(q), args...)
}

func (p *projector) row(q string, args ...any) *sql.Row {
	return p.tx.QueryRowContext(p.ctx, p.n.q(q), args...)
}

var (
	qInsertSession  = stmt(`INSERT INTO {sessions} (session_id, location, agent, provider, model, variant, title, status, created_seq, history_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`)
	qSetTitle       = stmt(`UPDATE {sessions} SET title = ? WHERE session_id = ?`)
	qSetDeleted     = stmt(`UPDATE {sessions} SET deleted_seq = ? WHERE session_id = ?`)
	qSessionLoc     = stmt(`SELECT location FROM {sessions} WHERE session_id = ?`)
	qSetStatus      = stmt(`UPDATE {sessions} SET status = ? WHERE session_id = ?`)
	qSetAgent       = stmt(`UPDATE {sessions} SET agent = ? WHERE session_id = ?`)
	qSetModel       = stmt(`UPDATE {sessions} SET provider = ?, model = ?, variant = ? WHERE session_id = ?`)
	qSetLocation    = stmt(`UPDATE {sessions} SET location = ? WHERE session_id = ?`)
	qSetHistorySeq  = stmt(`UPDATE {sessions} SET history_seq = ? WHERE session_id = ?`)
	qInsertPromptID = stmt(`INSERT INTO {prompt_ids} (message_id, session_id, admitted_seq) VALUES (?, ?, ?)`)
	qPromptID       = stmt(`SELECT session_id, admitted_seq FROM {prompt_ids} WHERE message_id = ?`)
	qInsertInput    = stmt(`INSERT INTO {session_input} (session_id, admitted_seq, message_id, delivery, prompt, promoted_seq, held) VALUES (?, ?, ?, ?, ?, 0, ?)`)
	qInput          = stmt(`SELECT delivery, prompt, promoted_seq FROM {session_input} WHERE session_id = ? AND admitted_seq = ?`)
	qPromote        = stmt(`UPDATE {session_input} SET promoted_seq = ? WHERE session_id = ? AND admitted_seq = ?`)
	qHoldPending    = stmt(`UPDATE {session_input} SET held = 1 WHERE session_id = ? AND promoted_seq = 0 AND held = 0`)
	qEpochRevision  = stmt(`SELECT revision, baseline_seq FROM {context_epochs} WHERE session_id = ?`)
	qInsertEpoch    = stmt(`INSERT INTO {context_epochs} (session_id, revision, baseline, snapshot, location, baseline_seq, updated_seq) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	qReplaceEpoch   = stmt(`UPDATE {context_epochs} SET revision = ?, baseline = ?, snapshot = ?, location = ?, baseline_seq = ?, updated_seq = ? WHERE session_id = ?`)
	qUpdateSnapshot = stmt(`UPDATE {context_epochs} SET revision = ?, snapshot = ?, updated_seq = ? WHERE session_id = ?`)
	qDeleteEpoch    = stmt(`DELETE FROM {context_epochs} WHERE session_id = ?`)
	qMessageByID    = stmt(`SELECT seq, idx, role, body FROM {session_messages} WHERE message_id = ? AND session_id = ?`)
	qUpdateMessage  = stmt(`UPDATE {session_messages} SET body = ? WHERE session_id = ? AND seq = ? AND idx = ?`)
	qToolRow        = stmt(`SELECT tool, agent, state, seq, updated_seq FROM {tool_calls} WHERE session_id = ? AND assistant_message_id = ? AND call_id = ?`)
	qUpdateTool     = stmt(`UPDATE {tool_calls} SET tool = ?, agent = ?, state = ?, updated_seq = ? WHERE session_id = ? AND assistant_message_id = ? AND call_id = ?`)
	qInsertPerm     = stmt(`INSERT INTO {permissions} (session_id, request_id, seq, body, state) VALUES (?, ?, ?, ?, 'pending')`)
	qPerm           = stmt(`SELECT body, state FROM {permissions} WHERE session_id = ? AND request_id = ?`)
	qReplyPerm      = stmt(`UPDATE {permissions} SET body = ?, state = 'replied' WHERE session_id = ? AND request_id = ?`)
	qInsertQuestion = stmt(`INSERT INTO {questions} (session_id, request_id, seq, body, state) VALUES (?, ?, ?, ?, 'pending')`)
	qQuestion       = stmt(`SELECT body, state FROM {questions} WHERE session_id = ? AND request_id = ?`)
	qSettleQuestion = stmt(`UPDATE {questions} SET body = ?, state = ? WHERE session_id = ? AND request_id = ?`)
	qReverts        = stmt(`SELECT body FROM {session_reverts} WHERE session_id = ?`)
	qInsertReverts  = stmt(`INSERT INTO {session_reverts} (session_id, body) VALUES (?, ?)`)
	qUpdateReverts  = stmt(`UPDATE {session_reverts} SET body = ? WHERE session_id = ?`)
)

// apply projects one event with its seq.
func (p *projector) apply(seq int64, ev messages.Event) error {
	if _, first := ev.(messages.SessionCreated); first != (seq == 1) {
		if seq == 1 {
			return p.refuse(seq, ev, "a session's first event must be %s", messages.SessionCreated{}.EventType())
		}
		return p.refuse(seq, ev, "the session already exists")
	}
	follows := p.creation == seq-1
	p.creation = 0
	switch e := ev.(type) {
	case messages.SessionCreated:
		if e.Location == "" {
			return p.refuse(seq, ev, "empty location")
		}
		p.creation = seq
		_, err := p.exec(qInsertSession, p.sid, e.Location, e.Agent, e.Model.Provider, e.Model.ID, e.Model.Variant, e.Title, string(StatusIdle), seq)
		p.known = StatusIdle
		p.sess, p.sessOwned = &Session{ID: p.sid, Location: e.Location, Agent: e.Agent, Model: e.Model, Title: e.Title, CreatedSeq: seq}, true
		p.ep = epochState{known: true} // epochs come after creation
		return err

	case messages.PromptAdmitted:
		if e.MessageID == "" || !e.Delivery.Valid() {
			return p.refuse(seq, ev, "message ID %q / delivery %q invalid", e.MessageID, e.Delivery)
		}
		if _, err := p.exec(qInsertPromptID, e.MessageID, p.sid, seq); err != nil {
			if isDuplicate(err) {
				return fmt.Errorf("session %s seq %d admit %s: %w", p.sid, seq, e.MessageID, ErrPromptConflict)
			}
			return err
		}
		prompt, err := msgpack.Marshal(e.Prompt)
		if err != nil {
			return err
		}
		if _, err = p.exec(qInsertInput, p.sid, seq, e.MessageID, string(e.Delivery), prompt, held(e.Held)); err != nil {
			return err
		}
		p.inbox = append(p.inbox, cachedInput{id: e.MessageID, delivery: string(e.Delivery), seq: seq, prompt: prompt})
		return nil

	case messages.PromptPromoted:
		if len(e.MessageIDs) == 0 {
			return p.refuse(seq, ev, "no message IDs")
		}
		for i, id := range e.MessageIDs {
			in, err := p.pendingInput(seq, ev, id)
			if err != nil {
				return err
			}
			admitted, delivery, raw := in.seq, in.delivery, in.prompt
			var pr messages.Prompt
			if err := msgpack.Unmarshal(raw, &pr); err != nil {
				return fmt.Errorf("inbox row of prompt %s: %w", id, err)
			}
			if _, err := p.exec(qPromote, seq, p.sid, admitted); err != nil {
				return err
			}
			if err := p.newMessage(seq, ev, messages.Message{ID: id, Seq: seq, Index: i, Role: messages.RoleUser, Prompt: &pr, Delivery: messages.Delivery(delivery)}); err != nil {
				return err
			}
		}
		p.status = StatusBusy
		return nil

	case messages.ContextEpochInitialized:
		if err := p.checkLocation(seq, ev, e.Location); err != nil {
			return err
		}
		if _, found, err := p.epochRevision(); err != nil {
			return err
		} else if found {
			return p.refuse(seq, ev, "an epoch already exists (replace it, or clear it first)")
		}
		p.setEpoch(true, e.Revision, seq)
		_, err := p.exec(qInsertEpoch, p.sid, e.Revision, []byte(e.Baseline), nonNil(e.Snapshot), e.Location, seq, seq)
		return err

	case messages.ContextEpochReplaced:
		if err := p.checkLocation(seq, ev, e.Location); err != nil {
			return err
		}
		rev, found, err := p.epochRevision()
		if err != nil {
			return err
		}
		p.setEpoch(true, e.Revision, seq)
		if !found {
			_, err = p.exec(qInsertEpoch, p.sid, e.Revision, []byte(e.Baseline), nonNil(e.Snapshot), e.Location, seq, seq)
			return err
		}
		if e.Revision <= rev {
			return p.refuse(seq, ev, "revision %d is not newer than the stored %d", e.Revision, rev)
		}
		_, err = p.exec(qReplaceEpoch, e.Revision, []byte(e.Baseline), nonNil(e.Snapshot), e.Location, seq, seq, p.sid)
		return err

	case messages.ContextEpochCleared:
		p.setEpoch(false, 0, 0)
		_, err := p.exec(qDeleteEpoch, p.sid)
		return err

	case messages.ContextUpdated:
		rev, found, err := p.epochRevision()
		if err != nil {
			return err
		}
		if !found {
			return p.refuse(seq, ev, "no context epoch to update")
		}
		p.setEpoch(true, rev+1, p.ep.baselineSeq)
		if _, err := p.exec(qUpdateSnapshot, rev+1, nonNil(e.Snapshot), seq, p.sid); err != nil {
			return err
		}
		id := e.MessageID
		if id == "" {
			id = fmt.Sprintf("ctx_%d", seq)
		}
		return p.newMessage(seq, ev, messages.Message{ID: id, Seq: seq, Role: messages.RoleSystem, Text: e.Text})

	case messages.AgentSwitched:
		if s := p.editSession(); s != nil {
			s.Agent = e.Agent
		}
		_, err := p.exec(qSetAgent, e.Agent, p.sid)
		return err

	case messages.SessionDeleted:
		// Reads find no session from here on: the cache must not answer
		// for it either.
		p.sess, p.sessOwned = nil, false
		_, err := p.exec(qSetDeleted, seq, p.sid)
		return err

	case messages.SessionRenamed:
		if s := p.editSession(); s != nil {
			s.Title = e.Title
		}
		_, err := p.exec(qSetTitle, e.Title, p.sid)
		return err

	case messages.ModelSwitched:
		if s := p.editSession(); s != nil {
			s.Model = e.Model
		}
		_, err := p.exec(qSetModel, e.Model.Provider, e.Model.ID, e.Model.Variant, p.sid)
		return err

	case messages.Moved:
		if err := p.checkLocation(seq, ev, e.From); err != nil {
			return err
		}
		if e.To == "" {
			return p.refuse(seq, ev, "empty destination")
		}
		if _, err := p.exec(qSetLocation, e.To, p.sid); err != nil {
			return err
		}
		if s := p.editSession(); s != nil {
			s.Location = e.To
		}
		// A move clears the epoch: the destination initializes a fresh baseline.
		p.setEpoch(false, 0, 0)
		_, err := p.exec(qDeleteEpoch, p.sid)
		return err

	case messages.TurnStarted:
		if e.AssistantMessageID == "" {
			return p.refuse(seq, ev, "empty assistant message ID")
		}
		p.status = StatusBusy
		return p.newMessage(seq, ev, messages.Message{ID: e.AssistantMessageID, Seq: seq, Role: messages.RoleAssistant, Agent: e.Agent, Model: e.Model})

	case messages.TurnEnded:
		m, err := p.openTurn(seq, ev, e.AssistantMessageID)
		if err != nil {
			return err
		}
		m.Finished, m.FinishReason, m.Usage, m.ProviderMetadata = true, e.FinishReason, e.Usage, e.ProviderMetadata
		return nil

	case messages.TurnFailed:
		m, err := p.openTurn(seq, ev, e.AssistantMessageID)
		if err != nil {
			return err
		}
		m.Finished, m.ErrorKind, m.Error = true, e.ErrorKind, e.Message
		return nil

	case messages.TextEnded:
		m, err := p.assistant(seq, ev, e.AssistantMessageID)
		if err != nil {
			return err
		}
		m.Parts = append(m.Parts, messages.Part{Kind: messages.PartText, Seq: seq, Text: e.Text, ProviderMetadata: e.ProviderMetadata})
		return nil

	case messages.ReasoningEnded:
		m, err := p.assistant(seq, ev, e.AssistantMessageID)
		if err != nil {
			return err
		}
		m.Parts = append(m.Parts, messages.Part{Kind: messages.PartReasoning, Seq: seq, Text: e.Text, ProviderMetadata: e.ProviderMetadata})
		return nil

	case messages.ToolInputStarted:
		return p.toolInput(seq, ev, e.AssistantMessageID, e.CallID, e.Tool)

	case messages.ToolInputEnded:
		return p.toolInput(seq, ev, e.AssistantMessageID, e.CallID, e.Tool)

	case messages.ToolCalled:
		m, err := p.assistant(seq, ev, e.AssistantMessageID)
		if err != nil {
			return err
		}
		t, err := p.tool(e.AssistantMessageID, e.CallID)
		switch {
		case err != nil:
			return err
		case t == nil:
			p.newTool(&toolRow{am: e.AssistantMessageID, call: e.CallID, tool: e.Tool, agent: e.Agent, state: messages.ToolStateRunning, seq: seq, updated: seq})
		case t.state == messages.ToolStatePending:
			t.tool, t.agent, t.state, t.updated, t.dirty = e.Tool, e.Agent, messages.ToolStateRunning, seq, true
		default:
			return p.refuse(seq, ev, "call %s is already %s", e.CallID, t.state)
		}
		m.Parts = append(m.Parts, messages.Part{Kind: messages.PartTool, Seq: seq, Tool: &messages.ToolPart{
			CallID: e.CallID, Tool: e.Tool, Agent: e.Agent, Input: e.Input, State: messages.ToolStateRunning, CallMetadata: e.ProviderMetadata}})
		return nil

	case messages.ToolProgress:
		tp, err := p.runningTool(seq, ev, e.AssistantMessageID, e.CallID, messages.ToolStateRunning)
		if err != nil {
			return err
		}
		tp.Title = e.Title
		return nil

	case messages.ToolSucceeded:
		tp, err := p.runningTool(seq, ev, e.AssistantMessageID, e.CallID, messages.ToolStateCompleted)
		if err != nil {
			return err
		}
		tp.State, tp.Output, tp.Structured, tp.ManagedPath, tp.Lossy, tp.ResultMetadata =
			messages.ToolStateCompleted, e.Output, e.Structured, e.ManagedPath, e.Lossy, e.ProviderMetadata
		return nil

	case messages.ToolFailed:
		t, err := p.tool(e.AssistantMessageID, e.CallID)
		if err != nil {
			return err
		}
		if t == nil || (t.state != messages.ToolStatePending && t.state != messages.ToolStateRunning) {
			return p.refuse(seq, ev, "call %s of %s is not pending or running", e.CallID, e.AssistantMessageID)
		}
		wasPending := t.state == messages.ToolStatePending
		t.state, t.updated, t.dirty = messages.ToolStateFailed, seq, true
		if wasPending { // never called: no model-visible part to settle
			return nil
		}
		m, err := p.assistant(seq, ev, e.AssistantMessageID)
		if err != nil {
			return err
		}
		if tp := toolPart(m, e.CallID); tp != nil {
			tp.State, tp.Error = messages.ToolStateFailed, e.Error
		}
		return nil

	case messages.PermissionAsked:
		if e.RequestID == "" {
			return p.refuse(seq, ev, "empty request ID")
		}
		body, err := msgpack.Marshal(Permission{AssistantMessageID: e.AssistantMessageID, CallID: e.CallID, Action: e.Action, Resources: e.Resources})
		if err != nil {
			return err
		}
		if _, err := p.exec(qInsertPerm, p.sid, e.RequestID, seq, body); err != nil {
			if isDuplicate(err) {
				return p.refuse(seq, ev, "permission request %s already asked", e.RequestID)
			}
			return err
		}
		return nil

	case messages.PermissionReplied:
		var body []byte
		var state string
		err := p.row(qPerm, p.sid, e.RequestID).Scan(&body, &state)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && state != "pending") {
			return p.refuse(seq, ev, "permission request %s is not pending", e.RequestID)
		} else if err != nil {
			return err
		}
		var perm Permission
		if err := msgpack.Unmarshal(body, &perm); err != nil {
			return fmt.Errorf("permission %s body: %w", e.RequestID, err)
		}
		perm.Reply, perm.Feedback, perm.RepliedSeq = e.Reply, e.Feedback, seq
		if body, err = msgpack.Marshal(perm); err != nil {
			return err
		}
		_, err = p.exec(qReplyPerm, body, p.sid, e.RequestID)
		return err

	case messages.CompactionStarted:
		p.status = StatusBusy
		return nil

	case messages.CompactionEnded:
		id := e.CompactionID
		if id == "" {
			id = fmt.Sprintf("cmp_%d", seq)
		}
		if _, err := p.exec(qSetHistorySeq, seq, p.sid); err != nil {
			return err
		}
		if s := p.editSession(); s != nil {
			s.HistorySeq = seq
		}
		return p.newMessage(seq, ev, messages.Message{ID: id, Seq: seq, Role: messages.RoleCompaction, Text: e.Summary, RecentContext: e.RecentContext})

	case messages.HistoryCopied:
		if !follows {
			return p.refuse(seq, ev, "history is copied only in the append that creates the session, right after its creation")
		}
		if err := e.Check(); err != nil {
			return p.refuse(seq, ev, "%v", err)
		}
		p.creation = seq
		if e.Boundary() {
			if _, err := p.exec(qSetHistorySeq, seq, p.sid); err != nil {
				return err
			}
			if s := p.editSession(); s != nil {
				s.HistorySeq = seq
			}
		}
		for _, m := range e.At(seq) {
			if err := p.newMessage(seq, ev, m); err != nil {
				return err
			}
		}
		return nil

	case messages.Interrupted:
		// An interrupt keeps the unpromoted input for a later fresh wake
		// (the client's next prompt or run), not for start-up recovery:
		// from here on it is held like a resume:false admission, so Owed
		// does not list it and a restart does not run what the user
		// stopped. A later promotion takes it as before.
		p.status = StatusIdle
		_, err := p.exec(qHoldPending, p.sid)
		return err

	case messages.Idle:
		p.status = StatusIdle
		return nil

	case messages.DrainFailed:
		return nil // the Idle that follows ends the drain

	case messages.QuestionAsked:
		if e.RequestID == "" {
			return p.refuse(seq, ev, "empty request ID")
		}
		body, err := msgpack.Marshal(QuestionRequest{AssistantMessageID: e.AssistantMessageID, CallID: e.CallID, Questions: e.Questions})
		if err != nil {
			return err
		}
		if _, err := p.exec(qInsertQuestion, p.sid, e.RequestID, seq, body); err != nil {
			if isDuplicate(err) {
				return p.refuse(seq, ev, "question request %s already asked", e.RequestID)
			}
			return err
		}
		return nil

	case messages.QuestionReplied:
		// An answer is owed a drain (the model continues from it): the
		// session is busy from the reply on, so that a server that dies
		// before that drain's first write leaves it mid-drain, and
		// start-up recovery resumes it instead of leaving it idle with
		// the answer unread.
		p.status = StatusBusy
		return p.settleQuestion(seq, ev, e.RequestID, "replied", func(q *QuestionRequest) { q.Answers = e.Answers })

	case messages.QuestionRejected:
		return p.settleQuestion(seq, ev, e.RequestID, "rejected", func(q *QuestionRequest) { q.Reason = e.Reason })

	case messages.RevertStaged, messages.RevertCommitted, messages.RevertCleared, messages.RevertRestored, messages.RevertFinalized:
		return p.revert(seq, ev)
	}
	return p.refuse(seq, ev, "no projection for this event type")
}

// held is the session_input.held column of an admission (TINYINT: the same
// value on both backends, where BOOLEAN is an alias of it).
func held(h bool) int {
	if h {
		return 1
	}
	return 0
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// editSession returns the projector's own copy of the sessions row to
// change (nil when the row is not known).
func (p *projector) editSession() *Session {
	if p.sess != nil && !p.sessOwned {
		s := *p.sess
		p.sess, p.sessOwned = &s, true
	}
	return p.sess
}

// pendingInput returns the inbox row of a prompt admitted to this session
// and not yet promoted (refusing any other), from the cached inbox when it
// is there, and takes it out of the cached inbox.
func (p *projector) pendingInput(seq int64, ev messages.Event, id string) (cachedInput, error) {
	for i, in := range p.inbox {
		if in.id == id {
			p.inbox = append(p.inbox[:i:i], p.inbox[i+1:]...)
			return in, nil
		}
	}
	var owner string
	in := cachedInput{id: id}
	err := p.row(qPromptID, id).Scan(&owner, &in.seq)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != p.sid) {
		return in, p.refuse(seq, ev, "prompt %s was never admitted to this session", id)
	} else if err != nil {
		return in, err
	}
	var promoted int64
	if err := p.row(qInput, p.sid, in.seq).Scan(&in.delivery, &in.prompt, &promoted); err != nil {
		return in, fmt.Errorf("inbox row of prompt %s: %w", id, err)
	}
	if promoted != 0 {
		return in, p.refuse(seq, ev, "prompt %s was already promoted at seq %d", id, promoted)
	}
	return in, nil
}

func (p *projector) checkLocation(seq int64, ev messages.Event, loc string) error {
	var current string
	if p.sess != nil {
		current = p.sess.Location
	} else if err := p.row(qSessionLoc, p.sid).Scan(&current); err != nil {
		return fmt.Errorf("session location: %w", err)
	}
	if loc != current {
		return p.refuse(seq, ev, "location %q is not the session's location %q", loc, current)
	}
	return nil
}

// epochRevision reads the epoch's revision (or knows it); the caller's
// write then goes through setEpoch.
func (p *projector) epochRevision() (int64, bool, error) {
	if p.ep.known {
		return p.ep.rev, p.ep.found, nil
	}
	var rev, baseline int64
	err := p.row(qEpochRevision, p.sid).Scan(&rev, &baseline)
	if errors.Is(err, sql.ErrNoRows) {
		p.ep = epochState{known: true}
		return 0, false, nil
	} else if err != nil {
		return 0, false, err
	}
	p.setEpoch(true, rev, baseline)
	return rev, true, nil
}

func (p *projector) setEpoch(found bool, rev, baselineSeq int64) {
	p.ep = epochState{known: true, found: found, rev: rev, baselineSeq: baselineSeq}
}

// tool returns the cached or stored tool_calls row, nil when there is none.
func (p *projector) tool(am, call string) (*toolRow, error) {
	if t, ok := p.tools[[2]string{am, call}]; ok {
		return t, nil
	}
	if m, ok := p.msgs[am]; ok && m.isNew {
		return nil, nil // the turn started in this batch: no stored calls can exist
	}
	if p.cache != nil {
		if row, ok := p.cache.tools[[2]string{am, call}]; ok {
			t := row
			p.tools[[2]string{am, call}] = &t
			p.torder = append(p.torder, &t)
			return &t, nil
		}
		if m := p.cache.msg(am); m != nil && m.allTools {
			return nil, nil
		}
	}
	t := &toolRow{am: am, call: call}
	var state string
	err := p.row(qToolRow, p.sid, am, call).Scan(&t.tool, &t.agent, &state, &t.seq, &t.updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	t.state = messages.ToolState(state)
	p.tools[[2]string{am, call}] = t
	p.torder = append(p.torder, t)
	return t, nil
}

func (p *projector) newTool(t *toolRow) {
	t.isNew = true
	p.tools[[2]string{t.am, t.call}] = t
	p.torder = append(p.torder, t)
}

func (p *projector) toolInput(seq int64, ev messages.Event, am, call, tool string) error {
	if _, err := p.assistant(seq, ev, am); err != nil {
		return err
	}
	t, err := p.tool(am, call)
	switch {
	case err != nil:
		return err
	case t == nil:
		p.newTool(&toolRow{am: am, call: call, tool: tool, state: messages.ToolStatePending, seq: seq, updated: seq})
		return nil
	case t.state == messages.ToolStatePending:
		t.updated, t.dirty = seq, true
		return nil
	}
	return p.refuse(seq, ev, "call %s is already %s", call, t.state)
}

// runningTool checks the call is running, records the new state and returns
// its part in the assistant message.
func (p *projector) runningTool(seq int64, ev messages.Event, am, call string, next messages.ToolState) (*messages.ToolPart, error) {
	t, err := p.tool(am, call)
	if err != nil {
		return nil, err
	}
	if t == nil || t.state != messages.ToolStateRunning {
		state := messages.ToolState("")
		if t != nil {
			state = t.state
		}
		return nil, p.refuse(seq, ev, "call %s of %s is not running (state %q)", call, am, state)
	}
	if next != messages.ToolStateRunning {
		t.state, t.updated, t.dirty = next, seq, true
	}
	m, err := p.assistant(seq, ev, am)
	if err != nil {
		return nil, err
	}
	tp := toolPart(m, call)
	if tp == nil {
		return nil, p.refuse(seq, ev, "call %s has no part in %s", call, am)
	}
	return tp, nil
}

func toolPart(m *messages.Message, call string) *messages.ToolPart {
	for i := len(m.Parts) - 1; i >= 0; i-- {
		if t := m.Parts[i].Tool; t != nil && t.CallID == call {
			return t
		}
	}
	return nil
}

func (p *projector) newMessage(seq int64, ev messages.Event, m messages.Message) error {
	if _, ok := p.msgs[m.ID]; ok {
		return p.refuse(seq, ev, "message %s already exists", m.ID)
	}
	// An ID stored by an earlier append is caught by session_messages'
	// unique key on message_id in flush (one statement fewer per new message).
	e := &msgEntry{m: m, isNew: true, ev: ev}
	p.msgs[m.ID] = e
	p.order = append(p.order, e)
	return nil
}

// assistant loads an assistant message for change.
func (p *projector) assistant(seq int64, ev messages.Event, id string) (*messages.Message, error) {
	if e, ok := p.msgs[id]; ok {
		if e.m.Role != messages.RoleAssistant {
			return nil, p.refuse(seq, ev, "message %s is a %s message", id, e.m.Role)
		}
		e.dirty = true
		return &e.m, nil
	}
	if cm := p.cache.msg(id); cm != nil { // cached messages are assistant messages
		m, err := cm.decode()
		if err != nil {
			return nil, fmt.Errorf("message %s body: %w", id, err)
		}
		e := &msgEntry{m: m, dirty: true}
		p.msgs[id] = e
		p.order = append(p.order, e)
		return &e.m, nil
	}
	var m messages.Message
	var role string
	var body []byte
	err := p.row(qMessageByID, id, p.sid).Scan(&m.Seq, &m.Index, &role, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, p.refuse(seq, ev, "no assistant message %s", id)
	} else if err != nil {
		return nil, fmt.Errorf("message %s: %w", id, err)
	}
	if messages.Role(role) != messages.RoleAssistant {
		return nil, p.refuse(seq, ev, "message %s is a %s message", id, role)
	}
	if err := msgpack.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("message %s body: %w", id, err)
	}
	m.ID, m.Role = id, messages.RoleAssistant
	e := &msgEntry{m: m, dirty: true}
	p.msgs[id] = e
	p.order = append(p.order, e)
	return &e.m, nil
}

// openTurn loads an assistant message that has not finished yet.
func (p *projector) openTurn(seq int64, ev messages.Event, id string) (*messages.Message, error) {
	m, err := p.assistant(seq, ev, id)
	if err != nil {
		return nil, err
	}
	if m.Finished {
		return nil, p.refuse(seq, ev, "turn %s already ended", id)
	}
	return m, nil
}

// flush writes the messages, tool calls and status changed by this batch
// with as few statements as the changes allow (the embedded engine's cost is
// per statement): all new rows of a table in one multi-row INSERT, one
// changed row by UPDATE, several by one INSERT … ON DUPLICATE KEY UPDATE
// (dearer per statement than either, so only when it replaces two or more).
func (p *projector) flush() error {
	var fresh, changed []*msgEntry
	var newArgs []any
	if p.bodies == nil {
		p.bodies, p.fresh = map[string][]byte{}, map[string]bool{}
	}
	for _, e := range p.order {
		switch {
		case e.isNew:
			fresh = append(fresh, e)
		case e.dirty:
			changed = append(changed, e)
		default:
			continue
		}
	}
	body := func(e *msgEntry) ([]byte, error) {
		b, err := msgpack.Marshal(&e.m)
		if err != nil {
			return nil, fmt.Errorf("encode message %s: %w", e.m.ID, err)
		}
		p.bodies[e.m.ID] = b
		return b, nil
	}
	for _, e := range fresh {
		p.fresh[e.m.ID] = true
		b, err := body(e)
		if err != nil {
			return err
		}
		newArgs = append(newArgs, p.sid, e.m.Seq, e.m.Index, e.m.ID, string(e.m.Role), b)
	}
	if len(newArgs) > 0 {
		if err := execMulti(p.ctx, p.tx, p.n, &mMessages, newArgs); err != nil {
			if isDuplicate(err) {
				return p.duplicateMessage(fresh)
			}
			return fmt.Errorf("messages: %w", err)
		}
	}
	switch len(changed) {
	case 0:
	case 1:
		e := changed[0]
		b, err := body(e)
		if err != nil {
			return err
		}
		if _, err := p.exec(qUpdateMessage, b, p.sid, e.m.Seq, e.m.Index); err != nil {
			return fmt.Errorf("message %s: %w", e.m.ID, err)
		}
	default:
		var args []any
		for _, e := range changed {
			b, err := body(e)
			if err != nil {
				return err
			}
			args = append(args, p.sid, e.m.Seq, e.m.Index, e.m.ID, string(e.m.Role), b)
		}
		if err := execMulti(p.ctx, p.tx, p.n, &mMessagesUpsert, args); err != nil {
			return fmt.Errorf("messages: %w", err)
		}
	}
	for _, e := range p.order {
		e.isNew, e.dirty = false, false
	}

	var newTools, changedTools []*toolRow
	for _, t := range p.torder {
		switch {
		case t.isNew:
			newTools = append(newTools, t)
		case t.dirty:
			changedTools = append(changedTools, t)
		}
	}
	toolArgs := func(ts []*toolRow) []any {
		args := make([]any, 0, len(ts)*mTools.cols)
		for _, t := range ts {
			args = append(args, p.sid, t.am, t.call, t.tool, t.agent, string(t.state), t.seq, t.updated)
		}
		return args
	}
	if len(newTools) > 0 {
		if err := execMulti(p.ctx, p.tx, p.n, &mTools, toolArgs(newTools)); err != nil {
			return fmt.Errorf("tool calls: %w", err)
		}
	}
	switch len(changedTools) {
	case 0:
	case 1:
		t := changedTools[0]
		if _, err := p.exec(qUpdateTool, t.tool, t.agent, string(t.state), t.updated, p.sid, t.am, t.call); err != nil {
			return fmt.Errorf("tool call %s of %s: %w", t.call, t.am, err)
		}
	default:
		if err := execMulti(p.ctx, p.tx, p.n, &mToolsUpsert, toolArgs(changedTools)); err != nil {
			return fmt.Errorf("tool calls: %w", err)
		}
	}
	for _, t := range p.torder {
		t.isNew, t.dirty = false, false
	}

	if p.status != "" && p.status != p.known {
		if _, err := p.exec(qSetStatus, string(p.status), p.sid); err != nil {
			return err
		}
	}
	if p.status != "" {
		p.known, p.status = p.status, ""
	}
	return nil
}

// duplicateMessage names the new message whose ID an earlier append stored
// (the multi-row insert only says that one of them was).
func (p *projector) duplicateMessage(fresh []*msgEntry) error {
	for _, e := range fresh {
		var seq, idx int64
		var role string
		var body []byte
		err := p.row(qMessageByID, e.m.ID, p.sid).Scan(&seq, &idx, &role, &body)
		if err == nil && (seq != e.m.Seq || idx != int64(e.m.Index)) {
			return p.refuse(e.m.Seq, e.ev, "message %s already exists", e.m.ID)
		}
	}
	e := fresh[0]
	return p.refuse(e.m.Seq, e.ev, "one of the %d new messages from %s on already exists", len(fresh), e.m.ID)
}

// settleQuestion marks a pending question request replied or rejected.
func (p *projector) settleQuestion(seq int64, ev messages.Event, id, state string, fill func(*QuestionRequest)) error {
	var body []byte
	var cur string
	err := p.row(qQuestion, p.sid, id).Scan(&body, &cur)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && cur != "pending") {
		return p.refuse(seq, ev, "question request %s is not pending", id)
	} else if err != nil {
		return err
	}
	var q QuestionRequest
	if err := msgpack.Unmarshal(body, &q); err != nil {
		return fmt.Errorf("question %s body: %w", id, err)
	}
	fill(&q)
	q.SettledSeq = seq
	if body, err = msgpack.Marshal(q); err != nil {
		return err
	}
	_, err = p.exec(qSettleQuestion, body, state, p.sid, id)
	return err
}

// revert folds a revert event into the session_reverts row with the fold
// the session core uses (messages.Reverts.Apply). The history rows stay:
// ModelHistory leaves out what the row says is hidden, so a clear brings
// the messages back unchanged.
func (p *projector) revert(seq int64, ev messages.Event) error {
	if p.reverts == nil {
		var body []byte
		err := p.row(qReverts, p.sid).Scan(&body)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			p.reverts = &messages.Reverts{}
		case err != nil:
			return err
		default:
			r, err := decodeReverts(p.sid, body)
			if err != nil {
				return err
			}
			p.reverts, p.revertsFound = &r, true
		}
	}
	next := *p.reverts
	if err := next.Apply(p.sid, seq, ev); err != nil {
		return p.refuse(seq, ev, "%v", err)
	}
	body, err := msgpack.Marshal(next)
	if err != nil {
		return err
	}
	if p.revertsFound {
		_, err = p.exec(qUpdateReverts, body, p.sid)
	} else {
		_, err = p.exec(qInsertReverts, p.sid, body)
	}
	if err != nil {
		return err
	}
	p.reverts, p.revertsFound = &next, true
	return nil
}

func decodeReverts(sid string, body []byte) (messages.Reverts, error) {
	var r messages.Reverts
	if err := msgpack.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("session %s: reverts body: %w", sid, err)
	}
	return r, nil
}
