package effect

import (
	"context"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// flight is the turn in flight, from its stream's start (Drain.Stream)
// until the core ends it (EndTurn): its calls run under the agent and the
// rules it was built with, and its stream is cancelled with it.
type flight struct {
	token   uint64
	started messages.TurnStarted
	rules   []permission.Rule
	cancel  context.CancelFunc // the stream's
}

// Built is the turn built for the core's decision (TurnBuilt), nil when
// none is: what its request was built from, as the stream will send it.
func (x *Drain) Built() *Built { return x.next }

// Stream sends the built turn's request once its TurnStarted is durable
// (Ready.Stream), on its own goroutine (Stream, its parts and end tagged
// with token, which is never 0), under a context of ctx's that cancelling
// the turn cancels; the turn is in flight until the core ends it
// (EndTurn). It returns the turn's TurnStarted (less the snapshot).
func (x *Drain) Stream(ctx context.Context, token uint64) messages.TurnStarted {
	b := x.takeBuilt()
	ctx, cancel := context.WithCancel(ctx)
	x.turn = &flight{token: token, started: b.Started, rules: b.Rules, cancel: cancel}
	go Stream(ctx, b.Prov, b.Req, token, x.Post)
	return b.Started
}

// TurnToken is the token of the turn in flight, 0 when none: a stream's
// part or end, or a chaos probe of its calls, that carries another is
// stale.
func (x *Drain) TurnToken() uint64 {
	if x.turn == nil {
		return 0
	}
	return x.turn.token
}

// TurnID is the assistant message ID of the turn in flight, "" when none.
func (x *Drain) TurnID() string {
	if x.turn == nil {
		return ""
	}
	return x.turn.started.AssistantMessageID
}

// EndStream releases the stream of the turn in flight, which ended
// (StreamEnded); the turn stays in flight until its calls settle.
func (x *Drain) EndStream() { x.turn.cancel() }

// EndTurn forgets the turn in flight once the core ended it (a Ready's
// TurnEnd of assistantID).
func (x *Drain) EndTurn(assistantID string) {
	if x.turn != nil && x.turn.started.AssistantMessageID == assistantID {
		x.turn = nil
	}
}

// Interrupt cancels what the drain runs (Ready.Cancel): the turn in
// flight's stream and calls, whose StreamEnded and settlements (each as
// interrupted) follow, else the compaction's summary request, whose
// Summarized follows.
func (x *Drain) Interrupt() {
	if t := x.turn; t != nil {
		t.cancel()
		x.cancelTools()
		return
	}
	x.CancelCompaction()
}

// Stop is the drain's end: what it runs is cancelled (Interrupt), and no
// turn is in flight any more.
func (x *Drain) Stop() {
	x.Interrupt()
	x.turn = nil
	x.CancelCompaction()
}

// StartTool starts a call of the turn in flight that the journal recorded
// in the Location's tool registry (RunTool), under the turn's agent and
// rules: its permission asks are posted (Asker) and its one settlement
// goes to ReplyTo. trace is the call's trace context (RunTool).
func (x *Drain) StartTool(c messages.ToolCalled, trace map[string]string) {
	t := x.turn
	RunTool(x.System, x.Tools, &toolactors.ExecuteTool{
		SessionID:          x.Session,
		AssistantMessageID: t.started.AssistantMessageID,
		CallID:             c.CallID,
		Tool:               c.Tool,
		Input:              c.Input,
		Agent:              t.started.Agent,
		Dir:                x.Location,
		Rules:              t.rules,
		Asker:              Asker(x.Post, t.token, t.started.AssistantMessageID, c.CallID),
		ReplyTo:            x.ReplyTo,
	}, trace)
}

// cancelTools kills every running call of the session; each settles as
// interrupted.
func (x *Drain) cancelTools() {
	if x.Tools != nil {
		CancelTools(x.System, x.Tools, x.Session)
	}
}

// Question is the core's input for a question call of the turn in flight
// (session.QuestionTool: the session asks its client instead of running a
// tool), with a new request ID and whether the turn's rules let its agent
// ask.
func (x *Drain) Question(c messages.ToolCalled) session.QuestionAsked {
	return session.QuestionAsked{
		RequestID: messages.NewID("que"),
		Call:      c,
		Denied:    permission.Evaluate(x.turn.rules, session.QuestionTool, "*").Effect == permission.Deny,
	}
}
