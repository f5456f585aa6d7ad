package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/telemetry"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
	"github.com/sessionrt/sessionrt/telemetry/spanstore"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

type backend struct {
	name string
	open func(b *testing.B) *sql.DB
}

func backends() []backend {
	return append([]backend{{"mariadb", func(b *testing.B) *sql.DB { return testdb.MariaDB(b).DB }}}, extraBackends...)
}

// spans makes n finished spans of one session shaped like a drain's.
func spans(session string, n int, base time.Time) []sdktrace.ReadOnlySpan {
	tid := trace.TraceID{1}
	stubs := make(tracetest.SpanStubs, n)
	for i := range stubs {
		sid := trace.SpanID{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), 1}
		stubs[i] = tracetest.SpanStub{
			Name:        "chat gpt-4o",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}),
			Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9}}),
			StartTime:   base.Add(time.Duration(i) * time.Microsecond),
			EndTime:     base.Add(time.Duration(i)*time.Microsecond + time.Millisecond),
			Attributes: []attribute.KeyValue{
				attribute.String("gen_ai.conversation.id", session), attribute.String("gen_ai.operation.name", "chat"),
				attribute.String("gen_ai.provider.name", "openai"), attribute.String("gen_ai.request.model", "gpt-4o"),
				attribute.Int64("gen_ai.usage.input_tokens", 1200), attribute.Int64("gen_ai.usage.output_tokens", 300),
				attribute.StringSlice("gen_ai.response.finish_reasons", []string{"tool_calls"}),
			},
		}
	}
	return stubs.Snapshots()
}

// BenchmarkStoreExport writes batches of 200 spans (one BatchSpanProcessor
// export) and reports spans per second.
func BenchmarkStoreExport(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			s, err := spanstore.Open(context.Background(), spanstore.Config{DB: be.open(b), PruneInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const batch = 200
			base := time.Now()
			// Build the spans outside the timed loop: the figure is the store's.
			batches := make([][]sdktrace.ReadOnlySpan, b.N)
			for i := range batches {
				batches[i] = spans(fmt.Sprint("ses_", i), batch, base)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.ExportSpans(context.Background(), batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}

// BenchmarkStoreTrace reads one session's 100 spans out of 10,000 stored.
func BenchmarkStoreTrace(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			s, err := spanstore.Open(context.Background(), spanstore.Config{DB: be.open(b), PruneInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			base := time.Now()
			for i := range 100 {
				if err := s.ExportSpans(context.Background(), spans(fmt.Sprint("ses_", i), 100, base)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				got, err := s.Trace(context.Background(), fmt.Sprint("ses_", i%100))
				if err != nil || len(got) != 100 {
					b.Fatalf("%d spans, %v", len(got), err)
				}
			}
		})
	}
}

// BenchmarkPruneCount prunes a 12,000-span table to 10,000.
func BenchmarkPruneCount(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			db := be.open(b)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s, err := spanstore.Open(context.Background(), spanstore.Config{DB: db, Table: fmt.Sprint("p", i), MaxSpans: 10000, MaxAge: -1, PruneInterval: -1})
				if err != nil {
					b.Fatal(err)
				}
				base := time.Now()
				for j := range 60 {
					if err := s.ExportSpans(context.Background(), spans(fmt.Sprint("ses_", j), 200, base.Add(time.Duration(j)*time.Second))); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				n, err := s.Prune(context.Background())
				if err != nil || n != 2000 {
					b.Fatalf("pruned %d, %v", n, err)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkDrainSpans is the tracing cost of one turn: a chat span and a tool
// span under an invoke_agent span, with the trace context carried across a
// message hop, behind a BatchSpanProcessor into a discarding exporter.
func BenchmarkDrainSpans(b *testing.B) {
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Exporters: []sdktrace.SpanExporter{discard{}}, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	tr := tel.Tracer
	ctx, agent := tr.StartInvokeAgent(context.Background(), telemetry.Agent{SessionID: "ses_b", AgentName: "build", ProviderName: "openai", Model: "gpt-4o"})
	defer agent.End()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, chat := tr.StartChat(ctx, telemetry.Chat{SessionID: "ses_b", ProviderName: "openai", Model: "gpt-4o"})
		telemetry.EndChat(chat, telemetry.ChatResult{Usage: telemetry.Usage{InputTokens: 10, OutputTokens: 5}, FinishReasons: []string{"tool_calls"}}, nil)
		rctx := telemetry.Extract(context.Background(), telemetry.Inject(ctx))
		_, tool := tr.StartExecuteTool(rctx, telemetry.Tool{SessionID: "ses_b", ToolName: "bash", CallID: "call_1"})
		telemetry.End(tool, nil)
	}
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

func BenchmarkInjectExtract(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("b").Start(context.Background(), "x")
	defer span.End()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		telemetry.Extract(context.Background(), telemetry.Inject(ctx))
	}
}

func BenchmarkMetrics(b *testing.B) {
	reg := metrics.NewRegistry()
	rt, err := metrics.NewRuntime(reg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("counter-inc-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rt.SessionsActive.Inc()
			}
		})
	})
	b.Run("labelled-counter", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			rt.ToolCallFinished("bash", "completed")
		}
	})
	b.Run("histogram-observe-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rt.JournalAppended(230 * time.Microsecond)
			}
		})
	})
	for _, tool := range []string{"bash", "read", "write", "edit", "grep", "glob"} {
		for _, st := range []string{"completed", "error"} {
			rt.ToolCallFinished(tool, st)
			rt.ContextObserved(tool, time.Millisecond)
		}
	}
	b.Run("write-text", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := reg.WriteText(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRenderTree(b *testing.B) {
	base := time.Now()
	var in []spanstore.Span
	in = append(in, spanstore.Span{TraceID: "t", SpanID: "root", Name: "invoke_agent", Start: base, End: base.Add(time.Second)})
	for i := range 100 {
		in = append(in, spanstore.Span{TraceID: "t", SpanID: fmt.Sprint(i), ParentSpanID: "root", Name: "chat gpt-4o",
			Start: base.Add(time.Duration(i) * time.Millisecond), End: base.Add(time.Duration(i+1) * time.Millisecond),
			Attributes: map[string]any{"gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": int64(100)}})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = spanstore.RenderTree(in)
	}
}
