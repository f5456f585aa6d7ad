package toolactors

import (
	"encoding/json"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/toolactors/permission"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// Messages of the registry actor. They are plain structs, local to the process: Tool
// values and Asker are Go interfaces. Treat them as immutable once sent.

// Contribute adds (or replaces) the tools of one scope. A later scope's tool shadows an
// earlier scope's tool of the same name until the later scope closes.
type Contribute struct {
	Scope string
	Tools []tools.Tool
}

// CloseScope removes a scope's tools and rebuilds the catalog.
type CloseScope struct {
	Scope string
}

// CatalogRequest asks for the advertised tool definitions under Rules (the effective
// agent's and session's rules): a tool whose action is denied on every resource is
// hidden. The reply is *Catalog.
type CatalogRequest struct {
	Rules []permission.Rule
}

// Catalog is the advertised tool set. Revision grows on every contribution change.
type Catalog struct {
	Revision uint64
	Tools    []tools.Definition
}

// ExecuteTool runs one complete tool call. The registry answers with exactly one
// *ToolSettled, sent to ReplyTo, or to the sender when ReplyTo is nil. A re-sent call
// (same SessionID and CallID) while the first is still running is ignored: the first
// one's settlement answers it. A call re-sent after its settlement runs again: the
// Session deduplicates through its journal.
type ExecuteTool struct {
	SessionID          string
	AssistantMessageID string
	CallID             string
	Tool               string
	Input              json.RawMessage
	// Agent is the effective agent of the provider turn that issued the call; empty
	// means the default build agent.
	Agent string
	// Dir is the Session's Location directory; if set it must be this registry's
	// Location (a moved session's stale runner is refused).
	Dir string
	// Rules are the permission rules of that agent and session, in order.
	Rules []permission.Rule
	// Asker raises pending permission requests for "ask" decisions; nil refuses asks.
	Asker   permission.Asker
	ReplyTo *actor.PID
}

// CancelTool interrupts a running call (CallID set) or every running call of a
// session (CallID empty). Each settles as ErrorInterrupted (unless it completed first);
// its process group is killed. Unknown calls are ignored. Sent as a request, it is
// answered with *CancelAck once every targeted call actor has stopped, that is, once
// its processes are dead and its settlement has been sent.
type CancelTool struct {
	SessionID string
	CallID    string
}

// CancelAck answers a CancelTool request.
type CancelAck struct {
	SessionID string
	CallID    string
	Stopped   int // call actors that were running and are now stopped
}

// ListCalls asks for the running calls; the reply is *Calls.
type ListCalls struct{}

// Calls lists running calls.
type Calls struct {
	Calls []RunningCall
}

// RunningCall is one running call and its actor.
type RunningCall struct {
	SessionID string
	CallID    string
	Tool      string
	Actor     *actor.PID
}

// ToolSettled is the one settlement of a call: exactly one of Output and Error is set.
type ToolSettled struct {
	SessionID          string
	AssistantMessageID string
	CallID             string
	Tool               string
	Agent              string
	Output             *ToolOutput
	Error              *ToolError
}

// ToolOutput is a successful call's Model Tool Output.
type ToolOutput struct {
	Title string
	// Text is the bounded model-visible text (the durable, replayable record).
	Text string
	// Structured is the tool's validated structured value, unbounded, as JSON; nil
	// when the tool has none.
	Structured json.RawMessage
	// Truncated: Text is a head/tail preview of a longer text.
	Truncated bool
	// ManagedPath is the Managed Tool Output File holding the complete text when it was
	// truncated; empty when nothing was cut or the file could not be written.
	ManagedPath string
	// Lossy: the text was truncated and the complete text could not be saved.
	Lossy bool
	// ToolManagedPath is a managed file the tool wrote itself; it survives bounding.
	ToolManagedPath string
}

// ErrorKind classifies a tool error; the Session branches on it.
type ErrorKind string

// Error kinds.
const (
	ErrorUnknownTool  ErrorKind = "unknown_tool"
	ErrorInvalidInput ErrorKind = "invalid_input" // Field names the offending field
	ErrorDenied       ErrorKind = "denied"        // a configured rule denies it
	// ErrorRejected: the client rejected the permission request. Without Feedback the
	// Session interrupts its drain; with Feedback the model sees the error.
	ErrorRejected    ErrorKind = "rejected"
	ErrorPanicked    ErrorKind = "panicked"
	ErrorInterrupted ErrorKind = "interrupted" // cancelled or killed; Message is "Tool execution interrupted"
	ErrorFailed      ErrorKind = "failed"      // the tool ran and failed; Message says why
)

// InterruptedMessage is the message of every ErrorInterrupted settlement.
const InterruptedMessage = "Tool execution interrupted"

// ToolError is a failed call's settlement.
type ToolError struct {
	Kind     ErrorKind
	Message  string // what the model sees
	Field    string // ErrorInvalidInput: the dotted field path
	Feedback string // ErrorRejected: the client's feedback, if any
}
