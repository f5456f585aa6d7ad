package actors

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
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

// TestSpansAndCountersCloseWhateverEndsTheDrain: a turn's chat span and
// the drain's invoke_agent span end, and are counted, however the turn and
// the drain end: a malformed stream, the provider's error (the span keeps
// its type), an interrupt, and a drain abandoned without writing (the
// actor stopping mid-stream).
func TestSpansAndCountersCloseWhateverEndsTheDrain(t *testing.T) {
	for _, tc := range []struct {
		name       string
		turn       scripted.Turn
		end        func(h *harness, id string)
		chatErr    string // the chat span's status description
		chatType   string // its error.type ("": not checked)
		drainErr   string
		turnReason string
		outcome    string
	}{
		{name: "malformed", turn: scripted.Turn{Parts: []scripted.Part{{Kind: "text", Text: "partial"}}},
			chatErr: "malformed: stream ended without a finish reason", chatType: "*provider.Error", drainErr: "malformed: stream ended without a finish reason", turnReason: "error", outcome: "provider"},
		{name: "provider error", turn: scripted.Turn{Error: &scripted.ErrorSpec{Kind: "invalid_request", Message: "bad request"}},
			chatErr: "scripted: invalid_request: bad request", chatType: "*provider.Error", drainErr: "scripted: invalid_request: bad request", turnReason: "error", outcome: "provider"},
		{name: "interrupted", turn: scripted.Turn{Text: "partial", Hang: true},
			end: func(h *harness, id string) {
				if err := h.sessions.Interrupt(h.ctx(), id); err != nil {
					h.t.Fatal(err)
				}
			},
			chatErr: "interrupted", drainErr: "interrupted", turnReason: "error", outcome: "interrupted"},
		{name: "abandoned", turn: scripted.Turn{Text: "partial", Hang: true},
			end:     func(h *harness, id string) { h.stop() },
			chatErr: "session actor stopping", drainErr: "session actor stopping", turnReason: "error", outcome: "fenced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			reg := metrics.NewRegistry()
			rt, err := metrics.NewRuntime(reg)
			if err != nil {
				t.Fatal(err)
			}
			started := make(chan struct{}, 1)
			h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
				started <- struct{}{}
				return tc.turn, nil
			}, func(c *Config) { c.Tracer, c.Metrics = telemetry.NewTracer(tp), rt })
			id := h.create("")
			h.prompt(id, "", "go", "", true)
			<-started
			if tc.end != nil {
				tc.end(h, id)
			} else {
				h.waitIdle(id)
			}
			byName := map[string]tracetest.SpanStub{}
			for _, s := range exp.GetSpans() {
				byName[s.Name] = s
			}
			chat, okChat := byName["chat test-model"]
			drain, okDrain := byName["invoke_agent"]
			if !okChat || !okDrain || len(exp.GetSpans()) != 2 {
				t.Fatalf("ended spans %v: want the chat and the invoke_agent span", names(exp.GetSpans()))
			}
			if chat.Status.Code != codes.Error || chat.Status.Description != tc.chatErr {
				t.Errorf("chat span status %v %q, want error %q", chat.Status.Code, chat.Status.Description, tc.chatErr)
			}
			if tc.chatType != "" && attr(chat, "error.type") != tc.chatType {
				t.Errorf("chat span error.type %q, want %q", attr(chat, "error.type"), tc.chatType)
			}
			if drain.Status.Code != codes.Error || drain.Status.Description != tc.drainErr {
				t.Errorf("invoke_agent span status %v %q, want error %q", drain.Status.Code, drain.Status.Description, tc.drainErr)
			}
			var b strings.Builder
			if err := reg.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				`sessionrt_turns_total{finish_reason="` + tc.turnReason + `",provider="scripted"} 1`,
				`sessionrt_drains_total{outcome="` + tc.outcome + `"} 1`,
			} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("metrics lack %s:\n%s", want, b.String())
				}
			}
		})
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

// TestFailedToolCallIsTracedAndCountedWithItsKind: a call that fails
// (an unknown tool) ends its execute_tool span with an error and is
// counted under its failure kind, whoever ends it (observe.Observer's
// Settled, from the core's Ready.Settled).
func TestFailedToolCallIsTracedAndCountedWithItsKind(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reg := metrics.NewRegistry()
	rt, err := metrics.NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "nosuch", Args: []byte(`{}`)}}}, nil
		}
		return scripted.Turn{Text: "done"}, nil
	}, func(c *Config) { c.Tracer, c.Metrics = telemetry.NewTracer(tp), rt })
	id := h.create("")
	h.ask(id, "go")
	var tool *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool nosuch" {
			tool = &s
		}
	}
	if tool == nil {
		t.Fatalf("no execute_tool span in %v", names(exp.GetSpans()))
	}
	if tool.Status.Code != codes.Error || !tool.EndTime.After(tool.StartTime) {
		t.Errorf("execute_tool span status %v %q, ended %v: want an ended error span", tool.Status.Code, tool.Status.Description, tool.EndTime)
	}
	var b strings.Builder
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := `sessionrt_tool_calls_total{status="unknown_tool",tool="nosuch"} 1`; !strings.Contains(b.String(), want) {
		t.Errorf("metrics lack %s:\n%s", want, b.String())
	}
}
