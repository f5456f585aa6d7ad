package e2e

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/internal/testdb"
)

// otlpSink is a real OTLP/HTTP receiver: it decodes what the server's
// exporters post to /v1/metrics and /v1/traces, and signals every batch.
type otlpSink struct {
	mu      sync.Mutex
	metrics map[string]bool // instrument names received
	spans   []*tracepb.Span
	bad     []string
	batch   chan struct{}
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var resp proto.Message
	s.mu.Lock()
	switch r.URL.Path {
	case "/v1/metrics":
		var msg collectormetrics.ExportMetricsServiceRequest
		if err = proto.Unmarshal(raw, &msg); err == nil {
			for _, rm := range msg.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						s.metrics[m.Name] = true
					}
				}
			}
		}
		resp = &collectormetrics.ExportMetricsServiceResponse{}
	case "/v1/traces":
		var msg collectortrace.ExportTraceServiceRequest
		if err = proto.Unmarshal(raw, &msg); err == nil {
			for _, rs := range msg.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					s.spans = append(s.spans, ss.Spans...)
				}
			}
		}
		resp = &collectortrace.ExportTraceServiceResponse{}
	default:
		err = fmt.Errorf("unexpected path %s", r.URL.Path)
	}
	if err != nil {
		s.bad = append(s.bad, err.Error())
	}
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case s.batch <- struct{}{}:
	default:
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// traceparentTransport sends the caller's W3C trace context with every
// request, as a traced client would.
type traceparentTransport struct{ traceparent string }

func (t traceparentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("traceparent", t.traceparent)
	return http.DefaultTransport.RoundTrip(r)
}

// A prompt with a tool call, sent by a traced client, shows in /metrics
// (parsed by Prometheus's own parser) under the names operators search for,
// the same instruments arrive over OTLP/HTTP at a local receiver, the
// request's server span joins the caller's trace, and the HTTP latency
// histogram carries that trace as exemplar, and the drain the prompt
// started (its invoke_agent span) is a child of that server span.
func TestServeMetricsAfterAPromptWithAToolCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	sink := &otlpSink{metrics: map[string]bool{}, batch: make(chan struct{}, 1)}
	recv := httptest.NewServer(sink)
	defer recv.Close()
	bin := build(t)
	srv := serveEnv(t, bin, t.TempDir(), []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL,
		"OTEL_METRIC_EXPORT_INTERVAL=200", "OTEL_BSP_SCHEDULE_DELAY=200"})

	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	c, err := client.New(client.Config{BaseURL: srv.url, Token: token,
		HTTP: &http.Client{Transport: traceparentTransport{"00-" + traceID + "-" + parentID + "-01"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "run: echo metrics-hi"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}

	mfs := scrapeMetrics(t, srv.url, "")
	series := []struct {
		name   string
		labels map[string]string
		min    float64 // counter or gauge value, or histogram count
	}{
		{"sessionrt_drains_total", map[string]string{"outcome": "completed"}, 1},
		{"sessionrt_turns_total", map[string]string{"provider": "scripted", "finish_reason": "tool_calls"}, 1},
		{"sessionrt_tool_calls_total", map[string]string{"tool": "bash", "status": "succeeded"}, 1},
		{"sessionrt_tool_duration_seconds", map[string]string{"gen_ai_tool_name": "bash", "outcome": "succeeded"}, 1},
		{"sessionrt_sessions_active", nil, 1},
		{"sessionrt_sessions_awaiting", map[string]string{"on": "permission"}, 0},
		{"sessionrt_sessions_awaiting", map[string]string{"on": "question"}, 0},
		{"sessionrt_journal_append_seconds", nil, 3},
		{"sessionrt_journal_append_events", nil, 3},
		{"sessionrt_journal_fsyncs_total", nil, 1},
		{"sessionrt_journal_transactions_total", nil, 1},
		{"sessionrt_journal_fsync_time_seconds_total", nil, 0},
		{"sessionrt_journal_size_bytes", nil, 1},
		{"db_client_connection_count", map[string]string{"db_client_connection_state": "idle"}, 0},
		{"http_server_request_duration_seconds", map[string]string{"http_request_method": "POST", "http_route": "/api/session/{sessionID}/prompt", "http_response_status_code": "200"}, 1},
		{"gen_ai_client_operation_duration_seconds", map[string]string{"gen_ai_provider_name": "scripted", "gen_ai_request_model": "demo", "gen_ai_operation_name": "chat"}, 2},
		{"gen_ai_client_operation_time_to_first_chunk_seconds", map[string]string{"gen_ai_provider_name": "scripted", "gen_ai_request_model": "demo"}, 2},
		{"gen_ai_client_token_usage", map[string]string{"gen_ai_provider_name": "scripted", "gen_ai_request_model": "demo", "gen_ai_token_type": "input"}, 2},
		{"gen_ai_client_token_usage", map[string]string{"gen_ai_provider_name": "scripted", "gen_ai_request_model": "demo", "gen_ai_token_type": "output"}, 2},
		{"go_goroutines", nil, 1},
		{"go_memstats_heap_alloc_bytes", nil, 1},
		{"process_resident_memory_bytes", nil, 1},
		{"process_cpu_seconds_total", nil, 0},
		{"process_open_fds", nil, 1},
	}
	for _, c := range series {
		m := findSeries(mfs, c.name, c.labels)
		if m == nil {
			t.Errorf("/metrics has no %s%v", c.name, c.labels)
			continue
		}
		if v := seriesValue(m); v < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, v, c.min)
		}
	}

	// The latency of the traced requests links to the caller's trace.
	om := scrapeText(t, srv.url, "application/openmetrics-text; version=1.0.0")
	if !strings.Contains(om, `trace_id="`+traceID+`"`) {
		t.Errorf("no exemplar with the caller's trace %s in the OpenMetrics exposition", traceID)
	}

	// OTLP: the same instruments, and the prompt's server span in the caller's trace.
	want := []string{"sessionrt.drains", "sessionrt.tool_calls", "sessionrt.tool.duration", "sessionrt.journal.append",
		"http.server.request.duration", "gen_ai.client.operation.duration", "gen_ai.client.token.usage",
		"gen_ai.client.operation.time_to_first_chunk", "sessionrt.journal.fsyncs", "go.goroutine.count"}
	missing := func() []string {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		var out []string
		for _, n := range want {
			if !sink.metrics[n] {
				out = append(out, n)
			}
		}
		if !joined(sink.spans, traceID, parentID) {
			out = append(out, "the prompt's server span under the caller's")
		}
		if !drainJoined(sink.spans, traceID) {
			out = append(out, "the drain's invoke_agent span under the prompt's server span")
		}
		return out
	}
	// Each export signals the sink; the wait ends when all arrived, or at a
	// backstop far beyond the 200 ms export interval.
	backstop := time.After(90 * time.Second)
	for len(missing()) > 0 {
		select {
		case <-sink.batch:
		case <-backstop:
			t.Fatalf("OTLP receiver never got %v (bad requests: %v)", missing(), sink.bad)
		}
	}
}

// TestServeMetricsJournalSizeOnMariaDB: with the journal on MariaDB,
// sessionrt_journal_size_bytes is the journal database's tables and indexes
// as the server reports them (information_schema, read by the test just
// before and just after the scrape), the pool's connections are there, and
// the embedded engine's fsync counters are not (the server keeps its own).
func TestServeMetricsJournalSizeOnMariaDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := build(t)
	db := testdb.MariaDB(t)
	srv := serve(t, bin, t.TempDir(), "--journal", db.URL())
	c, err := client.New(client.Config{BaseURL: srv.url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "run: echo size"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	size := func() float64 {
		var n int64
		if err := db.DB.QueryRowContext(ctx, `SELECT COALESCE(SUM(data_length + index_length), 0)
			FROM information_schema.tables WHERE table_schema = ?`, db.Name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return float64(n)
	}
	before := size()
	mfs := scrapeMetrics(t, srv.url, "")
	after := size()
	m := findSeries(mfs, "sessionrt_journal_size_bytes", nil)
	if m == nil {
		t.Fatal("/metrics has no sessionrt_journal_size_bytes on a MariaDB journal")
	}
	got := seriesValue(m)
	if got <= 0 || got < min(before, after) || got > max(before, after) {
		t.Fatalf("sessionrt_journal_size_bytes = %v; the journal database %s holds %v bytes before the scrape and %v after", got, db.Name, before, after)
	}
	if findSeries(mfs, "db_client_connection_count", map[string]string{"db_client_connection_state": "used"}) == nil {
		t.Error("/metrics has no db_client_connection_count{db_client_connection_state=\"used\"} for the MariaDB pool")
	}
	if _, ok := mfs["sessionrt_journal_fsyncs_total"]; ok {
		t.Error("/metrics has the embedded engine's sessionrt_journal_fsyncs_total on a MariaDB journal")
	}
	t.Logf("sessionrt_journal_size_bytes %v (database %s)", got, db.Name)
}

func joined(spans []*tracepb.Span, traceID, parentID string) bool {
	for _, sp := range spans {
		if sp.Name == "POST /api/session/{sessionID}/prompt" && hex.EncodeToString(sp.TraceId) == traceID &&
			hex.EncodeToString(sp.ParentSpanId) == parentID && sp.Kind == tracepb.Span_SPAN_KIND_SERVER {
			return true
		}
	}
	return false
}

// drainJoined: the drain the traced prompt started is a child of the
// prompt's server span, in the caller's trace.
func drainJoined(spans []*tracepb.Span, traceID string) bool {
	for _, server := range spans {
		if server.Name != "POST /api/session/{sessionID}/prompt" || hex.EncodeToString(server.TraceId) != traceID {
			continue
		}
		for _, sp := range spans {
			if strings.HasPrefix(sp.Name, "invoke_agent") && hex.EncodeToString(sp.TraceId) == traceID &&
				string(sp.ParentSpanId) == string(server.SpanId) {
				return true
			}
		}
	}
	return false
}

func scrapeText(t *testing.T, base, accept string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %v %s", err, res.Status)
	}
	return string(body)
}

// scrapeMetrics parses /metrics with Prometheus's own text parser.
func scrapeMetrics(t *testing.T, base, accept string) map[string]*dto.MetricFamily {
	t.Helper()
	text := scrapeText(t, base, accept)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("prometheus text parser rejects /metrics: %v\n%s", err, text)
	}
	return mfs
}

func findSeries(mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
next:
	for _, m := range mfs[name].GetMetric() {
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

func seriesValue(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}
