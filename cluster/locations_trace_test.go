package cluster

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/telemetry"
	"github.com/sessionrt/sessionrt/toolactors"
)

// fakeRegistry settles every call at once with the output "ran".
type fakeRegistry struct{}

func (fakeRegistry) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*toolactors.ExecuteTool); ok {
		ctx.Send(m.ReplyTo, &toolactors.ToolSettled{SessionID: m.SessionID, AssistantMessageID: m.AssistantMessageID,
			CallID: m.CallID, Tool: m.Tool, Output: &toolactors.ToolOutput{Text: "ran"}})
	}
}

// TestLocationGrainRunsTheCallInItsRegistryAndItsSpanJoinsTheCallersTrace
// drives a Location grain directly (no cluster): a RemoteExecuteTool with
// the drain's trace context in its headers runs in the member's tool
// registry, the settlement goes back to the sender, and the grain's span
// is a child of the sender's span (one trace across members).
func TestLocationGrainRunsTheCallInItsRegistryAndItsSpanJoinsTheCallersTrace(t *testing.T) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	locs, err := supervisor.New(system, supervisor.Config{Children: []supervisor.ChildSpec{{
		Name: actors.ToolRegistryName,
		Props: func(string) *actor.Props {
			return actor.PropsFromProducer(func() actor.Actor { return fakeRegistry{} })
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer locs.Stop()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	kind, err := LocationKind(LocationConfig{Member: "m1", Locations: locs, Tracer: tp})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	grain := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return kind.Produce(dir) }))

	parentCtx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool bash")
	env := &actor.MessageEnvelope{Message: &RemoteExecuteTool{SessionID: "ses_1", AssistantMessageID: "msg_a", CallID: "call_1", Tool: "bash", Dir: dir}}
	for k, v := range telemetry.Inject(parentCtx) {
		env.SetHeader(k, v)
	}
	// As the proxy sends it: an envelope with headers and the sender (a
	// RequestFuture would wrap the envelope in another).
	f := actor.NewFuture(system, time.Minute) // a backstop
	env.Sender = f.PID()
	system.Root.Send(grain, env)
	res, err := f.Result()
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	settled, ok := res.(*toolactors.ToolSettled)
	if !ok || settled.CallID != "call_1" || settled.Output == nil || settled.Output.Text != "ran" {
		t.Fatalf("settlement %#v: want call_1 with the registry's output", res)
	}
	var run sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "location.run bash" {
			run = s
		}
	}
	if run == nil {
		t.Fatalf("no location.run span among %d ended spans", len(rec.Ended()))
	}
	if run.SpanContext().TraceID() != parent.SpanContext().TraceID() || run.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("location.run is in trace %s under %s: want trace %s under %s", run.SpanContext().TraceID(), run.Parent().SpanID(),
			parent.SpanContext().TraceID(), parent.SpanContext().SpanID())
	}
}
