package actors

import (
	"context"
	"errors"
	"time"

	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// A drain's telemetry (its invoke_agent span, each turn's chat span,
// sessionrt_turns_total and sessionrt_drains_total) follows what the core
// decided, from two places only: observeReady is handed every Ready once its
// Append is durable and ends the turn it reports (Ready.TurnEnd);
// observeEnd is handed every end of a drain, the written ones (its Ready's
// Outcome) and the abandoned ones that write nothing (fenced, a failed
// journal, the actor stopping), and closes whatever is still open. A
// tool's execute_tool span and counters end with the Ready that settles
// it (observeTools). The spans start where their contexts are needed
// (startDrain, stream, executeTool).

var errInterrupted = errors.New("interrupted")

// observeReady records what a Ready whose Append is durable ended: the turn in
// flight, as the core says it ended.
func (a *sessionActor) observeReady(rd session.Ready) {
	d, te := a.drain, rd.TurnEnd
	if d == nil || te == nil || d.turn == nil || d.turn.assistantID != te.AssistantMessageID {
		return
	}
	t := d.turn
	d.turn = nil
	var err error
	if te.Kind != session.Completed {
		err = chatErr(t, te.Kind, te.Err)
	}
	a.endChat(d, t, *te, err)
}

// chatErr is how turn t failed (kind, why), for its chat span: the
// provider's own error when the stream met one, with its type.
func chatErr(t *turn, kind session.OutcomeKind, why string) error {
	switch {
	case kind == session.Interrupted:
		return errInterrupted
	case t.err != nil:
		return t.err
	case why == session.ErrNoFinish.Error():
		return session.ErrNoFinish
	}
	return &CommandError{Code: string(kind), Msg: why}
}

// observeEnd closes drain d's telemetry as it ended (out): the chat span
// of a turn still in flight (abandoned, or its end never written) ends as
// the drain did, then the drain's span, with its turns' usage.
func (a *sessionActor) observeEnd(d *drain, inFlight *turn, out *Outcome) {
	if t := inFlight; t != nil {
		te := session.TurnEnd{Model: t.model}
		if ct := d.Drain.Turn; ct != nil && ct.AssistantMessageID == t.assistantID {
			te.Finish, te.Usage = ct.Finish, ct.Usage
		}
		a.endChat(d, t, te, chatErr(t, out.Kind, out.Err))
	}
	if m := a.rt.cfg.Metrics; m != nil {
		kind := "completed"
		if out.Kind != session.Completed {
			kind = string(out.Kind)
		}
		m.DrainFinished(kind)
	}
	if d.span == nil {
		return
	}
	var err error
	if out.Err != "" {
		err = &CommandError{Code: string(out.Kind), Msg: out.Err}
	}
	telemetry.EndInvokeAgent(d.span, d.usage, err)
	d.span = nil
}

// endChat ends turn t's chat span with its finish reason and usage (err:
// it failed), counts it, and adds its usage to the drain's.
func (a *sessionActor) endChat(d *drain, t *turn, te session.TurnEnd, err error) {
	if m := a.rt.cfg.Metrics; m != nil {
		reason := te.Finish
		if err != nil {
			reason = "error"
		}
		m.TurnFinished(te.Model.Provider, reason)
	}
	if t.span == nil {
		return
	}
	var reasons []string
	if te.Finish != "" {
		reasons = []string{te.Finish}
	}
	u := telemetry.Usage{InputTokens: te.Usage.InputTokens, OutputTokens: te.Usage.OutputTokens}
	telemetry.EndChat(t.span, telemetry.ChatResult{Usage: u, FinishReasons: reasons}, err)
	d.usage.InputTokens += u.InputTokens
	d.usage.OutputTokens += u.OutputTokens
	t.span = nil
}

// observeTools ends the execute_tool span of every call Ready rd settled
// and counts it (sessionrt_tool_calls_total and its duration), as its
// runner said it ended. They record the execution, which happened whether
// or not the journal takes the settlement, so they are observed before
// the append's outcome. A call this shell never executed (a question,
// settled by the core) has neither.
func (a *sessionActor) observeTools(d *drain, rd session.Ready) {
	if d == nil || d.turn == nil {
		return
	}
	for _, s := range rd.Settled {
		c, ok := d.turn.calls[s.CallID]
		if !ok || c.started.IsZero() {
			continue
		}
		status := "succeeded"
		var err error
		if s.Kind != "" {
			status, err = s.Kind, &CommandError{Code: s.Kind, Msg: s.Err}
		}
		if mt := a.rt.cfg.Metrics; mt != nil {
			mt.ToolCallFinished(c.tool, status)
			mt.ToolCallTook(trace.ContextWithSpan(context.Background(), c.span), c.tool, status, time.Since(c.started))
		}
		if c.span != nil {
			telemetry.End(c.span, err)
			c.span = nil
		}
	}
}
