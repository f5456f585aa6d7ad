package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func memSetup(t *testing.T, cfg Config) (*Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	cfg.Exporters = append(cfg.Exporters, mem)
	tel, err := Setup(ctxT(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	return tel, mem
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestInjectExtractCarriesTraceparent(t *testing.T) {
	clearOTELEnv(t)
	tel, _ := memSetup(t, Config{})
	ctx, span := tel.Tracer.StartInvokeAgent(context.Background(), Agent{SessionID: "s"})
	defer span.End()
	h := Inject(ctx)
	sc := span.SpanContext()
	want := fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID())
	if h[HeaderTraceparent] != want {
		t.Fatalf("traceparent = %q, want %q", h[HeaderTraceparent], want)
	}
	got := trace.SpanContextFromContext(Extract(context.Background(), h))
	if got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || !got.IsRemote() || !got.IsSampled() {
		t.Fatalf("extracted %+v, want remote copy of %+v", got, sc)
	}

	// Read-only headers (protoactor's MessageHeader) extract the same way.
	viaGetter := trace.SpanContextFromContext(ExtractHeaders(context.Background(), mapGetter(h)))
	if viaGetter.SpanID() != sc.SpanID() || viaGetter.TraceID() != sc.TraceID() {
		t.Fatalf("ExtractHeaders gave %+v", viaGetter)
	}
	if ExtractHeaders(context.Background(), nil) == nil {
		t.Fatal("nil getter")
	}

	// Headers with other entries keep them; stale trace context is replaced.
	other := map[string]string{"x-command-id": "c1", HeaderTraceparent: "00-stale", HeaderTracestate: "k=v"}
	InjectInto(ctx, other)
	if other["x-command-id"] != "c1" || other[HeaderTraceparent] != want {
		t.Fatalf("InjectInto gave %v", other)
	}
	if _, ok := other[HeaderTracestate]; ok {
		t.Fatalf("stale tracestate kept: %v", other)
	}
}

func TestInjectWithoutSpanAndExtractOfBadHeaders(t *testing.T) {
	if h := Inject(context.Background()); len(h) != 0 {
		t.Fatalf("no span: headers %v, want none", h)
	}
	base := context.WithValue(context.Background(), struct{}{}, 1)
	for _, h := range []map[string]string{nil, {}, {HeaderTraceparent: "garbage"},
		{HeaderTraceparent: "00-00000000000000000000000000000000-0000000000000000-01"}} {
		ctx := Extract(base, h)
		if trace.SpanContextFromContext(ctx).IsValid() {
			t.Fatalf("headers %v gave a valid span context", h)
		}
		if ctx.Value(struct{}{}) != 1 {
			t.Fatalf("headers %v lost the base context", h)
		}
	}
}

func TestSpanNamesAndAttributesFollowGenAIConventions(t *testing.T) {
	clearOTELEnv(t)
	tel, mem := memSetup(t, Config{})
	tr := tel.Tracer
	ctx, a := tr.StartInvokeAgent(context.Background(), Agent{SessionID: "ses_1", AgentName: "build", ProviderName: "anthropic", Model: "claude"})
	_, c := tr.StartChat(ctx, Chat{SessionID: "ses_1", ProviderName: "anthropic"}) // no model
	EndChat(c, ChatResult{FinishReasons: []string{"stop"}, ResponseModel: "claude-x"}, nil)
	_, x := tr.StartExecuteTool(ctx, Tool{SessionID: "ses_1", ToolName: "read", CallID: "call_9"})
	End(x, nil)
	EndInvokeAgent(a, Usage{InputTokens: 7, OutputTokens: 3}, context.Canceled)
	if err := tel.ForceFlush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	spans := mem.GetSpans().Snapshots()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	chat, tool, agent := byName["chat"], byName["execute_tool read"], byName["invoke_agent"]
	if chat == nil || tool == nil || agent == nil {
		t.Fatalf("span names %v", byName)
	}
	if v := attrs(chat)[KeyResponseModel].AsString(); v != "claude-x" {
		t.Errorf("response model %q", v)
	}
	if v := attrs(chat)[KeyUsageInputTokens]; v.AsInt64() != 0 || v.Type() != attribute.INT64 {
		t.Errorf("chat input tokens %v", v)
	}
	if _, ok := attrs(chat)[KeyRequestModel]; ok {
		t.Errorf("empty model recorded")
	}
	if v := attrs(tool)[KeyToolType].AsString(); v != "function" {
		t.Errorf("tool type %q", v)
	}
	if _, ok := attrs(tool)[KeyErrorType]; ok {
		t.Errorf("successful tool has error.type")
	}
	aa := attrs(agent)
	if aa[KeyErrorType].AsString() != "canceled" || aa[KeyUsageOutputTokens].AsInt64() != 3 || agent.Status().Description != "context canceled" {
		t.Errorf("agent attrs %v status %v", aa, agent.Status())
	}
	if len(agent.Events()) != 1 || agent.Events()[0].Name != "exception" {
		t.Errorf("agent events %v", agent.Events())
	}
}

type typedErr struct{}

func (typedErr) Error() string     { return "rate limited" }
func (typedErr) ErrorType() string { return "rate_limited" }

type plainErr struct{}

func (plainErr) Error() string { return "plain" }

func TestErrorTypeIsLowCardinality(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("turn 3: %w", typedErr{}), "rate_limited"},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), "timeout"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("wrap: %w", plainErr{}), "github.com/sessionrt/sessionrt/telemetry.plainErr"},
		{io.EOF, "*errors.errorString"},
	}
	for _, c := range cases {
		if got := ErrorType(c.err); got != c.want {
			t.Errorf("ErrorType(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestChildSpansInheritTheSession(t *testing.T) {
	clearOTELEnv(t)
	tel, mem := memSetup(t, Config{})
	ctx, a := tel.Tracer.StartInvokeAgent(context.Background(), Agent{SessionID: "ses_inh"})
	ctx2, lib := tel.TracerProvider.Tracer("lib").Start(ctx, "lib op")
	_, deeper := tel.TracerProvider.Tracer("lib").Start(ctx2, "deeper")
	deeper.End()
	lib.End()
	_, own := tel.Tracer.StartExecuteTool(ctx, Tool{SessionID: "ses_other", ToolName: "x"})
	own.End()
	a.End()
	// A span from a remote parent does not inherit (nothing to read) and a
	// root span has no session.
	_, remote := tel.TracerProvider.Tracer("lib").Start(Extract(context.Background(), Inject(ctx)), "remote child")
	remote.End()
	if err := tel.ForceFlush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"lib op": "ses_inh", "deeper": "ses_inh", "execute_tool x": "ses_other", "invoke_agent": "ses_inh", "remote child": ""}
	for _, s := range mem.GetSpans().Snapshots() {
		if got := attrs(s)[KeyConversationID].AsString(); got != want[s.Name()] {
			t.Errorf("%s: session %q, want %q", s.Name(), got, want[s.Name()])
		}
	}
}

func TestServiceNameDefaultsAndEnvironmentOverrides(t *testing.T) {
	clearOTELEnv(t)
	name := func(cfg Config) string {
		tel, mem := memSetup(t, cfg)
		_, s := tel.Tracer.StartChat(context.Background(), Chat{})
		s.End()
		tel.ForceFlush(ctxT(t))
		v, _ := mem.GetSpans()[0].Resource.Set().Value("service.name")
		return v.AsString()
	}
	if n := name(Config{}); n != "sessionrt" {
		t.Fatalf("default service.name %q", n)
	}
	if n := name(Config{ServiceName: "rt-test"}); n != "rt-test" {
		t.Fatalf("configured service.name %q", n)
	}
	t.Setenv("OTEL_SERVICE_NAME", "from-env")
	if n := name(Config{ServiceName: "rt-test"}); n != "from-env" {
		t.Fatalf("OTEL_SERVICE_NAME gave %q", n)
	}
}

func TestNilTracerRecordsNothing(t *testing.T) {
	var tr *Tracer
	ctx, s := tr.StartChat(context.Background(), Chat{Model: "m"})
	EndChat(s, ChatResult{}, errors.New("x"))
	if trace.SpanContextFromContext(ctx).IsValid() || s.IsRecording() {
		t.Fatal("nil tracer recorded a span")
	}
	if len(Inject(ctx)) != 0 {
		t.Fatal("nil tracer span injected a traceparent")
	}
	if NewTracer(nil).tracer() == nil {
		t.Fatal("NewTracer(nil) has no tracer")
	}
}

type mapGetter map[string]string

func (m mapGetter) Get(k string) string { return m[k] }
