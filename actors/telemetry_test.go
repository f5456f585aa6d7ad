package actors

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/telemetry"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

func TestDrainTurnsAndToolsAreTracedAsOneTree(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			return bashEcho("hi"), nil
		}
		return scripted.Turn{Text: "done"}, nil
	}, func(c *Config) { c.Tracer = telemetry.NewTracer(tp) })
	id := h.create("")
	h.ask(id, "go")
	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	chats := 0
	for _, s := range spans {
		byName[s.Name] = s
		if s.Name == "chat test-model" {
			chats++
		}
	}
	root, ok := byName["invoke_agent"]
	if !ok || chats != 2 {
		t.Fatalf("spans %v: want one invoke_agent and two chat spans", names(spans))
	}
	tool, ok := byName["execute_tool bash"]
	if !ok {
		t.Fatalf("no execute_tool span in %v", names(spans))
	}
	for _, s := range spans {
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Fatalf("span %s is in another trace", s.Name)
		}
		found := false
		for _, kv := range s.Attributes {
			found = found || (string(kv.Key) == "gen_ai.conversation.id" && kv.Value.AsString() == id)
		}
		if !found {
			t.Fatalf("span %s lacks gen_ai.conversation.id=%s", s.Name, id)
		}
	}
	if tool.Parent.SpanID() == root.SpanContext.SpanID() {
		t.Fatal("execute_tool hangs off the drain, want it under its chat turn")
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func TestRuntimeMetricsCountDrainsTurnsAndTools(t *testing.T) {
	reg := metrics.NewRegistry()
	rt, err := metrics.NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			return bashEcho("hi"), nil
		}
		return scripted.Turn{Text: "done"}, nil
	}, func(c *Config) { c.Metrics = rt })
	id := h.create("")
	h.ask(id, "go")
	var b strings.Builder
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		`sessionrt_drains_total{outcome="completed"} 1`,
		`sessionrt_turns_total{finish_reason="tool_calls",provider="scripted"} 1`,
		`sessionrt_turns_total{finish_reason="stop",provider="scripted"} 1`,
		`sessionrt_tool_calls_total{status="succeeded",tool="bash"} 1`,
		`sessionrt_sessions_active 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s:\n%s", want, text)
		}
	}
}
