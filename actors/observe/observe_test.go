package observe

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/telemetry"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

var model = messages.ModelRef{Provider: "scripted", ID: "test-model"}

// failure is the error a test Observer records failures with.
type failure struct{ code, msg string }

func (f *failure) Error() string { return f.msg }

// observed is an Observer on an in-memory span exporter and a fresh
// metrics registry.
type observed struct {
	*Observer
	spans *tracetest.InMemoryExporter
	reg   *metrics.Registry
}

func newObserved(t *testing.T) observed {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	reg := metrics.NewRegistry()
	rt, err := metrics.NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	o := &Observer{SessionID: "ses_1", Tracer: telemetry.NewTracer(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))), Metrics: rt,
		Fail: func(code, msg string) error { return &failure{code, msg} }}
	return observed{o, exp, reg}
}

// span is the one ended span named name.
func (o observed) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range o.spans.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d ended spans named %q, want 1 (%d ended)", len(found), name, len(o.spans.GetSpans()))
	}
	return found[0]
}

func (o observed) metrics(t *testing.T, want ...string) {
	t.Helper()
	var b strings.Builder
	if err := o.reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(b.String(), w) {
			t.Errorf("metrics lack %s:\n%s", w, b.String())
		}
	}
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// TestADrainIsOneTreeOfItsTurnsAndCalls: turns hang off the drain's span
// and calls off their turn's; a call's trace headers name its span; each
// ends as the core says (Settled, Ready.TurnEnd, the outcome), with the
// turns' usage summed on the drain, and is counted.
func TestADrainIsOneTreeOfItsTurnsAndCalls(t *testing.T) {
	o := newObserved(t)
	o.DrainStarted(context.Background(), "build", model)
	o.TurnStarted("msg_1", "build", model)
	headers := o.ToolStarted("call_1", "bash")
	o.ToolStarted("call_2", "nosuch")
	o.Settled([]session.Settled{{CallID: "call_1"}, {CallID: "call_2", Kind: "unknown_tool", Err: "no tool nosuch"}, {CallID: "que_call"}})
	o.Settled([]session.Settled{{CallID: "call_1"}}) // settled already: not counted again
	o.Ready(session.Ready{TurnEnd: &session.TurnEnd{AssistantMessageID: "msg_0", Model: model, Finish: "stop"}})
	if n := len(o.spans.GetSpans()); n != 2 {
		t.Fatalf("%d spans ended, want the two calls' (a Ready for another turn ends nothing)", n)
	}
	o.Ready(session.Ready{TurnEnd: &session.TurnEnd{AssistantMessageID: "msg_1", Model: model, Finish: "tool_calls",
		Usage: messages.Usage{InputTokens: 10, OutputTokens: 2}}})
	o.TurnStarted("msg_2", "build", model)
	o.Ready(session.Ready{TurnEnd: &session.TurnEnd{AssistantMessageID: "msg_2", Model: model, Finish: "stop",
		Usage: messages.Usage{InputTokens: 20, OutputTokens: 3}}})
	o.DrainEnded(session.Outcome{}, nil)

	root := o.span(t, "invoke_agent")
	tool := o.span(t, "execute_tool bash")
	failed := o.span(t, "execute_tool nosuch")
	var chats []tracetest.SpanStub
	for _, s := range o.spans.GetSpans() {
		if s.Name == "chat test-model" {
			chats = append(chats, s)
		}
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() || attr(s, "gen_ai.conversation.id") != "ses_1" {
			t.Errorf("span %s is not in the drain's trace of ses_1", s.Name)
		}
	}
	if len(chats) != 2 || chats[0].Parent.SpanID() != root.SpanContext.SpanID() || tool.Parent.SpanID() != chats[0].SpanContext.SpanID() {
		t.Fatalf("spans %d chats, tool parent %v: want two chats under the drain and the call under the first", len(chats), tool.Parent.SpanID())
	}
	if !strings.Contains(headers[telemetry.HeaderTraceparent], tool.SpanContext.SpanID().String()) {
		t.Errorf("call headers %v do not name its span %s", headers, tool.SpanContext.SpanID())
	}
	if tool.Status.Code == codes.Error || failed.Status.Code != codes.Error || attr(failed, "error.type") != "*observe.failure" {
		t.Errorf("call statuses %v and %v (%s), want the unknown tool's failed with Fail's error", tool.Status, failed.Status, attr(failed, "error.type"))
	}
	if attr(root, "gen_ai.usage.input_tokens") != "30" || attr(root, "gen_ai.usage.output_tokens") != "5" || root.Status.Code == codes.Error {
		t.Errorf("drain span usage %s/%s status %v, want 30/5, not failed", attr(root, "gen_ai.usage.input_tokens"), attr(root, "gen_ai.usage.output_tokens"), root.Status)
	}
	o.metrics(t,
		`sessionrt_drains_total{outcome="completed"} 1`,
		`sessionrt_turns_total{finish_reason="tool_calls",provider="scripted"} 1`,
		`sessionrt_turns_total{finish_reason="stop",provider="scripted"} 1`,
		`sessionrt_tool_calls_total{status="succeeded",tool="bash"} 1`,
		`sessionrt_tool_calls_total{status="unknown_tool",tool="nosuch"} 1`,
	)
}

// TestATurnFailsAsTheCoreOrTheDrainSays: a turn's chat span fails with
// the stream's own error when it met one, ErrNoFinish, ErrInterrupted,
// or Fail's error of the kind; one still in flight when the drain ends
// ends as the drain did, with what its stream said (the core's turn).
func TestATurnFailsAsTheCoreOrTheDrainSays(t *testing.T) {
	streamErr := &provider.Error{Kind: provider.KindInvalidRequest, Message: "bad request"}
	for _, tc := range []struct {
		name     string
		stream   error            // StreamEnded's
		end      *session.TurnEnd // the Ready's; nil: the drain ends with the turn in flight
		out      session.Outcome  // the drain's
		current  *session.Turn    // the core's turn at the drain's end
		chatErr  string           // the chat span's status
		chatType string           // its error.type
		usage    string           // its input tokens
		metrics  []string
	}{
		{name: "provider", stream: streamErr, end: &session.TurnEnd{AssistantMessageID: "msg_1", Model: model, Kind: session.Provider, Err: streamErr.Error()},
			out: session.Outcome{Kind: session.Provider, Err: streamErr.Error()}, chatErr: streamErr.Error(), chatType: "*provider.Error", usage: "0",
			metrics: []string{`sessionrt_turns_total{finish_reason="error",provider="scripted"} 1`, `sessionrt_drains_total{outcome="provider"} 1`}},
		{name: "no finish", end: &session.TurnEnd{AssistantMessageID: "msg_1", Model: model, Kind: session.Provider, Err: session.ErrNoFinish.Error()},
			out: session.Outcome{Kind: session.Provider, Err: session.ErrNoFinish.Error()}, chatErr: session.ErrNoFinish.Error(), chatType: "*provider.Error", usage: "0",
			metrics: []string{`sessionrt_drains_total{outcome="provider"} 1`}},
		{name: "overflow", end: &session.TurnEnd{AssistantMessageID: "msg_1", Model: model, Finish: "length", Kind: session.Overflow, Err: "too long"},
			out: session.Outcome{Kind: session.Overflow, Err: "too long"}, chatErr: "too long", chatType: "*observe.failure", usage: "0",
			metrics: []string{`sessionrt_turns_total{finish_reason="error",provider="scripted"} 1`, `sessionrt_drains_total{outcome="overflow"} 1`}},
		{name: "interrupted in flight", out: session.Outcome{Kind: session.Interrupted, Err: "interrupted"},
			current: &session.Turn{AssistantMessageID: "msg_1", Finish: "stop", Usage: messages.Usage{InputTokens: 7}},
			chatErr: "interrupted", chatType: "*errors.errorString", usage: "7",
			metrics: []string{`sessionrt_turns_total{finish_reason="error",provider="scripted"} 1`, `sessionrt_drains_total{outcome="interrupted"} 1`}},
		{name: "abandoned in flight", stream: streamErr, out: session.Outcome{Kind: session.Fenced, Err: "session actor stopping"},
			current: &session.Turn{AssistantMessageID: "msg_0", Usage: messages.Usage{InputTokens: 7}},
			chatErr: streamErr.Error(), chatType: "*provider.Error", usage: "0",
			metrics: []string{`sessionrt_drains_total{outcome="fenced"} 1`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newObserved(t)
			o.DrainStarted(context.Background(), "build", model)
			o.TurnStarted("msg_1", "build", model)
			o.StreamEnded(tc.stream)
			if tc.end != nil {
				o.Ready(session.Ready{TurnEnd: tc.end})
			}
			o.DrainEnded(tc.out, tc.current)
			if n := len(o.spans.GetSpans()); n != 2 {
				t.Fatalf("%d spans ended, want the chat and the drain", n)
			}
			chat, drain := o.span(t, "chat test-model"), o.span(t, "invoke_agent")
			if chat.Status.Code != codes.Error || chat.Status.Description != tc.chatErr || attr(chat, "error.type") != tc.chatType {
				t.Errorf("chat span %v %q (%s), want %q (%s)", chat.Status.Code, chat.Status.Description, attr(chat, "error.type"), tc.chatErr, tc.chatType)
			}
			if attr(chat, "gen_ai.usage.input_tokens") != tc.usage || attr(drain, "gen_ai.usage.input_tokens") != tc.usage {
				t.Errorf("usage chat %s drain %s, want %s", attr(chat, "gen_ai.usage.input_tokens"), attr(drain, "gen_ai.usage.input_tokens"), tc.usage)
			}
			if drain.Status.Code != codes.Error || drain.Status.Description != tc.out.Err || attr(drain, "error.type") != "*observe.failure" {
				t.Errorf("drain span %v %q (%s), want %q", drain.Status.Code, drain.Status.Description, attr(drain, "error.type"), tc.out.Err)
			}
			o.metrics(t, tc.metrics...)
		})
	}
}

// TestTheZeroObserverRecordsNothingAndWorks: without a tracer, metrics or
// Fail, every call is safe; calls without a drain or turn are ignored.
func TestTheZeroObserverRecordsNothingAndWorks(t *testing.T) {
	var o Observer
	o.TurnStarted("msg_0", "build", model) // no drain: ignored
	if h := o.ToolStarted("call_0", "bash"); len(h) != 0 {
		t.Fatalf("headers %v for a call without a turn", h)
	}
	o.DrainEnded(session.Outcome{}, nil) // no drain: nothing to end
	o.DrainStarted(context.Background(), "build", model)
	o.TurnStarted("msg_1", "build", model)
	o.StreamEnded(errors.New("boom"))
	o.ToolStarted("call_1", "bash")
	o.Settled([]session.Settled{{CallID: "call_1", Kind: "failed", Err: "x"}})
	o.DrainEnded(session.Outcome{Kind: session.Provider, Err: "boom"}, nil)
	if o.drain != nil {
		t.Fatal("the drain is still held after its end")
	}
}

// TestBoundariesThatObserveAreLogged: the first observation, and one
// that makes prompts model-visible, are logged with the drain's token;
// other boundaries, and an Observer without a logger, log nothing.
func TestBoundariesThatObserveAreLogged(t *testing.T) {
	var log bytes.Buffer
	o := &Observer{SessionID: "ses_1", Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	o.Boundary(7, true, nil)
	o.Boundary(7, false, []messages.Event{messages.ContextUpdated{}})
	o.Boundary(7, false, nil)
	o.Boundary(7, false, []messages.Event{messages.ContextUpdated{}, messages.PromptPromoted{MessageIDs: []string{"msg_1", "msg_2"}}})
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	want := []string{`level=DEBUG msg=boundary session=ses_1 token=7 observe=init`, `level=DEBUG msg=boundary session=ses_1 token=7 promote="[msg_1 msg_2]"`}
	if len(lines) != len(want) || !strings.HasSuffix(lines[0], want[0]) || !strings.HasSuffix(lines[1], want[1]) {
		t.Fatalf("logged %q, want %q", lines, want)
	}
	(&Observer{}).Boundary(7, true, nil)
}

// TestTitleAnswersAreCountedByResult: failed, titled (the session was
// untitled), or kept (a client named it first), each logged with the
// model asked (a failure as a warning); an Observer without metrics or a
// logger counts and logs nothing and still works.
func TestTitleAnswersAreCountedByResult(t *testing.T) {
	o := newObserved(t)
	var log bytes.Buffer
	o.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Titled(model, time.Second, errors.New("provider down"), true)
	o.Titled(model, time.Second, nil, true)
	o.Titled(model, time.Second, nil, true)
	o.Titled(model, 2*time.Second, nil, false)
	o.metrics(t, `sessionrt_session_titles_total{result="failed"} 1`, `sessionrt_session_titles_total{result="titled"} 2`, `sessionrt_session_titles_total{result="kept"} 1`)
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	want := []string{
		`level=WARN msg="session title request failed; the session keeps its default title" session=ses_1 model=scripted/test-model err="provider down"`,
		`level=DEBUG msg="session titled" session=ses_1 model=scripted/test-model took=1s`,
		`level=DEBUG msg="session titled" session=ses_1 model=scripted/test-model took=1s`,
		`level=DEBUG msg="session titled" session=ses_1 model=scripted/test-model took=2s`,
	}
	if len(lines) != len(want) {
		t.Fatalf("logged %q, want %q", lines, want)
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Fatalf("line %d %q, want it to end with %q", i, lines[i], w)
		}
	}
	(&Observer{}).Titled(model, 0, nil, true)
}
