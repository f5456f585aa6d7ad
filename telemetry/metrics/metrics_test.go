package metrics

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/trace"
)

// scrape GETs /metrics from reg's handler and parses it with Prometheus's
// own text parser.
func scrape(t *testing.T, reg *Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("prometheus text parser rejects the exposition: %v\n%s", err, body)
	}
	return mfs
}

// sample finds the metric of family name whose labels include want
// (exactly those when exact), or nil.
func sample(mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	mf := mfs[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return math.NaN()
}

func TestRuntimeSeriesKeepTheirPrometheusNamesAndTypes(t *testing.T) {
	reg := NewRegistry()
	rt, err := NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt.SessionsActive.Inc()
	rt.SessionsActive.Inc()
	rt.SessionsActive.Dec()
	rt.JournalWaiting.Inc()
	rt.DrainFinished("completed")
	rt.DrainFinished("completed")
	rt.DrainFinished("provider")
	rt.TurnFinished("openai", "tool_calls")
	rt.ToolCallFinished("bash", "succeeded")
	rt.ToolCallFinished(`we"ird\tool`+"\n", "error")
	rt.ToolCallTook(ctx, "bash", "succeeded", 3*time.Millisecond)
	rt.JournalAppended(300 * time.Microsecond)
	rt.JournalAppended(2 * time.Millisecond)
	rt.JournalAppended(20 * time.Second)
	rt.JournalBatch(3)
	rt.JournalFenced()
	rt.ContextObserved("git", 40*time.Millisecond)
	rt.SourceUnavailable("lsp")
	rt.JournalRetried("failed")
	rt.HTTPServed(ctx, "POST", "/api/session/{id}/prompt", 204, 2*time.Millisecond)
	rt.HTTPServed(ctx, "GET", "/api/session/{id}", 503, time.Millisecond)
	rt.GenAIOperation(ctx, Operation{Provider: "openai", Model: "gpt-4o", Duration: 700 * time.Millisecond,
		FirstChunk: 90 * time.Millisecond, InputTokens: 1200, OutputTokens: 40})
	rt.GenAIOperation(ctx, Operation{Provider: "openai", Model: "gpt-4o", Duration: time.Second,
		InputTokens: -1, OutputTokens: -1, ErrorType: "rate_limit"})

	mfs := scrape(t, reg)
	cases := []struct {
		name   string
		typ    dto.MetricType
		labels map[string]string
		want   float64
	}{
		{NameSessionsActive, dto.MetricType_GAUGE, nil, 1},
		{NameJournalWaiting, dto.MetricType_GAUGE, nil, 1},
		{NameDrains, dto.MetricType_COUNTER, map[string]string{"outcome": "completed"}, 2},
		{NameDrains, dto.MetricType_COUNTER, map[string]string{"outcome": "provider"}, 1},
		{NameTurns, dto.MetricType_COUNTER, map[string]string{"provider": "openai", "finish_reason": "tool_calls"}, 1},
		{NameToolCalls, dto.MetricType_COUNTER, map[string]string{"tool": "bash", "status": "succeeded"}, 1},
		{NameToolCalls, dto.MetricType_COUNTER, map[string]string{"tool": `we"ird\tool` + "\n", "status": "error"}, 1},
		{NameToolDuration, dto.MetricType_HISTOGRAM, map[string]string{"gen_ai_tool_name": "bash", "outcome": "succeeded"}, 1},
		{NameJournalAppend, dto.MetricType_HISTOGRAM, nil, 3},
		{NameJournalEvents, dto.MetricType_HISTOGRAM, nil, 1},
		{NameJournalFenced, dto.MetricType_COUNTER, nil, 1},
		{NameContextObservation, dto.MetricType_HISTOGRAM, map[string]string{"source": "git"}, 1},
		{NameSourcesUnavailable, dto.MetricType_COUNTER, map[string]string{"source": "lsp"}, 1},
		{NameJournalRetries, dto.MetricType_COUNTER, map[string]string{"result": "failed"}, 1},
		{NameHTTPDuration, dto.MetricType_HISTOGRAM, map[string]string{"http_request_method": "POST", "http_route": "/api/session/{id}/prompt", "http_response_status_code": "204"}, 1},
		{NameHTTPDuration, dto.MetricType_HISTOGRAM, map[string]string{"http_response_status_code": "503", "error_type": "503"}, 1},
		{NameGenAIDuration, dto.MetricType_HISTOGRAM, map[string]string{"gen_ai_provider_name": "openai", "gen_ai_request_model": "gpt-4o", "gen_ai_operation_name": "chat", "error_type": ""}, 1},
		{NameGenAIDuration, dto.MetricType_HISTOGRAM, map[string]string{"error_type": "rate_limit"}, 1},
		{NameGenAIFirstChunk, dto.MetricType_HISTOGRAM, map[string]string{"gen_ai_provider_name": "openai", "gen_ai_request_model": "gpt-4o"}, 1},
		{NameGenAITokens, dto.MetricType_HISTOGRAM, map[string]string{"gen_ai_provider_name": "openai", "gen_ai_request_model": "gpt-4o", "gen_ai_token_type": "input"}, 1},
		{NameGenAITokens, dto.MetricType_HISTOGRAM, map[string]string{"gen_ai_token_type": "output"}, 1},
	}
	for _, c := range cases {
		mf := mfs[c.name]
		if mf == nil {
			t.Errorf("no family %s", c.name)
			continue
		}
		if mf.GetType() != c.typ {
			t.Errorf("%s is a %v, want %v", c.name, mf.GetType(), c.typ)
		}
		m := sample(mfs, c.name, c.labels)
		if m == nil {
			t.Errorf("no sample %s%v", c.name, c.labels)
			continue
		}
		if got := value(m); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The histogram keeps the runtime's buckets: 300 µs falls in le=0.0005.
	h := sample(mfs, NameJournalAppend, nil).GetHistogram()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == 0.00025 && b.GetCumulativeCount() != 0 || b.GetUpperBound() == 0.0005 && b.GetCumulativeCount() != 1 {
			t.Errorf("bucket le=%v holds %d", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
	if math.Abs(h.GetSampleSum()-20.0023) > 1e-9 {
		t.Errorf("journal append sum = %v, want 20.0023", h.GetSampleSum())
	}
	if m := sample(mfs, NameGenAITokens, map[string]string{"gen_ai_token_type": "input"}); m.GetHistogram().GetSampleSum() != 1200 {
		t.Errorf("input tokens sum = %v, want 1200", m.GetHistogram().GetSampleSum())
	}
}

func TestGoRuntimeAndProcessSeriesAreExposed(t *testing.T) {
	mfs := scrape(t, NewRegistry())
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds",
		"process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds", "target_info"} {
		if mfs[name] == nil {
			t.Errorf("no %s in /metrics", name)
		}
	}
	if v := value(mfs["go_goroutines"].GetMetric()[0]); v < 1 {
		t.Errorf("go_goroutines = %v", v)
	}
}

// A latency recorded inside a sampled trace carries that trace as an
// exemplar when the scraper asks for OpenMetrics.
func TestHistogramsCarryTheTraceAsExemplar(t *testing.T) {
	reg := NewRegistry()
	rt, err := NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	rt.HTTPServed(ctx, "GET", "/api/session", 200, 3*time.Millisecond)

	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	// The exemplar's labels come in no fixed order (span_id may precede trace_id).
	if !regexp.MustCompile(`# \{[^}]*trace_id="4bf92f3577b34da6a3ce929d0e0e4736"`).Match(body) {
		t.Fatalf("no exemplar with the trace in the OpenMetrics exposition:\n%s", body)
	}
}

func TestOTLPIsWantedOnlyOverHTTP(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		env  func(string) string
		want bool
		err  error
	}{
		{env(), false, nil},
		{env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), true, nil},
		{env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://127.0.0.1:4318/v1/metrics"), true, nil},
		{env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_METRICS_EXPORTER", "none"), false, nil},
		{env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), false, ErrUnsupportedProtocol},
		{env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"), true, nil},
	}
	for i, c := range cases {
		got, err := otlpWanted(c.env)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("case %d: got %v, %v; want %v, %v", i, got, err, c.want, c.err)
		}
	}
	if _, err := Open(context.Background(), Config{Getenv: env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")}); !errors.Is(err, ErrUnsupportedProtocol) {
		t.Fatalf("Open with grpc: %v", err)
	}
}
