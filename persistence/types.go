package persistence

import (
	"errors"
	"fmt"
	"time"

	"github.com/sessionrt/sessionrt/messages"
)

// Sentinel errors callers branch on (test with errors.Is).
var (
	// ErrConflict: the expected seq is stale (another append won); nothing was written.
	ErrConflict = errors.New("journal conflict: stale expected seq")
	// ErrFenced: a newer owner acquired the session; nothing was written.
	ErrFenced = errors.New("journal fenced: ownership epoch superseded")
	// ErrNotFound: no such session (or row).
	ErrNotFound = errors.New("not found")
	// ErrDeleted: a session with this ID existed and was deleted
	// (session.deleted); its ID is not reused.
	ErrDeleted = errors.New("session deleted")
	// ErrPromptConflict: a prompt message ID reused for another session,
	// prompt or delivery mode.
	ErrPromptConflict = errors.New("prompt message ID reused with different content")
	// ErrBacklogFull: the session's pending inbox is at its configured limit.
	ErrBacklogFull = errors.New("inbox backlog limit reached")
	// ErrProjection: an event breaks a projection invariant; the append was rolled back.
	ErrProjection = errors.New("projection refused event")
	// ErrInvalidEvent: an event (or the append's arguments) cannot be
	// written at all, e.g. it does not encode; nothing was written.
	ErrInvalidEvent = errors.New("invalid event")
)

// ConflictError is the ErrConflict of an append whose expected seq was
// stale; Last is the stream head the transaction saw, so a writer that owns
// the session can reload and retry from there without another read.
type ConflictError struct {
	Expected, Last int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%v: expected seq %d, last is %d", ErrConflict, e.Expected, e.Last)
}
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// DecodeError is a stored event row that cannot be decoded (unknown type or
// corrupt payload). Replay stops at it. Unwrap gives messages.ErrUnknownType
// or messages.ErrUndecodable.
type DecodeError struct {
	SessionID string
	Seq       int64
	Type      messages.EventType
	Err       error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("session %s seq %d type %s: %v", e.SessionID, e.Seq, e.Type, e.Err)
}
func (e *DecodeError) Unwrap() error { return e.Err }

// Status is a session's drain status.
type Status string

const (
	// StatusIdle: no drain in progress (never drained, or ended with Idle/Interrupted).
	StatusIdle Status = "idle"
	// StatusBusy: a drain started (PromptPromoted, TurnStarted, CompactionStarted)
	// and has not ended; at start-up these sessions were mid-drain.
	StatusBusy Status = "busy"
)

// Session is the sessions projection row.
type Session struct {
	ID         string
	Location   string
	Agent      string
	Model      messages.ModelRef
	Title      string // the client's title ("": none)
	Deleted    bool   // session.deleted (only DeletedSession reads such a row)
	Status     Status
	CreatedSeq int64
	HistorySeq int64 // seq of the latest completed compaction (the history boundary); 0 none
	LastSeq    int64 // the stream's last event seq
}

// Ownership is what Acquire grants: the epoch to pass to every append and
// the stream's last seq to use as the first expectedSeq.
type Ownership struct {
	Epoch   int64
	LastSeq int64
}

// InboxEntry is one admitted prompt (session_input row).
type InboxEntry struct {
	SessionID   string
	MessageID   string
	AdmittedSeq int64
	PromotedSeq int64 // 0 while pending
	Delivery    messages.Delivery
	Prompt      messages.Prompt
	// Held: no drain is owed for it (admitted with PromptAdmitted.Held, or
	// pending at an Interrupted); a later prompt or run still promotes it.
	Held bool
}

// Receipt answers an admission. A duplicate (same ID, same content) returns
// the original AdmittedSeq with Duplicate set and writes nothing.
type Receipt struct {
	SessionID   string
	MessageID   string
	Delivery    messages.Delivery
	AdmittedSeq int64
	LastSeq     int64 // the stream's last seq after the call (unchanged for a duplicate)
	Duplicate   bool
	// Admitted is the commit time of the PromptAdmitted event (the time a
	// read of that event shows); zero for a duplicate, whose event is older.
	Admitted time.Time
}

// Cursor is an exclusive position in a session's message history.
// The zero Cursor is before the first message.
type Cursor struct {
	Seq   int64
	Index int
}

// Page is one page of history. More is exact: true iff a message no revert
// hides exists after Next, so the page after a More page is never empty.
type Page struct {
	Messages []messages.Message
	Next     Cursor // position of the last message returned (or the request's cursor)
	More     bool
}

// Epoch is the current Context Epoch.
type Epoch struct {
	Revision    int64
	Baseline    string // verbatim provider-cache prefix
	Snapshot    []byte
	Location    string
	BaselineSeq int64 // seq of the Initialized/Replaced event
	UpdatedSeq  int64 // seq of the last event that changed it
}

// ToolCall is a tool_calls projection row.
type ToolCall struct {
	SessionID          string
	AssistantMessageID string
	CallID             string
	Tool               string
	Agent              string
	State              messages.ToolState
	Seq                int64 // first event of the call
	UpdatedSeq         int64
}

// Permission is a permission request (pending until replied).
type Permission struct {
	SessionID          string                   `msgpack:"-"`
	RequestID          string                   `msgpack:"-"`
	Seq                int64                    `msgpack:"-"`
	Pending            bool                     `msgpack:"-"`
	AssistantMessageID string                   `msgpack:"am"`
	CallID             string                   `msgpack:"c"`
	Action             string                   `msgpack:"a"`
	Resources          []string                 `msgpack:"r,omitempty"`
	Reply              messages.PermissionReply `msgpack:"rp,omitempty"`
	Feedback           string                   `msgpack:"fb,omitempty"`
	RepliedSeq         int64                    `msgpack:"rs,omitempty"`
}

// QuestionRequest is a question tool call's request (the questions table).
type QuestionRequest struct {
	SessionID          string              `msgpack:"-"`
	RequestID          string              `msgpack:"-"`
	Seq                int64               `msgpack:"-"`
	State              string              `msgpack:"-"` // pending, replied or rejected
	AssistantMessageID string              `msgpack:"am"`
	CallID             string              `msgpack:"c"`
	Questions          []messages.Question `msgpack:"qs"`
	Answers            [][]string          `msgpack:"a,omitempty"`
	Reason             string              `msgpack:"r,omitempty"`
	SettledSeq         int64               `msgpack:"ss,omitempty"`
}
