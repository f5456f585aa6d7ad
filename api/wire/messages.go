package wire

import "encoding/json"

// Message is one projected Session message (OpenCode's SessionMessage
// union) in a form that decodes every variant: Type says which fields mean
// something. The server encodes each variant with exactly its fields.
type Message struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"` // user, assistant, system, compaction
	Time     MessageTime     `json:"time"`
	Metadata MessageMetadata `json:"metadata"`

	// user, system
	Text   string            `json:"text,omitempty"`
	Files  []FileAttachment  `json:"files,omitempty"`
	Agents []AgentAttachment `json:"agents,omitempty"`

	// assistant
	Agent   string       `json:"agent,omitempty"`
	Model   *ModelRef    `json:"model,omitempty"`
	Content []Content    `json:"content,omitempty"`
	Finish  string       `json:"finish,omitempty"`
	Tokens  *Tokens      `json:"tokens,omitempty"`
	Error   *ErrorDetail `json:"error,omitempty"`

	// compaction
	Reason  string `json:"reason,omitempty"`
	Summary string `json:"summary,omitempty"`
	Recent  string `json:"recent,omitempty"`
}

// MessageTime holds millisecond Unix times.
type MessageTime struct {
	Created   float64 `json:"created"`
	Completed float64 `json:"completed,omitempty"`
}

// MessageMetadata is sessionrt's position of a message: the seq of the event
// that created it and its index within that event.
type MessageMetadata struct {
	Seq      int64  `json:"seq"`
	Index    int    `json:"index"`
	Delivery string `json:"delivery,omitempty"` // user messages
}

// Content is one part of an assistant message: text, reasoning or tool.
type Content struct {
	Type  string     `json:"type"`
	ID    string     `json:"id"`
	Text  string     `json:"text,omitempty"`
	Name  string     `json:"name,omitempty"` // tool
	State *ToolState `json:"state,omitempty"`
	Time  *ToolTime  `json:"time,omitempty"`
}

// ToolState is a tool call's state: pending, running, completed or error.
type ToolState struct {
	Status     string          `json:"status"`
	Input      json.RawMessage `json:"input"` // a JSON string while pending, else an object
	Structured json.RawMessage `json:"structured,omitempty"`
	Content    []ToolContent   `json:"content,omitempty"`
	// OutputPaths name the managed file holding the full output.
	OutputPaths []string     `json:"outputPaths,omitempty"`
	Error       *ErrorDetail `json:"error,omitempty"`
	// Title is the latest progress title (sessionrt).
	Title string `json:"title,omitempty"`
}

// ToolContent is model-visible tool output.
type ToolContent struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

// ToolTime holds millisecond Unix times of a tool call.
type ToolTime struct {
	Created float64 `json:"created"`
}

// ErrorDetail is OpenCode's SessionErrorUnknown plus sessionrt's kind.
type ErrorDetail struct {
	Type    string `json:"type"` // "unknown"
	Message string `json:"message"`
	Kind    string `json:"kind,omitempty"`
}

// MessagesResponse answers GET /api/session/{id}/message.
type MessagesResponse struct {
	Data   []Message `json:"data"`
	Cursor Cursor    `json:"cursor"`
}

// Epoch is the current Context Epoch: the verbatim baseline and the
// model-hidden snapshot (its stored JSON when it is JSON).
type Epoch struct {
	Revision    int64           `json:"revision"`
	Baseline    string          `json:"baseline"`
	Snapshot    json.RawMessage `json:"snapshot,omitempty"`
	Location    string          `json:"location"`
	BaselineSeq int64           `json:"baselineSeq"`
	UpdatedSeq  int64           `json:"updatedSeq"`
}

// ContextResponse answers GET /api/session/{id}/context: the model-visible
// history (OpenCode's data) and the epoch (sessionrt; null when none).
type ContextResponse struct {
	Data  []Message `json:"data"`
	Epoch *Epoch    `json:"epoch"`
}

// Durable is an event's position in its session's stream.
type Durable struct {
	AggregateID string `json:"aggregateID"`
	Seq         int64  `json:"seq"`
	Version     int    `json:"version"`
}

// Event is one event of a stream: a durable session event (Durable set) or
// a live-only item of the global stream (Durable nil). Data's shape depends
// on Type ("session.next.…", "server.connected", "server.cut").
type Event struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Durable *Durable        `json:"durable,omitempty"`
	Data    json.RawMessage `json:"data"`
}

// HistoryResponse answers GET /api/session/{id}/history.
type HistoryResponse struct {
	Data    []Event `json:"data"`
	HasMore bool    `json:"hasMore"`
}

// Cut is the data of the global stream's last event when the server cut a
// slow subscriber: resume each session from its last seen seq with
// GET /api/session/{id}/event?after=SEQ.
type Cut struct {
	Message string           `json:"message"`
	LastSeq map[string]int64 `json:"lastSeq"`
}

// Event type names the server emits beyond the session family.
const (
	EventConnected = "server.connected"
	EventCut       = "server.cut"
	// EventError ends a session stream the server cannot continue (an
	// undecodable stored event); its data names the cause.
	EventError = "server.error"
	// EventSessionStatus is OpenCode's live-only session status; sessionrt
	// sends it while a drain waits for its journal ({"type":"retry",
	// "attempt","message","next"}) and once it resumed ({"type":"busy"}).
	EventSessionStatus = "session.status"
)

// SessionStatus is the data of a session.status event.
type SessionStatus struct {
	SessionID string            `json:"sessionID"`
	Status    SessionStatusKind `json:"status"`
}

// SessionStatusKind is OpenCode's SessionStatus: idle, busy, or retry with
// the attempt count, the reason and when the next attempt is due (ms).
type SessionStatusKind struct {
	Type    string `json:"type"`
	Attempt *int   `json:"attempt,omitempty"`
	Message string `json:"message,omitempty"`
	Next    *int64 `json:"next,omitempty"`
}
