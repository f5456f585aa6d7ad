package telemetry

import (
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
	"github.com/sessionrt/sessionrt/telemetry/spanstore"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a real OTLP/HTTP endpoint: it decodes the protobuf
// ExportTraceServiceRequest the exporter posts to /v1/traces and the
// ExportMetricsServiceRequest posted to /v1/metrics.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	metrics  []*metricpb.Metric
	resource map[string]string
	bad      []string
	headers  []http.Header
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	fail := func(msg string) {
		r.mu.Lock()
		r.bad = append(r.bad, msg)
		r.mu.Unlock()
		http.Error(w, msg, http.StatusBadRequest)
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" && req.URL.Path != "/v1/metrics" {
		fail(fmt.Sprintf("unexpected %s %s", req.Method, req.URL.Path))
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		fail("content-type " + ct)
		return
	}
	body := io.Reader(req.Body)
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			fail(err.Error())
			return
		}
		body = gz
	}
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	raw, err := io.ReadAll(body)
	if err != nil {
		fail(err.Error())
		return
	}
	if req.URL.Path == "/v1/metrics" {
		var msg collectormetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(raw, &msg); err != nil {
			fail("decode: " + err.Error())
			return
		}
		r.mu.Lock()
		for _, rm := range msg.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				r.metrics = append(r.metrics, sm.Metrics...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectormetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
		return
	}
	var msg collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		fail("decode: " + err.Error())
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		r.resource = attrMap(rs.Resource.GetAttributes())
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.Value
		switch {
		case v.GetArrayValue() != nil:
			var parts []string
			for _, e := range v.GetArrayValue().Values {
				parts = append(parts, e.GetStringValue())
			}
			m[kv.Key] = "[" + strings.Join(parts, ",") + "]"
		case v.GetValue() == nil:
		default:
			switch x := v.GetValue().(type) {
			case *commonpb.AnyValue_StringValue:
				m[kv.Key] = x.StringValue
			case *commonpb.AnyValue_IntValue:
				m[kv.Key] = fmt.Sprint(x.IntValue)
			case *commonpb.AnyValue_BoolValue:
				m[kv.Key] = fmt.Sprint(x.BoolValue)
			case *commonpb.AnyValue_DoubleValue:
				m[kv.Key] = fmt.Sprint(x.DoubleValue)
			}
		}
	}
	return m
}

// clearOTELEnv makes a test independent of the developer's environment.
func clearOTELEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_EXPORTER",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_METRICS_EXPORTER"} {
		t.Setenv(k, "")
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// drain runs one simulated drain: the session side starts invoke_agent and a
// chat turn, then sends a tool call "message" to another actor, which
// continues the trace from the message headers.
func drain(t *testing.T, tr *Tracer, session string) {
	ctx, agent := tr.StartInvokeAgent(context.Background(), Agent{SessionID: session, AgentName: "build", ProviderName: "openai", Model: "gpt-4o"})
	_, chat := tr.StartChat(ctx, Chat{SessionID: session, AgentName: "build", ProviderName: "openai", Model: "gpt-4o"})
	EndChat(chat, ChatResult{Usage: Usage{InputTokens: 120, OutputTokens: 40}, FinishReasons: []string{"tool_calls"}, ResponseID: "resp_1"}, nil)

	headers := Inject(ctx) // carried in the actor message
	done := make(chan struct{})
	go func() { // the tool actor, in its own goroutine with its own context
		defer close(done)
		rctx := Extract(context.Background(), headers)
		_, tool := tr.StartExecuteTool(rctx, Tool{SessionID: session, ToolName: "bash", CallID: "call_1"})
		End(tool, fmt.Errorf("run bash: %w", context.DeadlineExceeded))
	}()
	<-done
	EndInvokeAgent(agent, Usage{InputTokens: 120, OutputTokens: 40}, nil)
}

func TestOTLPReceiverGetsGenAISpansLinkedAcrossInjectExtract(t *testing.T) {
	clearOTELEnv(t)
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-test=1")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")

	tel, err := Setup(ctxT(t), Config{ServiceVersion: "v0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.OTLP || tel.Store != nil {
		t.Fatalf("OTLP = %v, store = %v; want OTLP on and no store", tel.OTLP, tel.Store)
	}
	drain(t, tel.Tracer, "ses_otlp")
	if err := tel.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.bad) > 0 {
		t.Fatalf("receiver refused requests: %v", rcv.bad)
	}
	for _, h := range rcv.headers { // the exporter honours the other OTEL_* variables
		if h.Get("X-Test") != "1" || h.Get("Content-Encoding") != "gzip" {
			t.Fatalf("request headers %v: want x-test=1 and gzip from OTEL_EXPORTER_OTLP_HEADERS/COMPRESSION", h)
		}
	}
	if rcv.resource["service.name"] != "sessionrt" || rcv.resource["service.version"] != "v0.0.1" ||
		rcv.resource["deployment.environment.name"] != "test" {
		t.Fatalf("resource = %v", rcv.resource)
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range rcv.spans {
		byName[s.Name] = s
	}
	agent, chat, tool := byName["invoke_agent"], byName["chat gpt-4o"], byName["execute_tool bash"]
	if len(rcv.spans) != 3 || agent == nil || chat == nil || tool == nil {
		var got []string
		for _, s := range rcv.spans {
			got = append(got, s.Name)
		}
		t.Fatalf("spans received: %v; want invoke_agent, chat gpt-4o, execute_tool bash", got)
	}
	want := map[*tracepb.Span]map[string]string{
		agent: {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "ses_otlp", "gen_ai.agent.name": "build",
			"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": "120"},
		chat: {"gen_ai.operation.name": "chat", "gen_ai.conversation.id": "ses_otlp", "gen_ai.provider.name": "openai",
			"gen_ai.request.model": "gpt-4o", "gen_ai.response.finish_reasons": "[tool_calls]",
			"gen_ai.usage.input_tokens": "120", "gen_ai.usage.output_tokens": "40", "gen_ai.response.id": "resp_1"},
		tool: {"gen_ai.operation.name": "execute_tool", "gen_ai.conversation.id": "ses_otlp", "gen_ai.tool.name": "bash",
			"gen_ai.tool.call.id": "call_1", "error.type": "timeout"},
	}
	for sp, attrs := range want {
		got := attrMap(sp.Attributes)
		for k, v := range attrs {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q (all: %v)", sp.Name, k, got[k], v, got)
			}
		}
	}
	if chat.Kind != tracepb.Span_SPAN_KIND_CLIENT || agent.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("kinds: chat %v, invoke_agent %v", chat.Kind, agent.Kind)
	}
	if tool.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed tool status = %v", tool.Status)
	}
	hexID := func(b []byte) string { return hex.EncodeToString(b) }
	if len(agent.ParentSpanId) != 0 {
		t.Errorf("invoke_agent has parent %s, want a root", hexID(agent.ParentSpanId))
	}
	for _, child := range []*tracepb.Span{chat, tool} {
		if hexID(child.TraceId) != hexID(agent.TraceId) || hexID(child.ParentSpanId) != hexID(agent.SpanId) {
			t.Errorf("%s: trace %s parent %s; want trace %s parent %s", child.Name,
				hexID(child.TraceId), hexID(child.ParentSpanId), hexID(agent.TraceId), hexID(agent.SpanId))
		}
	}
}

func TestSetupWithDatabaseStoresSpansForTraceShow(t *testing.T) {
	clearOTELEnv(t)
	for _, b := range []struct {
		name string
		open func(t *testing.T) *sql.DB
	}{
		{"mariadb", func(t *testing.T) *sql.DB { return testdb.MariaDB(t).DB }},
		{"boltsql", func(t *testing.T) *sql.DB {
			eng, err := boltsql.Open(t.TempDir(), boltsql.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			return eng.DB()
		}},
	} {
		t.Run(b.name, func(t *testing.T) { setupWithDatabase(t, b.open(t)) })
	}
}

func setupWithDatabase(t *testing.T, db *sql.DB) {
	tel, err := Setup(ctxT(t), Config{DB: db, Store: spanstore.Config{Table: "spans_setup", PruneInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if tel.OTLP || tel.Store == nil {
		t.Fatalf("OTLP = %v, store = %v; want store only", tel.OTLP, tel.Store)
	}
	drain(t, tel.Tracer, "ses_show")
	// A span a library starts under the drain, without the session attribute.
	ctx, agent := tel.Tracer.StartInvokeAgent(context.Background(), Agent{SessionID: "ses_show", AgentName: "plan"})
	_, lib := tel.TracerProvider.Tracer("some/http/lib").Start(ctx, "POST")
	lib.End()
	agent.End()
	if err := tel.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	spans, err := tel.Store.Trace(ctxT(t), "ses_show")
	if err != nil {
		t.Fatal(err)
	}
	tree := spanstore.RenderTree(spans)
	lines := strings.Split(strings.TrimSuffix(tree, "\n"), "\n")
	wantPrefixes := []string{
		"invoke_agent  ", "├─ chat gpt-4o  ", "└─ execute_tool bash  ",
		"invoke_agent  ", "└─ POST  ",
	}
	if len(lines) != len(wantPrefixes) {
		t.Fatalf("tree:\n%s", tree)
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(lines[i], p) {
			t.Fatalf("line %d = %q, want prefix %q; tree:\n%s", i, lines[i], p, tree)
		}
	}
	for _, frag := range []string{"finish=[tool_calls] in=120 out=40", "tool=bash call=call_1 error=timeout", "agent=build provider=openai model=gpt-4o"} {
		if !strings.Contains(tree, frag) {
			t.Errorf("tree lacks %q:\n%s", frag, tree)
		}
	}
}

// Metrics go out over OTLP/HTTP to the same endpoint as spans: the
// runtime's instruments with their attributes, and the Go runtime's.
func TestOTLPReceiverGetsTheRuntimeMetrics(t *testing.T) {
	clearOTELEnv(t)
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	tel, err := Setup(ctxT(t), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.Registry.OTLP() {
		t.Fatal("metrics not exported over OTLP with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	tel.Metrics.DrainFinished("completed")
	tel.Metrics.ToolCallTook(ctxT(t), "bash", "succeeded", 2*time.Millisecond)
	tel.Metrics.GenAIOperation(ctxT(t), metrics.Operation{Provider: "openai", Model: "gpt-4o", Duration: time.Second, InputTokens: 10, OutputTokens: 2})
	if err := tel.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.bad) > 0 {
		t.Fatalf("receiver refused: %v", recv.bad)
	}
	got := map[string]*metricpb.Metric{}
	for _, m := range recv.metrics {
		got[m.Name] = m
	}
	for _, name := range []string{"sessionrt.drains", "sessionrt.tool.duration", "gen_ai.client.operation.duration",
		"gen_ai.client.token.usage", "go.goroutine.count", "go.memory.used"} {
		if got[name] == nil {
			t.Errorf("OTLP receiver got no %s (got %d metrics)", name, len(got))
		}
	}
	if m := got["gen_ai.client.token.usage"]; m != nil {
		types := map[string]bool{}
		for _, dp := range m.GetHistogram().GetDataPoints() {
			a := attrMap(dp.Attributes)
			if a["gen_ai.provider.name"] != "openai" || a["gen_ai.request.model"] != "gpt-4o" {
				t.Errorf("token usage point %v lacks provider/model", a)
			}
			types[a["gen_ai.token.type"]] = true
		}
		if !types["input"] || !types["output"] {
			t.Errorf("token types %v, want input and output", types)
		}
	}
}

func TestSetupRejectsGRPCProtocol(t *testing.T) {
	clearOTELEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	_, err := Setup(ctxT(t), Config{})
	if !errors.Is(err, ErrUnsupportedProtocol) || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("err = %v, want ErrUnsupportedProtocol naming the variable", err)
	}
	// The traces-specific variable wins over the general one (and the
	// metrics-specific one for metrics, which are exported over OTLP too).
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
	if _, err := Setup(ctxT(t), Config{}); !errors.Is(err, ErrUnsupportedProtocol) {
		t.Fatalf("metrics still on grpc: err = %v, want ErrUnsupportedProtocol", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf")
	tel, err := Setup(ctxT(t), Config{})
	if err != nil || !tel.OTLP {
		t.Fatalf("with http/protobuf for traces: %v, OTLP %v", err, tel != nil && tel.OTLP)
	}
	tel.Shutdown(ctxT(t))
}

func TestOTLPOffWithoutEndpointOrWhenExporterIsNone(t *testing.T) {
	clearOTELEnv(t)
	tel, err := Setup(ctxT(t), Config{})
	if err != nil || tel.OTLP {
		t.Fatalf("no endpoint: %v, OTLP %v", err, tel != nil && tel.OTLP)
	}
	tel.Shutdown(ctxT(t))
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:1/v1/traces")
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	tel, err = Setup(ctxT(t), Config{})
	if err != nil || tel.OTLP {
		t.Fatalf("OTEL_TRACES_EXPORTER=none: %v, OTLP %v", err, tel != nil && tel.OTLP)
	}
	tel.Shutdown(ctxT(t))
}
