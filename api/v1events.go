package api

import (
	"encoding/json"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
)

// v1Event is one event of OpenCode's V1 bus (GET /event) and, wrapped with
// its directory, of the global bus (GET /global/event).
type v1Event struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Properties any    `json:"properties"`
}

type v1GlobalEvent struct {
	Directory string  `json:"directory"`
	Project   string  `json:"project,omitempty"`
	Payload   v1Event `json:"payload"`
}

func newV1Event(typ string, props any) v1Event {
	return v1Event{ID: messages.NewID("evt"), Type: typ, Properties: props}
}

type v1StatusProps struct {
	SessionID string   `json:"sessionID"`
	Status    v1Status `json:"status"`
}

type v1Status struct {
	Type string `json:"type"` // idle, busy
}

type v1SessionProps struct {
	SessionID string `json:"sessionID"`
}

type v1SessionInfoProps struct {
	SessionID string    `json:"sessionID"`
	Info      v1Session `json:"info"`
}

type v1MessageProps struct {
	SessionID string `json:"sessionID"`
	Info      any    `json:"info"`
}

type v1PartProps struct {
	SessionID string `json:"sessionID"`
	Part      v1Part `json:"part"`
	Time      int64  `json:"time"`
}

type v1DeltaProps struct {
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	PartID    string `json:"partID"`
	Field     string `json:"field"`
	Delta     string `json:"delta"`
}

type v1ErrorProps struct {
	SessionID string   `json:"sessionID"`
	Error     *v1Error `json:"error"`
}

type v1PermissionTool struct {
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"`
}

// v1Permission is OpenCode's PermissionRequest (and permission.asked).
type v1Permission struct {
	ID         string            `json:"id"`
	SessionID  string            `json:"sessionID"`
	Permission string            `json:"permission"`
	Patterns   []string          `json:"patterns"`
	Metadata   json.RawMessage   `json:"metadata"`
	Always     []string          `json:"always"`
	Tool       *v1PermissionTool `json:"tool,omitempty"`
}

type v1PermissionReplied struct {
	SessionID string `json:"sessionID"`
	RequestID string `json:"requestID"`
	Reply     string `json:"reply"`
}

// v1Turn is what a stream remembers of a provider turn to render its parts
// from events that carry only a delta or a result.
type v1Turn struct {
	info       v1AssistantInfo
	textStart  int64 // 0 until the text part was announced, -1 once ended
	reasonOpen int64 // the same for reasoning
	tools      map[string]*v1Call
}

type v1Call struct {
	seq   int64
	tool  string
	input json.RawMessage
	start int64
	title string
}

// v1Session state of one stream: enough to render each event alone.
type v1Sess struct {
	busy      bool
	lastSeq   int64
	directory string
	agent     string
	model     messages.ModelRef
	parent    string // the last promoted user message
	prompts   map[string]messages.Prompt
	turns     map[string]*v1Turn
	ended     map[string]bool // turns ended since the last idle: late deltas are dropped
}

// v1Translator turns the runtime's live items (durable events and deltas)
// into V1 events. It keeps, per session, the little state V1 events need
// (the open turn's parts, the tool inputs, busy or idle) and drops a durable
// event it has already seen, so the same session may be fed from the bus
// and from a journal tail without duplicates. Pure: no I/O, time comes in.
type v1Translator struct {
	sessions map[string]*v1Sess
	// lookup fills in a session the stream has not seen created (its
	// location, agent and model); nil or failing leaves them empty.
	lookup func(id string) (v1Sess, bool)
	// info reads a session as GET /session/{id} answers it, for
	// session.updated; nil or failing sends none.
	info func(id string) (v1Session, bool)
	// deleted reads a deleted session as GET /session/{id} answered it
	// (its title, its creation time), for session.deleted; nil or failing
	// sends what the stream knows.
	deleted func(id string) (v1Session, bool)
}

func newV1Translator(lookup func(string) (v1Sess, bool)) *v1Translator {
	return &v1Translator{sessions: map[string]*v1Sess{}, lookup: lookup}
}

func (t *v1Translator) session(id string) *v1Sess {
	s := t.sessions[id]
	if s == nil {
		s = &v1Sess{}
		if t.lookup != nil {
			if found, ok := t.lookup(id); ok {
				*s = found
			}
		}
		s.prompts, s.turns, s.ended = map[string]messages.Prompt{}, map[string]*v1Turn{}, map[string]bool{}
		t.sessions[id] = s
	}
	return s
}

// forget drops what the translator keeps of an idle session, so that a
// long-lived stream holds only the sessions at work.
func (t *v1Translator) forget(id string) { delete(t.sessions, id) }

// directory is the Location of a session the stream has seen.
func (t *v1Translator) directory(id string) string { return t.session(id).directory }

func (t *v1Translator) proj(id string, s *v1Sess) *v1Projection {
	return &v1Projection{sessionID: id, directory: s.directory, agent: s.agent, model: s.model, parent: s.parent}
}

func (t *v1Translator) busy(id string, s *v1Sess, out []v1Event) []v1Event {
	if s.busy {
		return out
	}
	s.busy = true
	return append(out, newV1Event("session.status", v1StatusProps{SessionID: id, Status: v1Status{Type: "busy"}}))
}

func (t *v1Translator) idle(id string, s *v1Sess, out []v1Event) []v1Event {
	s.busy = false
	clear(s.turns)
	clear(s.ended)
	return append(out,
		newV1Event("session.status", v1StatusProps{SessionID: id, Status: v1Status{Type: "idle"}}),
		newV1Event("session.idle", v1SessionProps{SessionID: id}))
}

// translate renders one live item; now stands for a delta's time.
func (t *v1Translator) translate(item actors.Live, now time.Time) []v1Event {
	if item.Delta != nil {
		return t.delta(*item.Delta, now)
	}
	if item.Status != nil { // a drain waiting for the journal, or resumed
		return []v1Event{newV1Event("session.status", statusData(item.SessionID, *item.Status))}
	}
	if item.Event == nil {
		return nil
	}
	env := *item.Event
	s := t.session(env.SessionID)
	if env.Seq <= s.lastSeq {
		return nil
	}
	s.lastSeq = env.Seq
	at := env.Time
	if at.IsZero() {
		at = now
	}
	return t.durable(env.SessionID, s, env.Event, v1Millis(at))
}

func (t *v1Translator) turn(id string, s *v1Sess, am string, ms int64) *v1Turn {
	tr := s.turns[am]
	if tr == nil {
		tr = &v1Turn{info: t.proj(id, s).assistantInfo(am, time.UnixMilli(ms), s.agent, s.model), tools: map[string]*v1Call{}}
		s.turns[am] = tr
	}
	return tr
}

func (t *v1Translator) part(id string, p v1Part, ms int64) v1Event {
	return newV1Event("message.part.updated", v1PartProps{SessionID: id, Part: p, Time: ms})
}

func (t *v1Translator) message(id string, info any) v1Event {
	return newV1Event("message.updated", v1MessageProps{SessionID: id, Info: info})
}

func (t *v1Translator) durable(id string, s *v1Sess, ev messages.Event, ms int64) []v1Event {
	var out []v1Event
	switch e := ev.(type) {
	case messages.SessionCreated:
		s.directory, s.agent, s.model = e.Location, e.Agent, e.Model
		info := v1Session{ID: id, Slug: v1Slug(id), ProjectID: projectID(e.Location), Directory: e.Location, Version: v1Version, Agent: e.Agent,
			Title: e.Title, Time: v1SessionTime{Created: ms, Updated: ms}}
		if e.Model.ID != "" {
			info.Model = &v1SessionRef{ID: e.Model.ID, ProviderID: e.Model.Provider}
		}
		out = append(out, newV1Event("session.created", v1SessionInfoProps{SessionID: id, Info: info}))
	case messages.SessionDeleted:
		// OpenCode's TUI drops the session from its lists (and leaves it
		// when it shows it) on this event; it reads only info.id. Other
		// clients get the whole Session.Info, as OpenCode sends it.
		info, ok := v1Session{}, false
		if t.deleted != nil {
			info, ok = t.deleted(id)
		}
		if !ok {
			info = v1Session{ID: id, Slug: v1Slug(id), ProjectID: projectID(s.directory), Directory: s.directory, Version: v1Version, Agent: s.agent}
		}
		info.Time.Updated = ms
		out = append(out, newV1Event("session.deleted", v1SessionInfoProps{SessionID: id, Info: info}))
	case messages.AgentSwitched:
		s.agent = e.Agent
	case messages.ModelSwitched:
		s.model = e.Model
	case messages.Moved:
		s.directory = e.To
	case messages.PromptAdmitted:
		s.prompts[e.MessageID] = e.Prompt
		p := t.proj(id, s)
		out = append(out, t.message(id, p.user(e.MessageID, time.UnixMilli(ms))))
		for _, part := range v1UserParts(id, e.MessageID, &e.Prompt) {
			out = append(out, t.part(id, part, ms))
		}
	case messages.PromptPromoted:
		if n := len(e.MessageIDs); n > 0 {
			s.parent = e.MessageIDs[n-1]
		}
		for _, mid := range e.MessageIDs {
			delete(s.prompts, mid)
		}
		out = t.busy(id, s, out)
	case messages.TurnStarted:
		out = t.busy(id, s, out)
		tr := t.turn(id, s, e.AssistantMessageID, ms)
		// A delta that overtook this event may have opened the turn first.
		tr.info.ParentID, tr.info.Agent, tr.info.Mode = s.parent, e.Agent, e.Agent
		tr.info.ModelID, tr.info.ProviderID = e.Model.ID, e.Model.Provider
		out = append(out, t.message(id, tr.info),
			t.part(id, v1Part{ID: v1PartID(e.AssistantMessageID, v1PartStep), SessionID: id, MessageID: e.AssistantMessageID, Type: "step-start"}, ms))
	case messages.TextEnded:
		tr := t.turn(id, s, e.AssistantMessageID, ms)
		start := tr.textStart
		if start <= 0 {
			start = ms
		}
		tr.textStart = -1 // ended: a late delta is dropped
		out = append(out, t.part(id, v1Part{ID: v1PartID(e.AssistantMessageID, v1PartText), SessionID: id, MessageID: e.AssistantMessageID,
			Type: "text", Text: strPtr(e.Text), Time: &v1PartTime{Start: start, End: ms}}, ms))
	case messages.ReasoningEnded:
		tr := t.turn(id, s, e.AssistantMessageID, ms)
		start := tr.reasonOpen
		if start <= 0 {
			start = ms
		}
		tr.reasonOpen = -1
		out = append(out, t.part(id, v1Part{ID: v1PartID(e.AssistantMessageID, v1PartReasoning), SessionID: id, MessageID: e.AssistantMessageID,
			Type: "reasoning", Text: strPtr(e.Text), Time: &v1PartTime{Start: start, End: ms}}, ms))
	case messages.ToolCalled:
		tr := t.turn(id, s, e.AssistantMessageID, ms)
		c := &v1Call{seq: s.lastSeq, tool: e.Tool, input: v1Input(e.Input), start: ms}
		tr.tools[e.CallID] = c
		out = append(out, t.part(id, t.toolPart(id, e.AssistantMessageID, e.CallID, c, &v1ToolState{Status: "running", Input: c.input, Time: v1PartTime{Start: ms}}), ms))
	case messages.ToolProgress:
		c := t.call(id, s, e.AssistantMessageID, e.CallID, ms)
		c.title = e.Title
		st := &v1ToolState{Status: "running", Input: c.input, Time: v1PartTime{Start: c.start}}
		if e.Title != "" {
			st.Title = strPtr(e.Title)
		}
		if len(e.Metadata) > 0 && json.Valid(e.Metadata) {
			st.Metadata = json.RawMessage(e.Metadata)
		}
		out = append(out, t.part(id, t.toolPart(id, e.AssistantMessageID, e.CallID, c, st), ms))
	case messages.ToolSucceeded:
		c := t.call(id, s, e.AssistantMessageID, e.CallID, ms)
		st := &v1ToolState{Status: "completed", Input: c.input, Output: strPtr(e.Output), Title: strPtr(c.title),
			Metadata: v1ToolMetadata(c.input, e.Output), Time: v1PartTime{Start: c.start, End: ms}}
		out = append(out, t.part(id, t.toolPart(id, e.AssistantMessageID, e.CallID, c, st), ms))
	case messages.ToolFailed:
		c := t.call(id, s, e.AssistantMessageID, e.CallID, ms)
		st := &v1ToolState{Status: "error", Input: c.input, Error: e.Error, Metadata: v1ToolMetadata(c.input, ""), Time: v1PartTime{Start: c.start, End: ms}}
		out = append(out, t.part(id, t.toolPart(id, e.AssistantMessageID, e.CallID, c, st), ms))
	case messages.PermissionAsked:
		out = append(out, newV1Event("permission.asked", toV1Permission(id, e.RequestID, e.Action, e.Resources, e.AssistantMessageID, e.CallID)))
	case messages.PermissionReplied:
		out = append(out, newV1Event("permission.replied", v1PermissionReplied{SessionID: id, RequestID: e.RequestID, Reply: string(e.Reply)}))
	case messages.TurnEnded:
		tr := t.turn(id, s, e.AssistantMessageID, ms)
		tok := v1UsageTokens(e.Usage)
		tr.info.Time.Completed, tr.info.Tokens, tr.info.Finish = ms, tok, e.FinishReason
		cost := 0.0
		out = append(out,
			t.part(id, v1Part{ID: v1PartID(e.AssistantMessageID, v1PartFinish), SessionID: id, MessageID: e.AssistantMessageID, Type: "step-finish",
				Reason: e.FinishReason, Cost: &cost, Tokens: &tok}, ms),
			t.message(id, tr.info))
		delete(s.turns, e.AssistantMessageID)
		s.ended[e.AssistantMessageID] = true
	case messages.TurnFailed:
		tr := t.turn(id, s, e.AssistantMessageID, ms)
		tr.info.Time.Completed, tr.info.Error, tr.info.Finish = ms, v1TurnError(e.ErrorKind, e.Message), "error"
		// The message carries the turn's error; session.error is told once,
		// when the drain ends because of it (DrainFailed).
		out = append(out, t.message(id, tr.info))
		delete(s.turns, e.AssistantMessageID)
		s.ended[e.AssistantMessageID] = true
	case messages.SessionRenamed, messages.RevertStaged, messages.RevertCommitted, messages.RevertCleared,
		messages.RevertRestored, messages.RevertFinalized:
		// The title and the revert are in the session's info: the other
		// attached clients learn of them from session.updated, with the info
		// as it is now (OpenCode's clients replace theirs with it whole; a
		// committed revert hides the messages from revert.messageID on).
		if t.info != nil {
			if info, ok := t.info(id); ok {
				out = append(out, newV1Event("session.updated", v1SessionInfoProps{SessionID: id, Info: info}))
			}
		}
	case messages.HistoryCopied:
		// A fork's messages, as OpenCode publishes those it copies.
		p := t.proj(id, s)
		p.at = func(int64) time.Time { return time.UnixMilli(ms) }
		for _, m := range p.render(e.At(s.lastSeq)) {
			out = append(out, t.message(id, m.Info))
			for _, pt := range m.Parts {
				out = append(out, t.part(id, pt, ms))
			}
		}
		s.parent = p.parent
	case messages.CompactionEnded:
		out = append(out, newV1Event("session.compacted", v1SessionProps{SessionID: id}))
	case messages.QuestionAsked:
		out = append(out, newV1Event("question.asked", v1Question{ID: e.RequestID, SessionID: id, Questions: toQuestionInfos(e.Questions),
			Tool: &wire.QuestionTool{MessageID: e.AssistantMessageID, CallID: e.CallID}}))
	case messages.QuestionReplied:
		out = append(out, newV1Event("question.replied", v1QuestionReplied{SessionID: id, RequestID: e.RequestID, Answers: nonNilAnswers(e.Answers)}))
	case messages.QuestionRejected:
		out = append(out, newV1Event("question.rejected", v1QuestionReplied{SessionID: id, RequestID: e.RequestID}))
	case messages.DrainFailed:
		out = append(out, newV1Event("session.error", v1ErrorProps{SessionID: id, Error: v1TurnError(e.Kind, e.Message)}))
	case messages.Interrupted, messages.Idle:
		out = t.idle(id, s, out)
	}
	return out
}

func (t *v1Translator) call(id string, s *v1Sess, am, callID string, ms int64) *v1Call {
	tr := t.turn(id, s, am, ms)
	c := tr.tools[callID]
	if c == nil { // the stream joined after the call: its input is unknown here
		c = &v1Call{seq: s.lastSeq, input: json.RawMessage("{}"), start: ms}
		tr.tools[callID] = c
	}
	return c
}

func (t *v1Translator) toolPart(id, am, callID string, c *v1Call, st *v1ToolState) v1Part {
	return v1Part{ID: v1ToolPartID(am, c.seq), SessionID: id, MessageID: am, Type: "tool", CallID: callID, Tool: c.tool, State: st}
}

// delta announces a text or reasoning part at its first fragment, then
// appends each fragment to it (message.part.delta, as OpenCode streams).
func (t *v1Translator) delta(d messages.Delta, now time.Time) []v1Event {
	var suffix string
	switch d.Kind {
	case messages.TextDelta:
		suffix = v1PartText
	case messages.ReasoningDelta:
		suffix = v1PartReasoning
	default:
		return nil
	}
	if d.AssistantMessageID == "" || d.Text == "" {
		return nil
	}
	s := t.session(d.SessionID)
	if s.ended[d.AssistantMessageID] {
		return nil
	}
	ms := v1Millis(now)
	tr := t.turn(d.SessionID, s, d.AssistantMessageID, ms)
	open := &tr.textStart
	if d.Kind == messages.ReasoningDelta {
		open = &tr.reasonOpen
	}
	if *open < 0 {
		return nil // the block's durable end was written: it has the whole text
	}
	partID := v1PartID(d.AssistantMessageID, suffix)
	var out []v1Event
	if *open == 0 {
		*open = ms
		typ := "text"
		if d.Kind == messages.ReasoningDelta {
			typ = "reasoning"
		}
		out = append(out, t.part(d.SessionID, v1Part{ID: partID, SessionID: d.SessionID, MessageID: d.AssistantMessageID, Type: typ,
			Text: strPtr(""), Time: &v1PartTime{Start: ms}}, ms))
	}
	return append(out, newV1Event("message.part.delta", v1DeltaProps{SessionID: d.SessionID, MessageID: d.AssistantMessageID,
		PartID: partID, Field: "text", Delta: d.Text}))
}

func toV1Permission(sessionID, requestID, action string, resources []string, am, callID string) v1Permission {
	p := v1Permission{ID: requestID, SessionID: sessionID, Permission: action, Patterns: nonNil(resources),
		Metadata: json.RawMessage("{}"), Always: nonNil(resources)}
	if callID != "" {
		p.Tool = &v1PermissionTool{MessageID: am, CallID: callID}
	}
	return p
}
