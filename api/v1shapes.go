package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// OpenCode's V1 shapes (../shared/api/opencode-1.18.33-server.openapi.json)
// and the pure projection of the journal's sessions, messages and parts into
// them. The V1 clients (opencode attach, opencode run --attach) keep messages
// and parts in arrays sorted by ID and binary-search them, so every ID here
// sorts in display order and is derived from the journal alone: the same
// message gives the same part IDs in a list, in a live event and after a
// restart.

// v1Version is what V1 sessions report as the version that wrote them.
const v1Version = "sessionrt"

type v1SessionTime struct {
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

type v1Session struct {
	ID        string        `json:"id"`
	Slug      string        `json:"slug"`
	ProjectID string        `json:"projectID"`
	Directory string        `json:"directory"`
	Title     string        `json:"title"`
	Version   string        `json:"version"`
	Agent     string        `json:"agent,omitempty"`
	Model     *v1SessionRef `json:"model,omitempty"`
	Time      v1SessionTime `json:"time"`
	Revert    *v1Revert     `json:"revert,omitempty"`
}

type v1SessionRef struct {
	ID         string `json:"id"`
	ProviderID string `json:"providerID"`
}

type v1ModelRef struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
	Variant    string `json:"variant,omitempty"`
}

type v1UserInfo struct {
	ID        string     `json:"id"`
	SessionID string     `json:"sessionID"`
	Role      string     `json:"role"`
	Time      v1Created  `json:"time"`
	Agent     string     `json:"agent"`
	Model     v1ModelRef `json:"model"`
}

type v1Created struct {
	Created int64 `json:"created"`
}

type v1AssistantTime struct {
	Created   int64 `json:"created"`
	Completed int64 `json:"completed,omitempty"`
}

type v1Path struct {
	Cwd  string `json:"cwd"`
	Root string `json:"root"`
}

type v1Cache struct {
	Read  int64 `json:"read"`
	Write int64 `json:"write"`
}

type v1Tokens struct {
	Total     int64   `json:"total,omitempty"`
	Input     int64   `json:"input"`
	Output    int64   `json:"output"`
	Reasoning int64   `json:"reasoning"`
	Cache     v1Cache `json:"cache"`
}

// v1Error is OpenCode's NamedError shape: UnknownError,
// MessageAbortedError, ContextOverflowError.
type v1Error struct {
	Name string      `json:"name"`
	Data v1ErrorData `json:"data"`
}

type v1ErrorData struct {
	Message string `json:"message"`
}

type v1AssistantInfo struct {
	ID         string          `json:"id"`
	SessionID  string          `json:"sessionID"`
	Role       string          `json:"role"`
	Time       v1AssistantTime `json:"time"`
	Error      *v1Error        `json:"error,omitempty"`
	ParentID   string          `json:"parentID"`
	ModelID    string          `json:"modelID"`
	ProviderID string          `json:"providerID"`
	Mode       string          `json:"mode"`
	Agent      string          `json:"agent"`
	Path       v1Path          `json:"path"`
	Summary    bool            `json:"summary,omitempty"`
	Cost       float64         `json:"cost"`
	Tokens     v1Tokens        `json:"tokens"`
	Finish     string          `json:"finish,omitempty"`
}

type v1PartTime struct {
	Start int64 `json:"start"`
	End   int64 `json:"end,omitempty"`
}

// v1Part is every part variant in one struct: Type says which fields are
// set, and the omitempty rules leave exactly that variant's fields.
type v1Part struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	Type      string `json:"type"`
	// text, reasoning
	Text      *string     `json:"text,omitempty"`
	Synthetic bool        `json:"synthetic,omitempty"`
	Time      *v1PartTime `json:"time,omitempty"`
	// file
	Mime     string `json:"mime,omitempty"`
	Filename string `json:"filename,omitempty"`
	URL      string `json:"url,omitempty"`
	// tool
	CallID string       `json:"callID,omitempty"`
	Tool   string       `json:"tool,omitempty"`
	State  *v1ToolState `json:"state,omitempty"`
	// step-finish
	Reason string    `json:"reason,omitempty"`
	Cost   *float64  `json:"cost,omitempty"`
	Tokens *v1Tokens `json:"tokens,omitempty"`
}

// v1ToolState is ToolStateRunning, ToolStateCompleted or ToolStateError.
type v1ToolState struct {
	Status   string          `json:"status"`
	Input    json.RawMessage `json:"input"`
	Output   *string         `json:"output,omitempty"`
	Error    string          `json:"error,omitempty"`
	Title    *string         `json:"title,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Time     v1PartTime      `json:"time"`
}

type v1MessageWithParts struct {
	Info  any      `json:"info"`
	Parts []v1Part `json:"parts"`
}

func v1Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// v1Slug is a short stable name for a session (OpenCode shows it in URLs).
func v1Slug(id string) string {
	s := strings.TrimPrefix(id, "ses_")
	if len(s) > 12 {
		s = s[len(s)-12:]
	}
	return s
}

func toV1Session(s persistence.Session, title string, created, updated time.Time) v1Session {
	out := v1Session{ID: s.ID, Slug: v1Slug(s.ID), ProjectID: projectID(s.Location), Directory: s.Location,
		Title: title, Version: v1Version, Agent: s.Agent,
		Time: v1SessionTime{Created: v1Millis(created), Updated: v1Millis(updated)}}
	if s.Model.ID != "" || s.Model.Provider != "" {
		out.Model = &v1SessionRef{ID: s.Model.ID, ProviderID: s.Model.Provider}
	}
	return out
}

// Part IDs: "prt_" + the message ID's suffix + a suffix that sorts the
// parts of one message in display order: the step's start, reasoning, text,
// the tool calls in call order (by the seq of their ToolCalled), the step's
// end. User messages: the text, then the files.
const (
	v1PartStep      = "_0step"
	v1PartReasoning = "_1reasoning"
	v1PartText      = "_2text"
	v1PartTool      = "_3tool"
	v1PartFinish    = "_9finish"
	v1PartFile      = "_4file"
)

func v1PartID(messageID, suffix string) string {
	return "prt_" + strings.TrimPrefix(messageID, "msg_") + suffix
}

func v1ToolPartID(messageID string, calledSeq int64) string {
	return v1PartID(messageID, fmt.Sprintf("%s%012d", v1PartTool, calledSeq))
}

func v1Textual(i int, suffix string) string {
	if i == 0 {
		return suffix
	}
	return fmt.Sprintf("%s%03d", suffix, i)
}

func strPtr(s string) *string { return &s }

func v1UsageTokens(u messages.Usage) v1Tokens {
	return v1Tokens{Total: u.InputTokens + u.OutputTokens + u.ReasoningTokens + u.CacheReadTokens + u.CacheWriteTokens,
		Input: u.InputTokens, Output: u.OutputTokens, Reasoning: u.ReasoningTokens,
		Cache: v1Cache{Read: u.CacheReadTokens, Write: u.CacheWriteTokens}}
}

// v1TurnError maps a failed turn to OpenCode's named errors: an interrupted
// turn is MessageAbortedError (the TUI shows it as such, not as a failure).
func v1TurnError(kind, msg string) *v1Error {
	switch kind {
	case "interrupted":
		return &v1Error{Name: "MessageAbortedError", Data: v1ErrorData{Message: msg}}
	case "overflow":
		return &v1Error{Name: "ContextOverflowError", Data: v1ErrorData{Message: msg}}
	}
	return &v1Error{Name: "UnknownError", Data: v1ErrorData{Message: msg}}
}

func v1UserParts(sessionID, messageID string, p *messages.Prompt) []v1Part {
	parts := []v1Part{}
	if p == nil {
		return parts
	}
	parts = append(parts, v1Part{ID: v1PartID(messageID, v1PartText), SessionID: sessionID, MessageID: messageID, Type: "text", Text: strPtr(p.Text)})
	n := 0
	for _, a := range p.Attachments {
		if a.Kind == "agent" {
			continue
		}
		mt := a.MediaType
		if mt == "" {
			mt = "application/octet-stream"
		}
		parts = append(parts, v1Part{ID: v1PartID(messageID, fmt.Sprintf("%s%03d", v1PartFile, n)), SessionID: sessionID, MessageID: messageID,
			Type: "file", Mime: mt, Filename: a.Name, URL: a.URI})
		n++
	}
	return parts
}

// v1Input is a tool call's input as the object OpenCode's clients read
// fields from ({} when it is not a JSON object).
func v1Input(b []byte) json.RawMessage {
	if len(b) > 0 && b[0] == '{' && json.Valid(b) {
		return json.RawMessage(b)
	}
	return json.RawMessage("{}")
}

func v1ToolPart(sessionID, messageID string, seq int64, t *messages.ToolPart, start, end int64) v1Part {
	st := &v1ToolState{Input: v1Input(t.Input), Time: v1PartTime{Start: start}}
	switch t.State {
	case messages.ToolStateCompleted:
		st.Status, st.Output, st.Title, st.Metadata = "completed", strPtr(t.Output), strPtr(t.Title), v1ToolMetadata(t.Input, t.Output)
		st.Time.End = max(end, start)
	case messages.ToolStateFailed:
		st.Status, st.Error, st.Metadata = "error", t.Error, v1ToolMetadata(t.Input, "")
		st.Time.End = max(end, start)
	default:
		st.Status = "running"
		if t.Title != "" {
			st.Title = strPtr(t.Title)
		}
	}
	return v1Part{ID: v1ToolPartID(messageID, seq), SessionID: sessionID, MessageID: messageID, Type: "tool", CallID: t.CallID, Tool: t.Tool, State: st}
}

// v1ToolMetadata is the metadata OpenCode's clients render a finished tool
// call from: the output to show (bash's, without sessionrt's
// <bash_metadata> trailer, whose exit code goes to "exit") and the call's
// description.
func v1ToolMetadata(input []byte, output string) json.RawMessage {
	md := map[string]any{"output": output}
	if i := strings.LastIndex(output, "<bash_metadata>"); i >= 0 && strings.HasSuffix(strings.TrimSpace(output), "</bash_metadata>") {
		md["output"] = strings.TrimRight(output[:i], "\n")
		var code int
		if _, err := fmt.Sscanf(output[i:], "<bash_metadata>exit code %d", &code); err == nil {
			md["exit"] = code
		}
	}
	var in struct {
		Description string `json:"description"`
	}
	if json.Unmarshal(input, &in) == nil && in.Description != "" {
		md["description"] = in.Description
	}
	b, _ := json.Marshal(md)
	return b
}

// v1Projection renders projected messages in V1 shapes. at gives the commit
// time of an event by seq (zero when unknown); parent is the ID of the user
// message that precedes the first one (for a page that starts mid-history).
type v1Projection struct {
	sessionID string
	directory string
	agent     string
	model     messages.ModelRef
	at        func(seq int64) time.Time
	parent    string
}

// render maps persistence messages to V1 messages with parts, in order;
// system messages (context updates) have no V1 form and are left out.
func (p *v1Projection) render(msgs []messages.Message) []v1MessageWithParts {
	out := make([]v1MessageWithParts, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case messages.RoleUser:
			p.parent = m.ID
			out = append(out, v1MessageWithParts{Info: p.user(m.ID, p.at(m.Seq)), Parts: v1UserParts(p.sessionID, m.ID, m.Prompt)})
		case messages.RoleAssistant:
			out = append(out, p.assistant(m))
		case messages.RoleCompaction:
			info := p.assistantInfo(m.ID, p.at(m.Seq), m.Agent, m.Model)
			info.Summary, info.Finish, info.Time.Completed = true, "stop", info.Time.Created
			text := v1Part{ID: v1PartID(m.ID, v1PartText), SessionID: p.sessionID, MessageID: m.ID, Type: "text", Text: strPtr(m.Text),
				Time: &v1PartTime{Start: info.Time.Created, End: info.Time.Created}}
			out = append(out, v1MessageWithParts{Info: info, Parts: []v1Part{text}})
		}
	}
	return out
}

func (p *v1Projection) user(id string, created time.Time) v1UserInfo {
	return v1UserInfo{ID: id, SessionID: p.sessionID, Role: "user", Time: v1Created{Created: v1Millis(created)},
		Agent: p.agent, Model: v1ModelRef{ProviderID: p.model.Provider, ModelID: p.model.ID, Variant: p.model.Variant}}
}

func (p *v1Projection) assistantInfo(id string, created time.Time, agent string, model messages.ModelRef) v1AssistantInfo {
	if agent == "" {
		agent = p.agent
	}
	if model.ID == "" {
		model = p.model
	}
	return v1AssistantInfo{ID: id, SessionID: p.sessionID, Role: "assistant", Time: v1AssistantTime{Created: v1Millis(created)},
		ParentID: p.parent, ModelID: model.ID, ProviderID: model.Provider, Mode: agent, Agent: agent,
		Path: v1Path{Cwd: p.directory, Root: p.directory}, Tokens: v1Tokens{}}
}

func (p *v1Projection) assistant(m messages.Message) v1MessageWithParts {
	created := v1Millis(p.at(m.Seq))
	info := p.assistantInfo(m.ID, p.at(m.Seq), m.Agent, m.Model)
	last := created
	parts := []v1Part{{ID: v1PartID(m.ID, v1PartStep), SessionID: p.sessionID, MessageID: m.ID, Type: "step-start"}}
	var texts, reasonings, tools int
	var lastToolSeq int64
	for _, pt := range m.Parts {
		t := max(v1Millis(p.at(pt.Seq)), created)
		last = max(last, t)
		switch pt.Kind {
		case messages.PartText:
			parts = append(parts, v1Part{ID: v1PartID(m.ID, v1Textual(texts, v1PartText)), SessionID: p.sessionID, MessageID: m.ID,
				Type: "text", Text: strPtr(pt.Text), Time: &v1PartTime{Start: created, End: t}})
			texts++
		case messages.PartReasoning:
			parts = append(parts, v1Part{ID: v1PartID(m.ID, v1Textual(reasonings, v1PartReasoning)), SessionID: p.sessionID, MessageID: m.ID,
				Type: "reasoning", Text: strPtr(pt.Text), Time: &v1PartTime{Start: created, End: t}})
			reasonings++
		case messages.PartTool:
			if pt.Tool != nil {
				tp := v1ToolPart(p.sessionID, m.ID, pt.Seq, pt.Tool, t, t)
				if pt.Seq == lastToolSeq {
					// The calls of a copied message share one seq (a fork's).
					tools++
					tp.ID += fmt.Sprintf("_%03d", tools)
				}
				lastToolSeq = pt.Seq
				parts = append(parts, tp)
			}
		}
	}
	if m.Finished {
		info.Time.Completed = last
		info.Tokens = v1UsageTokens(m.Usage)
		info.Finish = m.FinishReason
		if m.Error != "" {
			info.Error = v1TurnError(m.ErrorKind, m.Error)
			if info.Finish == "" {
				info.Finish = "error"
			}
		} else {
			cost := 0.0
			tok := info.Tokens
			parts = append(parts, v1Part{ID: v1PartID(m.ID, v1PartFinish), SessionID: p.sessionID, MessageID: m.ID, Type: "step-finish",
				Reason: m.FinishReason, Cost: &cost, Tokens: &tok})
		}
	}
	// Clients keep parts sorted by ID (the order they show).
	slices.SortStableFunc(parts, func(a, b v1Part) int { return strings.Compare(a.ID, b.ID) })
	return v1MessageWithParts{Info: info, Parts: parts}
}
