// Package observe holds a Session's drain telemetry: the drain's
// invoke_agent span, each provider turn's chat span, each tool call's
// execute_tool span, and the runtime counters that go with them
// (sessionrt_drains_total, sessionrt_turns_total,
// sessionrt_tool_calls_total and the call durations).
//
// An Observer owns that state and is fed what the actor knows, in the
// actor's order: a drain started (DrainStarted) and ended (DrainEnded), a
// turn's stream started (TurnStarted) and ended with an error
// (StreamEnded), a call started (ToolStarted), and the core's Ready:
// the calls it settled (Settled, whether or not its Append was taken: the
// execution happened) and, once its Append is durable, the turn it ended
// (Ready). What ended and how is the core's (session.Ready.TurnEnd,
// Ready.Settled, the drain's session.Outcome); the Observer only records
// it. DrainEnded closes whatever is still open as the drain ended. It
// also counts and logs the session's title requests' answers (Titled),
// which no drain waits for.
//
// It does no I/O beyond the tracer, the metrics and the logger it is
// given, and is used from the actor's goroutine only.
package observe

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/telemetry"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// Observer records one session's drains. Its zero value records nothing
// but still works; set the exported fields before the first drain.
type Observer struct {
	SessionID string
	Tracer    *telemetry.Tracer // nil: no spans
	Metrics   *metrics.Runtime  // nil: no counters
	Log       *slog.Logger      // nil: no log lines
	// Fail is the error a failure of kind code with message msg is
	// recorded with (a span's status and error.type); nil: errors.New(msg).
	Fail func(code, msg string) error

	drain *drainSpan // the drain in progress, nil: none
}

// ErrInterrupted is how an interrupted turn's chat span fails.
var ErrInterrupted = errors.New("interrupted")

type drainSpan struct {
	ctx   context.Context // carries the invoke_agent span
	span  trace.Span
	usage telemetry.Usage
	turn  *turnSpan // the turn in flight, nil: none
}

type turnSpan struct {
	assistantID string
	agent       string
	model       messages.ModelRef
	err         error           // the stream's, as its provider gave it
	ctx         context.Context // carries the chat span
	span        trace.Span
	calls       map[string]*callSpan // the calls it started, by call ID
}

type callSpan struct {
	tool    string
	span    trace.Span
	started time.Time
}

// DrainStarted starts a drain's invoke_agent span under ctx (which may
// carry the trace of the prompt that started it), for the session's agent
// and model.
func (o *Observer) DrainStarted(ctx context.Context, agent string, model messages.ModelRef) {
	d := &drainSpan{}
	d.ctx, d.span = o.Tracer.StartInvokeAgent(ctx, telemetry.Agent{
		SessionID: o.SessionID, AgentName: agent, ProviderName: model.Provider, Model: model.ID})
	o.drain = d
}

// TurnStarted starts the chat span of the turn whose request is being
// sent (its TurnStarted is durable), under the drain's span.
func (o *Observer) TurnStarted(assistantID, agent string, model messages.ModelRef) {
	d := o.drain
	if d == nil {
		return
	}
	t := &turnSpan{assistantID: assistantID, agent: agent, model: model, calls: map[string]*callSpan{}}
	t.ctx, t.span = o.Tracer.StartChat(d.ctx, telemetry.Chat{
		SessionID: o.SessionID, AgentName: agent, ProviderName: model.Provider, Model: model.ID})
	d.turn = t
}

// StreamEnded records the error the turn's stream met, as its provider
// gave it: the chat span fails with it (keeping its type) if the turn
// fails.
func (o *Observer) StreamEnded(err error) {
	if t := o.turn(); t != nil && err != nil {
		t.err = err
	}
}

// ToolStarted starts the execute_tool span of a call the turn in flight
// runs, under its chat span, and returns the call's trace context as
// message headers (telemetry.Inject) for the tool actor to join.
func (o *Observer) ToolStarted(callID, tool string) map[string]string {
	t := o.turn()
	if t == nil {
		return telemetry.Inject(context.Background())
	}
	ctx, span := o.Tracer.StartExecuteTool(t.ctx, telemetry.Tool{SessionID: o.SessionID, AgentName: t.agent, ToolName: tool, CallID: callID})
	t.calls[callID] = &callSpan{tool: tool, span: span, started: time.Now()}
	return telemetry.Inject(ctx)
}

// Settled ends the execute_tool span of every call of the turn in flight
// a Ready settled and counts it (sessionrt_tool_calls_total and its
// duration), as its runner said it ended. They record the execution,
// which happened whether or not the journal takes the settlement, so they
// are fed before the append's outcome. A call that was not started here
// (a question, settled by the core) has neither.
func (o *Observer) Settled(settled []session.Settled) {
	t := o.turn()
	if t == nil {
		return
	}
	for _, s := range settled {
		c, ok := t.calls[s.CallID]
		if !ok {
			continue
		}
		delete(t.calls, s.CallID)
		status := "succeeded"
		var err error
		if s.Kind != "" {
			status, err = s.Kind, o.fail(s.Kind, s.Err)
		}
		if m := o.Metrics; m != nil {
			m.ToolCallFinished(c.tool, status)
			m.ToolCallTook(trace.ContextWithSpan(context.Background(), c.span), c.tool, status, time.Since(c.started))
		}
		telemetry.End(c.span, err)
	}
}

// Ready records what a Ready whose Append is durable ended: the turn in
// flight, as the core says it ended (Ready.TurnEnd).
func (o *Observer) Ready(rd session.Ready) {
	t, te := o.turn(), rd.TurnEnd
	if t == nil || te == nil || t.assistantID != te.AssistantMessageID {
		return
	}
	var err error
	if te.Kind != session.Completed {
		err = o.chatErr(t, te.Kind, te.Err)
	}
	o.endChat(*te, err)
}

// Boundary logs a boundary of the drain whose token is token that
// observes the context: the first, which initializes the epoch (init), or
// one whose carried events end with a promotion (what it makes
// model-visible).
func (o *Observer) Boundary(token uint64, init bool, carry []messages.Event) {
	switch n := len(carry); {
	case o.Log == nil:
	case init:
		o.Log.Debug("boundary", "session", o.SessionID, "token", token, "observe", "init")
	case n > 0:
		if p, ok := carry[n-1].(messages.PromptPromoted); ok {
			o.Log.Debug("boundary", "session", o.SessionID, "token", token, "promote", p.MessageIDs)
		}
	}
}

// Titled counts a title request's answer (sessionrt_session_titles_total):
// failed (err), else titled when the session was untitled as it came (the
// title is written now, or with the drain's next append), else kept (a
// client named it first). A drain's or not, the session's. It logs the
// answer of the model asked, which took took: a failure is a warning (the
// session keeps its default title, and its drain never knew).
func (o *Observer) Titled(model messages.ModelRef, took time.Duration, err error, untitled bool) {
	m := o.Metrics
	switch {
	case m == nil:
	case err != nil:
		m.SessionTitled("failed")
	case untitled:
		m.SessionTitled("titled")
	default:
		m.SessionTitled("kept")
	}
	if o.Log == nil {
		return
	}
	name := model.Provider + "/" + model.ID
	if err != nil {
		o.Log.Warn("session title request failed; the session keeps its default title", "session", o.SessionID, "model", name, "err", err)
		return
	}
	o.Log.Debug("session titled", "session", o.SessionID, "model", name, "took", took)
}

// DrainEnded closes the drain's telemetry as it ended (out), whether its
// end was written or abandoned: the chat span of a turn still in flight
// ends as the drain did, with what its stream said (current: the core's
// turn, nil when none), then the drain's span with its turns' usage, and
// the drain is counted.
func (o *Observer) DrainEnded(out session.Outcome, current *session.Turn) {
	d := o.drain
	if d == nil {
		return
	}
	if t := d.turn; t != nil {
		te := session.TurnEnd{Model: t.model}
		if current != nil && current.AssistantMessageID == t.assistantID {
			te.Finish, te.Usage = current.Finish, current.Usage
		}
		o.endChat(te, o.chatErr(t, out.Kind, out.Err))
	}
	o.drain = nil
	if m := o.Metrics; m != nil {
		kind := "completed"
		if out.Kind != session.Completed {
			kind = string(out.Kind)
		}
		m.DrainFinished(kind)
	}
	var err error
	if out.Err != "" {
		err = o.fail(string(out.Kind), out.Err)
	}
	telemetry.EndInvokeAgent(d.span, d.usage, err)
}

// endChat ends the turn in flight's chat span with its finish reason and
// usage (err: it failed), counts it, and adds its usage to the drain's.
func (o *Observer) endChat(te session.TurnEnd, err error) {
	d := o.drain
	t := d.turn
	d.turn = nil
	if m := o.Metrics; m != nil {
		reason := te.Finish
		if err != nil {
			reason = "error"
		}
		m.TurnFinished(te.Model.Provider, reason)
	}
	var reasons []string
	if te.Finish != "" {
		reasons = []string{te.Finish}
	}
	u := telemetry.Usage{InputTokens: te.Usage.InputTokens, OutputTokens: te.Usage.OutputTokens}
	telemetry.EndChat(t.span, telemetry.ChatResult{Usage: u, FinishReasons: reasons}, err)
	d.usage.InputTokens += u.InputTokens
	d.usage.OutputTokens += u.OutputTokens
}

// chatErr is how turn t failed (kind, why), for its chat span: the
// provider's own error when the stream met one, with its type.
func (o *Observer) chatErr(t *turnSpan, kind session.OutcomeKind, why string) error {
	switch {
	case kind == session.Interrupted:
		return ErrInterrupted
	case t.err != nil:
		return t.err
	case why == session.ErrNoFinish.Error():
		return session.ErrNoFinish
	}
	return o.fail(string(kind), why)
}

func (o *Observer) turn() *turnSpan {
	if o.drain == nil {
		return nil
	}
	return o.drain.turn
}

func (o *Observer) fail(code, msg string) error {
	if o.Fail == nil {
		return errors.New(msg)
	}
	return o.Fail(code, msg)
}
