package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// The pure mapping between the runtime's types and the wire shapes.

func millis(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMicro()) / 1000
}

func toModel(m messages.ModelRef) *wire.ModelRef {
	if m.ID == "" && m.Provider == "" {
		return nil
	}
	return &wire.ModelRef{ID: m.ID, ProviderID: m.Provider, Variant: m.Variant}
}

func fromModel(m wire.ModelRef) messages.ModelRef {
	return messages.ModelRef{Provider: m.ProviderID, ID: m.ID, Variant: m.Variant}
}

// projectID names a Location stably (OpenCode's projects are directories).
func projectID(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "prj_" + hex.EncodeToString(sum[:8])
}

func toSession(s persistence.Session, created, updated time.Time) wire.Session {
	return wire.Session{
		ID:        s.ID,
		ProjectID: projectID(s.Location),
		Agent:     s.Agent,
		Model:     toModel(s.Model),
		Time:      wire.SessionTime{Created: millis(created), Updated: millis(updated)},
		Location:  wire.LocationRef{Directory: s.Location},
		Status:    string(s.Status),
		LastSeq:   s.LastSeq,
	}
}

// fromPrompt maps a wire prompt to the runtime's: files become "file"
// attachments (mime from the request, else from the name's extension),
// agents "agent" attachments.
func fromPrompt(p wire.Prompt) messages.Prompt {
	out := messages.Prompt{Text: p.Text}
	for _, f := range p.Files {
		mt := f.Mime
		if mt == "" {
			mt = guessMime(f.URI, f.Name)
		}
		out.Attachments = append(out.Attachments, messages.Attachment{Kind: "file", Name: f.Name, MediaType: mt, URI: f.URI})
	}
	for _, a := range p.Agents {
		out.Attachments = append(out.Attachments, messages.Attachment{Kind: "agent", Name: a.Name})
	}
	return out
}

func guessMime(uri, name string) string {
	for _, s := range []string{name, uri} {
		if t := mime.TypeByExtension(path.Ext(s)); t != "" {
			return t
		}
	}
	if strings.HasSuffix(uri, "/") {
		return "application/x-directory"
	}
	return "text/plain"
}

func toPrompt(p messages.Prompt) wire.Prompt {
	out := wire.Prompt{Text: p.Text}
	for _, a := range p.Attachments {
		switch a.Kind {
		case "agent":
			out.Agents = append(out.Agents, wire.AgentAttachment{Name: a.Name})
		default:
			mt := a.MediaType
			if mt == "" {
				mt = "application/octet-stream"
			}
			out.Files = append(out.Files, wire.FileAttachment{URI: a.URI, Mime: mt, Name: a.Name})
		}
	}
	return out
}

// The message variants, each with exactly OpenCode's fields (required ones
// always present).

type msgTime struct {
	Created float64 `json:"created"`
}

type userMessage struct {
	ID       string                 `json:"id"`
	Type     string                 `json:"type"`
	Time     msgTime                `json:"time"`
	Metadata wire.MessageMetadata   `json:"metadata"`
	Text     string                 `json:"text"`
	Files    []wire.FileAttachment  `json:"files,omitempty"`
	Agents   []wire.AgentAttachment `json:"agents,omitempty"`
}

type systemMessage struct {
	ID       string               `json:"id"`
	Type     string               `json:"type"`
	Time     msgTime              `json:"time"`
	Metadata wire.MessageMetadata `json:"metadata"`
	Text     string               `json:"text"`
}

type compactionMessage struct {
	ID       string               `json:"id"`
	Type     string               `json:"type"`
	Time     msgTime              `json:"time"`
	Metadata wire.MessageMetadata `json:"metadata"`
	Reason   string               `json:"reason"`
	Summary  string               `json:"summary"`
	Recent   string               `json:"recent"`
}

type assistantMessage struct {
	ID       string               `json:"id"`
	Type     string               `json:"type"`
	Time     msgTime              `json:"time"`
	Metadata wire.MessageMetadata `json:"metadata"`
	Agent    string               `json:"agent"`
	Model    wire.ModelRef        `json:"model"`
	Content  []any                `json:"content"`
	Finish   string               `json:"finish,omitempty"`
	Tokens   *wire.Tokens         `json:"tokens,omitempty"`
	Error    *wire.ErrorDetail    `json:"error,omitempty"`
}

type textContent struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Text string `json:"text"`
}

type toolContent struct {
	Type  string        `json:"type"`
	ID    string        `json:"id"`
	Name  string        `json:"name"`
	State any           `json:"state"`
	Time  wire.ToolTime `json:"time"`
}

type pendingState struct {
	Status string `json:"status"`
	Input  string `json:"input"`
}

type settledState struct {
	Status      string             `json:"status"`
	Input       json.RawMessage    `json:"input"`
	Structured  json.RawMessage    `json:"structured"`
	Content     []wire.ToolContent `json:"content"`
	OutputPaths []string           `json:"outputPaths,omitempty"`
	Error       *wire.ErrorDetail  `json:"error,omitempty"`
	Title       string             `json:"title,omitempty"`
}

func jsonObject(b []byte) json.RawMessage {
	if len(b) > 0 && json.Valid(b) {
		return json.RawMessage(b)
	}
	return json.RawMessage("{}")
}

// toMessage renders a projected message; at is the time of the event that
// created it.
func toMessage(m messages.Message, at time.Time) any {
	meta := wire.MessageMetadata{Seq: m.Seq, Index: m.Index}
	t := msgTime{Created: millis(at)}
	switch m.Role {
	case messages.RoleUser:
		u := userMessage{ID: m.ID, Type: "user", Time: t, Metadata: meta}
		meta.Delivery = string(m.Delivery)
		u.Metadata = meta
		if m.Prompt != nil {
			p := toPrompt(*m.Prompt)
			u.Text, u.Files, u.Agents = p.Text, p.Files, p.Agents
		}
		return u
	case messages.RoleSystem:
		return systemMessage{ID: m.ID, Type: "system", Time: t, Metadata: meta, Text: m.Text}
	case messages.RoleCompaction:
		return compactionMessage{ID: m.ID, Type: "compaction", Time: t, Metadata: meta, Reason: "auto", Summary: m.Text, Recent: m.RecentContext}
	}
	a := assistantMessage{ID: m.ID, Type: "assistant", Time: t, Metadata: meta, Agent: m.Agent, Content: []any{}}
	if mr := toModel(m.Model); mr != nil {
		a.Model = *mr
	}
	if m.Finished {
		a.Finish = m.FinishReason
		a.Tokens = &wire.Tokens{Input: float64(m.Usage.InputTokens), Output: float64(m.Usage.OutputTokens),
			Reasoning: float64(m.Usage.ReasoningTokens), Cache: wire.CacheTokens{Read: float64(m.Usage.CacheReadTokens), Write: float64(m.Usage.CacheWriteTokens)}}
	}
	if m.Error != "" {
		a.Error = &wire.ErrorDetail{Type: "unknown", Message: m.Error, Kind: m.ErrorKind}
		if a.Finish == "" {
			a.Finish = "error"
		}
	}
	for i, p := range m.Parts {
		id := fmt.Sprintf("prt_%d_%d", p.Seq, i)
		switch p.Kind {
		case messages.PartText, messages.PartReasoning:
			a.Content = append(a.Content, textContent{Type: string(p.Kind), ID: id, Text: p.Text})
		case messages.PartTool:
			if p.Tool == nil {
				continue
			}
			a.Content = append(a.Content, toolContent{Type: "tool", ID: p.Tool.CallID, Name: p.Tool.Tool, State: toolState(p.Tool), Time: wire.ToolTime{Created: millis(at)}})
		}
	}
	return a
}

func toolState(t *messages.ToolPart) any {
	if t.State == messages.ToolStatePending {
		return pendingState{Status: "pending", Input: string(t.Input)}
	}
	s := settledState{Status: string(t.State), Input: jsonObject(t.Input), Structured: jsonObject(t.Structured), Content: []wire.ToolContent{}, Title: t.Title}
	switch t.State {
	case messages.ToolStateCompleted:
		s.Content = append(s.Content, wire.ToolContent{Type: "text", Text: t.Output})
		if t.ManagedPath != "" {
			s.OutputPaths = []string{t.ManagedPath}
		}
	case messages.ToolStateFailed:
		s.Status = "error"
		s.Error = &wire.ErrorDetail{Type: "unknown", Message: t.Error}
	}
	return s
}

// eventNames maps the runtime's event names to OpenCode's session.next.*
// family where one exists; the others keep their own name under the same
// prefix, so a stream has exactly one item per durable seq.
var eventNames = map[string]string{
	"session.turn.started":    "session.next.step.started",
	"session.turn.ended":      "session.next.step.ended",
	"session.turn.failed":     "session.next.step.failed",
	"session.tool.succeeded":  "session.next.tool.success",
	"session.prompt.promoted": "session.next.prompted",
	// A failed drain is OpenCode's session.error (its SDK and TUI show it),
	// with the runtime's kind beside the error.
	"session.drain.failed": "session.error",
	// The question tool's requests are OpenCode's question.v2.* events.
	"session.question.asked":    "question.v2.asked",
	"session.question.replied":  "question.v2.replied",
	"session.question.rejected": "question.v2.rejected",
}

func eventName(t messages.EventType) string {
	if n, ok := eventNames[t.Name]; ok {
		return n
	}
	return "session.next." + strings.TrimPrefix(t.Name, "session.")
}

// eventID is stable across replays: the same seq always has the same ID.
func eventID(sessionID string, seq int64) string {
	return "evt_" + strings.TrimPrefix(sessionID, "ses_") + "_" + strconv.FormatInt(seq, 10)
}

// toEvent renders a durable event. now stands in for events published on
// the live bus without a commit time.
func toEvent(env messages.Envelope, now time.Time) wire.Event {
	return wire.Event{
		ID:      eventID(env.SessionID, env.Seq),
		Type:    eventName(env.Type),
		Durable: &wire.Durable{AggregateID: env.SessionID, Seq: env.Seq, Version: env.Type.Version},
		Data:    appendEventData(make([]byte, 0, 256), env, now),
	}
}

// appendEventData appends a durable event's data object.
func appendEventData(b []byte, env messages.Envelope, now time.Time) []byte {
	at := env.Time
	if at.IsZero() {
		at = now
	}
	var arr [12]field
	data := append(eventData(arr[:0], env.Event), field{"timestamp", millis(at)}, field{"sessionID", env.SessionID})
	out, err := appendFields(b, data)
	if err != nil {
		j, _ := json.Marshal(map[string]any{"sessionID": env.SessionID, "error": err.Error()})
		out = append(b, j...)
	}
	return out
}

// eventData appends an event's data fields (OpenCode's payload of the
// event, without timestamp and sessionID) to d. Keys are unique; the
// encoder sorts them as encoding/json sorts a map's.
func eventData(d fields, ev messages.Event) fields {
	switch e := ev.(type) {
	case messages.SessionCreated:
		d = append(d, field{"location", wire.LocationRef{Directory: e.Location}}, field{"agent", e.Agent}, field{"model", toModel(e.Model)})
		if e.Title != "" {
			d = append(d, field{"title", e.Title})
		}
		return d
	case messages.PromptAdmitted:
		return append(d, field{"messageID", e.MessageID}, field{"prompt", toPrompt(e.Prompt)}, field{"delivery", string(e.Delivery)})
	case promptedEvent:
		d = eventData(d, e.PromptPromoted)
		return append(d, field{"prompt", toPrompt(e.prompt)}, field{"delivery", string(e.delivery)})
	case messages.PromptPromoted:
		d = append(d, field{"messageIDs", e.MessageIDs})
		if len(e.MessageIDs) > 0 {
			d = append(d, field{"messageID", e.MessageIDs[0]})
		}
		return d
	case messages.ContextEpochInitialized:
		return append(d, field{"revision", e.Revision}, field{"baseline", e.Baseline}, field{"location", e.Location})
	case messages.ContextEpochReplaced:
		return append(d, field{"revision", e.Revision}, field{"baseline", e.Baseline}, field{"location", e.Location})
	case messages.ContextEpochCleared:
		return append(d, field{"reason", e.Reason})
	case messages.ContextUpdated:
		return append(d, field{"messageID", e.MessageID}, field{"text", e.Text})
	case messages.AgentSwitched:
		return append(d, field{"agent", e.Agent})
	case messages.SessionRenamed:
		return append(d, field{"title", e.Title})
	case messages.SessionDeleted:
		return d
	case messages.ModelSwitched:
		return append(d, field{"model", toModel(e.Model)})
	case messages.Moved:
		return append(d, field{"from", wire.LocationRef{Directory: e.From}}, field{"location", wire.LocationRef{Directory: e.To}})
	case messages.TurnStarted:
		d = append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"agent", e.Agent}, field{"model", toModel(e.Model)})
		if e.Snapshot != "" {
			d = append(d, field{"snapshot", e.Snapshot})
		}
		return d
	case messages.RevertStaged:
		return append(d, field{"revert", wire.RevertState{MessageID: e.MessageID, Snapshot: e.Snapshot}}, field{"files", nonNil(e.Files)})
	case messages.RevertCommitted:
		return append(d, field{"messageID", e.MessageID})
	case messages.RevertRestored:
		return append(d, field{"snapshot", e.Snapshot})
	case messages.RevertCleared, messages.RevertFinalized:
		return d
	case messages.TurnEnded:
		u := e.Usage
		return append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"finish", e.FinishReason}, field{"cost", 0.0},
			field{"tokens", wire.Tokens{Input: float64(u.InputTokens), Output: float64(u.OutputTokens), Reasoning: float64(u.ReasoningTokens),
				Cache: wire.CacheTokens{Read: float64(u.CacheReadTokens), Write: float64(u.CacheWriteTokens)}}})
	case messages.TurnFailed:
		return append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"error", wire.ErrorDetail{Type: "unknown", Message: e.Message, Kind: e.ErrorKind}})
	case messages.TextEnded:
		return append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"textID", textID(e.AssistantMessageID)}, field{"text", e.Text})
	case messages.ReasoningEnded:
		return append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"reasoningID", reasoningID(e.AssistantMessageID)}, field{"text", e.Text})
	case messages.ToolInputStarted:
		return append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"callID", e.CallID}, field{"name", e.Tool})
	case messages.ToolInputEnded:
		return append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"callID", e.CallID}, field{"name", e.Tool}, field{"text", string(e.Input)})
	case messages.ToolCalled:
		return append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"callID", e.CallID}, field{"tool", e.Tool},
			field{"input", jsonObject(e.Input)}, field{"agent", e.Agent}, field{"provider", providerNotExecuted})
	case messages.ToolProgress:
		return append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"callID", e.CallID}, field{"title", e.Title}, field{"metadata", jsonObject(e.Metadata)})
	case messages.ToolSucceeded:
		d = append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"callID", e.CallID},
			field{"content", []wire.ToolContent{{Type: "text", Text: e.Output}}}, field{"structured", jsonObject(e.Structured)}, field{"lossy", e.Lossy},
			field{"provider", providerNotExecuted})
		if e.ManagedPath != "" {
			d = append(d, field{"outputPaths", []string{e.ManagedPath}})
		}
		return d
	case messages.ToolFailed:
		return append(d, field{"assistantMessageID", e.AssistantMessageID}, field{"callID", e.CallID}, field{"error", wire.ErrorDetail{Type: "unknown", Message: e.Error}})
	case messages.PermissionAsked:
		return append(d, field{"id", e.RequestID}, field{"action", e.Action}, field{"resources", nonNil(e.Resources)},
			field{"source", wire.PermissionSource{Type: "tool", MessageID: e.AssistantMessageID, CallID: e.CallID}})
	case messages.PermissionReplied:
		return append(d, field{"requestID", e.RequestID}, field{"reply", string(e.Reply)}, field{"message", e.Feedback})
	case messages.CompactionStarted:
		return append(d, field{"compactionID", e.CompactionID})
	case messages.CompactionEnded:
		return append(d, field{"compactionID", e.CompactionID}, field{"summary", e.Summary}, field{"recent", e.RecentContext})
	case messages.Interrupted:
		return append(d, field{"reason", e.Reason})
	case messages.QuestionAsked:
		return append(d, field{"id", e.RequestID}, field{"questions", toQuestionInfos(e.Questions)},
			field{"tool", wire.QuestionTool{MessageID: e.AssistantMessageID, CallID: e.CallID}})
	case messages.QuestionReplied:
		return append(d, field{"requestID", e.RequestID}, field{"answers", nonNilAnswers(e.Answers)})
	case messages.QuestionRejected:
		return append(d, field{"requestID", e.RequestID})
	case messages.DrainFailed:
		return append(d, field{"error", sessionError(e)}, field{"kind", e.Kind})
	case messages.Idle:
		return d
	case messages.HistoryCopied:
		ids := make([]string, len(e.Messages))
		for i, m := range e.Messages {
			ids[i] = m.ID
		}
		return append(d, field{"from", e.From}, field{"messageID", e.MessageID}, field{"messageIDs", ids})
	}
	// A type this server does not know yet: its payload as JSON.
	b, err := json.Marshal(ev)
	if err != nil {
		return d
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return d
	}
	for k, v := range m {
		d = append(d, field{k, v})
	}
	return d
}

// providerNotExecuted is ToolCalled's provider: sessionrt runs every tool.
var providerNotExecuted = map[string]any{"executed": false}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// deltaNames maps live-only fragments to OpenCode's delta events.
var deltaNames = map[messages.DeltaKind]string{
	messages.TextDelta:       "session.next.text.delta",
	messages.ReasoningDelta:  "session.next.reasoning.delta",
	messages.ToolInputDelta:  "session.next.tool.input.delta",
	messages.CompactionDelta: "session.next.compaction.delta",
}

func toDelta(d messages.Delta, now time.Time) wire.Event {
	name, ok := deltaNames[d.Kind]
	if !ok {
		name = "session.next." + string(d.Kind) + ".delta"
	}
	var arr [6]field
	data := append(arr[:0], field{"timestamp", millis(now)}, field{"sessionID", d.SessionID}, field{"assistantMessageID", d.AssistantMessageID}, field{"delta", d.Text})
	if d.CallID != "" {
		data = append(data, field{"callID", d.CallID})
	}
	switch d.Kind {
	case messages.TextDelta:
		data = append(data, field{"textID", textID(d.AssistantMessageID)})
	case messages.ReasoningDelta:
		data = append(data, field{"reasoningID", reasoningID(d.AssistantMessageID)})
	}
	b, _ := appendFields(nil, data)
	return wire.Event{ID: messages.NewID("evt"), Type: name, Data: b}
}

// toStatus renders a live session status as OpenCode's session.status.
func toStatus(sessionID string, st actors.SessionStatus) wire.Event {
	b, _ := json.Marshal(statusData(sessionID, st))
	return wire.Event{ID: messages.NewID("evt"), Type: wire.EventSessionStatus, Data: b}
}

// statusData is a session.status event's data (the same in V1 and V2).
func statusData(sessionID string, st actors.SessionStatus) wire.SessionStatus {
	k := wire.SessionStatusKind{Type: st.Type}
	if st.Type == "retry" {
		attempt, next := st.Attempt, st.Next.UnixMilli()
		k.Attempt, k.Message, k.Next = &attempt, st.Message, &next
	}
	return wire.SessionStatus{SessionID: sessionID, Status: k}
}

func toPermission(p persistence.Permission) wire.PermissionRequest {
	return wire.PermissionRequest{ID: p.RequestID, SessionID: p.SessionID, Action: p.Action, Resources: nonNil(p.Resources),
		Source: &wire.PermissionSource{Type: "tool", MessageID: p.AssistantMessageID, CallID: p.CallID}}
}

// Message cursors are "<seq>.<index>": opaque to clients, exact for us.
func encodeCursor(c persistence.Cursor) string { return fmt.Sprintf("%d.%d", c.Seq, c.Index) }

func decodeCursor(s string) (persistence.Cursor, error) {
	var c persistence.Cursor
	seq, idx, ok := strings.Cut(s, ".")
	if !ok {
		return c, fmt.Errorf("cursor %q: want a cursor from a previous response", s)
	}
	if _, err := fmt.Sscanf(seq+" "+idx, "%d %d", &c.Seq, &c.Index); err != nil || c.Seq < 0 || c.Index < 0 {
		return c, fmt.Errorf("cursor %q: want a cursor from a previous response", s)
	}
	return c, nil
}

// sessionErrorInfo is OpenCode's session.error error: {name, data: {message}}.
type sessionErrorInfo struct {
	Name string           `json:"name"`
	Data sessionErrorData `json:"data"`
}

// sessionErrorData is a SessionError's data.
type sessionErrorData struct {
	Message     string `json:"message"`
	IsRetryable *bool  `json:"isRetryable,omitempty"` // APIError requires it
}

// sessionError names a failed drain's error as OpenCode's union does: a
// provider that failed after its retries is an APIError, a context that
// does not fit a ContextOverflowError, anything else an UnknownError.
func sessionError(e messages.DrainFailed) sessionErrorInfo {
	switch e.Kind {
	case "provider":
		no := false
		return sessionErrorInfo{Name: "APIError", Data: sessionErrorData{Message: e.Message, IsRetryable: &no}}
	case "overflow":
		return sessionErrorInfo{Name: "ContextOverflowError", Data: sessionErrorData{Message: e.Message}}
	}
	return sessionErrorInfo{Name: "UnknownError", Data: sessionErrorData{Message: e.Message}}
}

func nonNilAnswers(a [][]string) [][]string {
	if a == nil {
		return [][]string{}
	}
	return a
}
