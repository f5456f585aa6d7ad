package protocol

import (
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/session"
)

// The commands a Session actor answers. They are plain values: the Sessions
// facade sends them locally, the cluster wraps them for other members. Every
// command that changes state carries the ID that makes a retry idempotent
// (the session ID itself, a prompt's message ID, a permission request ID).
// Run, Wake, Interrupt and Move also carry an ID: the cluster's request
// retry can deliver one command twice, and the grain answers a repeated ID
// with the first delivery's result instead of running it again (a second
// Run would start another drain; a second Interrupt could stop a later one).

// Create makes the session if it does not exist; an existing one is returned.
type Create struct {
	Location string
	Agent    string
	Model    messages.ModelRef
	Title    string // the client's title; "" for none
	// Copied is the history a fork starts with (Sessions.Fork), written
	// with the creation: nothing when the session exists already.
	Copied []messages.HistoryCopied
}

// Rename gives the session a title (durable: session.renamed).
type Rename struct{ Title string }

// Delete deletes an idle session (durable: session.deleted): from then on
// it is not found. A running session, or one owed a drain, is refused with
// CodeBusy (the client interrupts it first, as OpenCode's TUI does).
type Delete struct{}

// Prompt admits one input into the durable inbox.
type Prompt struct {
	MessageID string // generated when empty
	Prompt    messages.Prompt
	Delivery  messages.Delivery
	Resume    bool // schedule execution after admission
	// TraceParent is the caller's W3C trace context ("traceparent" header
	// value; Sessions.Prompt fills it from the context when empty): the
	// drain this prompt starts is a child of the caller's span, so one
	// trace shows the request and the work it caused, on whichever member
	// runs the session. A prompt that joins a running drain only adds input.
	TraceParent string `msgpack:",omitempty"`
}

// Run is an explicit resume: it joins the active drain or starts one that makes
// at least one provider attempt, and answers with the drain's Outcome.
type Run struct{ ID string }

// Wake reports new durable inbox work; it calls the provider only when input
// can be promoted. Wakes coalesce.
type Wake struct {
	ID string
	// Owed: the wake is recovery's (a cluster takeover, the journal's
	// return), not a client's: only input a drain is owed starts one, not
	// input held back (admitted without resume, or left pending by an
	// interrupt), which waits for the client's next wake, prompt or run.
	Owed bool
}

// Interrupt stops the active drain and answers once cleanup is done.
type Interrupt struct{ ID string }

// Compact asks for a manual compaction; the reply is the Outcome of the
// drain that runs it. Input admitted meanwhile waits, and is released by
// the follow-up drain whether the compaction succeeded or not.
type Compact struct{}

// Move changes the session's Location; the epoch is cleared.
type Move struct {
	To string
	ID string
}

// SwitchAgent selects the agent for the next provider turn.
type SwitchAgent struct{ Agent string }

// SwitchModel selects the model for the next provider turn.
type SwitchModel struct{ Model messages.ModelRef }

// ReplyPermission answers a pending permission request, or a question
// request (its ID starts with que_): Reply reject dismisses it (Feedback
// the reason), any other answers it with Answers, one per question.
type ReplyPermission struct {
	RequestID string
	Reply     messages.PermissionReply
	Feedback  string
	Answers   [][]string
}

// WaitIdle answers with the Outcome of the active drain, or at once when idle.
type WaitIdle struct{}

// Info answers Create, Move and the switches: the session as projected.
type Info struct {
	Session persistence.Session
	Created bool // this call created it
}

// Receipt answers Prompt.
type Receipt = persistence.Receipt

// Outcome answers Run and WaitIdle: how the drain ended.
type Outcome struct {
	// Err is empty when the drain ended normally, else why it stopped
	// (turn failure, turn limit, context blocked, interrupted).
	Err string
	// Kind classifies Err (session.OutcomeKind: "" completed, "provider",
	// "turn_limit", "context_blocked", "model", "compaction", "overflow",
	// "config", "tools", "location", "internal", "interrupted", "moved",
	// "fenced", "journal").
	Kind session.OutcomeKind
	// LastSeq is the stream's last seq when the drain ended.
	LastSeq int64
}

// Done answers commands that have nothing else to say (Wake, Interrupt, ReplyPermission).
type Done struct{ LastSeq int64 }
