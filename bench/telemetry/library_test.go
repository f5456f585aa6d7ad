package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The records one turn of `sessionrt bench` makes (a prompt answered in two
// model calls around one bash call): 3 HTTP requests, 2 GenAI operations
// with their token usage (input, output) and time to first chunk, 1 tool
// call, 8 journal appends, 1 drain. BenchmarkMetricsLibraryPerTurn makes
// them through each candidate library, with the label values built at the
// call as the runtime does, so that its ns/op is the metrics CPU per turn
// to compare with the server CPU per turn that `sessionrt bench` measures.
const (
	turnHTTP     = 3
	turnGenAI    = 2
	turnJournal  = 8
	turnToolCall = 1
)

var httpRoutes = []string{"POST /api/session", "POST /api/session/{id}/prompt", "GET /api/session/{id}/event"}

func BenchmarkMetricsLibraryPerTurn(b *testing.B) {
	b.Run("opentelemetry-sdk+prometheus-exporter", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
		if err != nil {
			b.Fatal(err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		defer mp.Shutdown(context.Background())
		m := mp.Meter("bench")
		httpDur, _ := m.Float64Histogram("http.server.request.duration", metric.WithUnit("s"))
		opDur, _ := m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"))
		tokens, _ := m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"))
		ttfc, _ := m.Float64Histogram("gen_ai.client.operation.time_to_first_chunk", metric.WithUnit("s"))
		toolDur, _ := m.Float64Histogram("sessionrt.tool.duration", metric.WithUnit("s"))
		journal, _ := m.Float64Histogram("sessionrt.journal.append", metric.WithUnit("s"))
		events, _ := m.Int64Histogram("sessionrt.journal.append.events")
		drains, _ := m.Int64Counter("sessionrt.drains")
		turns, _ := m.Int64Counter("sessionrt.turns")
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for j := range turnHTTP {
				httpDur.Record(ctx, 0.002, metric.WithAttributes(attribute.String("http.route", httpRoutes[j]),
					attribute.String("http.request.method", "POST"), attribute.Int("http.response.status_code", 200)))
			}
			for range turnGenAI {
				op := metric.WithAttributes(attribute.String("gen_ai.operation.name", "chat"),
					attribute.String("gen_ai.provider.name", "openai"), attribute.String("gen_ai.request.model", "bench"))
				opDur.Record(ctx, 0.05, op)
				ttfc.Record(ctx, 0.01, op)
				tokens.Record(ctx, 1200, metric.WithAttributes(attribute.String("gen_ai.operation.name", "chat"),
					attribute.String("gen_ai.provider.name", "openai"), attribute.String("gen_ai.request.model", "bench"), attribute.String("gen_ai.token.type", "input")))
				tokens.Record(ctx, 40, metric.WithAttributes(attribute.String("gen_ai.operation.name", "chat"),
					attribute.String("gen_ai.provider.name", "openai"), attribute.String("gen_ai.request.model", "bench"), attribute.String("gen_ai.token.type", "output")))
				turns.Add(ctx, 1, metric.WithAttributes(attribute.String("provider", "openai"), attribute.String("finish_reason", "stop")))
			}
			for range turnToolCall {
				toolDur.Record(ctx, 0.003, metric.WithAttributes(attribute.String("gen_ai.tool.name", "bash"), attribute.String("outcome", "succeeded")))
			}
			for range turnJournal {
				journal.Record(ctx, float64(300*time.Microsecond)/1e9)
				events.Record(ctx, 2)
			}
			drains.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", "completed")))
		}
	})
	b.Run("prometheus-client_golang", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		f := func(name string, labels ...string) *prometheus.HistogramVec {
			h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: name}, labels)
			reg.MustRegister(h)
			return h
		}
		httpDur := f("http_server_request_duration_seconds", "http_route", "http_request_method", "http_response_status_code")
		opDur := f("gen_ai_client_operation_duration_seconds", "gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model")
		ttfc := f("gen_ai_client_operation_time_to_first_chunk_seconds", "gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model")
		tokens := f("gen_ai_client_token_usage", "gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "gen_ai_token_type")
		toolDur := f("sessionrt_tool_duration_seconds", "gen_ai_tool_name", "outcome")
		journal := f("sessionrt_journal_append_seconds")
		events := f("sessionrt_journal_append_events")
		drains := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sessionrt_drains_total", Help: "d"}, []string{"outcome"})
		turns := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sessionrt_turns_total", Help: "t"}, []string{"provider", "finish_reason"})
		reg.MustRegister(drains, turns)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for j := range turnHTTP {
				httpDur.WithLabelValues(httpRoutes[j], "POST", "200").Observe(0.002)
			}
			for range turnGenAI {
				opDur.WithLabelValues("chat", "openai", "bench").Observe(0.05)
				ttfc.WithLabelValues("chat", "openai", "bench").Observe(0.01)
				tokens.WithLabelValues("chat", "openai", "bench", "input").Observe(1200)
				tokens.WithLabelValues("chat", "openai", "bench", "output").Observe(40)
				turns.WithLabelValues("openai", "stop").Inc()
			}
			for range turnToolCall {
				toolDur.WithLabelValues("bash", "succeeded").Observe(0.003)
			}
			for range turnJournal {
				journal.WithLabelValues().Observe(float64(300*time.Microsecond) / 1e9)
				events.WithLabelValues().Observe(2)
			}
			drains.WithLabelValues("completed").Inc()
		}
	})
}
