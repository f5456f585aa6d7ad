package metrics

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Prometheus names of the series the sessionrt server exposes. They are part
// of the operator interface (dashboards and alerts refer to them): change
// them only on purpose. The OpenTelemetry instrument behind each is named
// with dots (sessionrt.drains), which the Prometheus exporter turns into
// these names (unit and _total suffixes included).
const (
	NameSessionsActive     = "sessionrt_sessions_active"
	NameDrains             = "sessionrt_drains_total"
	NameTurns              = "sessionrt_turns_total"
	NameToolCalls          = "sessionrt_tool_calls_total"
	NameToolDuration       = "sessionrt_tool_duration_seconds"
	NameJournalAppend      = "sessionrt_journal_append_seconds"
	NameJournalEvents      = "sessionrt_journal_append_events"
	NameJournalFenced      = "sessionrt_journal_fenced_appends_total"
	NameContextObservation = "sessionrt_context_observation_seconds"
	NameSourcesUnavailable = "sessionrt_context_source_unavailable_total"
	NameJournalWaiting     = "sessionrt_journal_waiting_sessions"
	NameJournalRetries     = "sessionrt_journal_retries_total"
	NameSessionTitles      = "sessionrt_session_titles_total"

	NameHTTPDuration     = "http_server_request_duration_seconds"
	NameGenAIDuration    = "gen_ai_client_operation_duration_seconds"
	NameGenAITokens      = "gen_ai_client_token_usage"
	NameGenAIFirstChunk  = "gen_ai_client_operation_time_to_first_chunk_seconds"
	NameSessionsAwaiting = "sessionrt_sessions_awaiting"
)

// Bucket boundaries. The HTTP and GenAI ones are those the OpenTelemetry
// semantic conventions recommend, so dashboards built for them fit.
var (
	httpBuckets       = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	genAIBuckets      = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	firstChunkBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	tokenBuckets      = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	batchBuckets      = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}
)

// LatencyBuckets are the upper bounds (seconds) of the runtime's own latency
// histograms: 50 µs (an in-memory append) to 10 s (a stalled disk).
func LatencyBuckets() []float64 {
	return []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// Gauge is a value that goes up and down (an OpenTelemetry UpDownCounter,
// a Prometheus gauge).
type Gauge struct{ c metric.Float64UpDownCounter }

// Add adds v (negative to decrease).
func (g *Gauge) Add(v float64) { g.c.Add(context.Background(), v) }

// Inc adds one.
func (g *Gauge) Inc() { g.Add(1) }

// Dec subtracts one.
func (g *Gauge) Dec() { g.Add(-1) }

// Runtime is the set of instruments the runtime records. Its methods take
// the attribute values as typed arguments, so callers cannot get them wrong.
// A nil *Runtime records nothing.
//
// Attribute values must have low cardinality: outcomes, provider, model,
// tool and context source names, route templates; never session IDs.
type Runtime struct {
	// SessionsActive counts activated (not passivated) Session actors.
	SessionsActive *Gauge
	// JournalWaiting counts sessions whose drain a journal failure stopped
	// and that wait for the journal to accept writes again.
	JournalWaiting *Gauge

	meter              metric.Meter
	drains             metric.Int64Counter
	turns              metric.Int64Counter
	toolCalls          metric.Int64Counter
	toolDuration       metric.Float64Histogram
	journalAppend      metric.Float64Histogram
	journalEvents      metric.Int64Histogram
	journalFenced      metric.Int64Counter
	contextObservation metric.Float64Histogram
	sourcesUnavailable metric.Int64Counter
	journalRetries     metric.Int64Counter
	sessionTitles      metric.Int64Counter
	httpDuration       metric.Float64Histogram
	genAIDuration      metric.Float64Histogram
	genAITokens        metric.Int64Histogram
	genAIFirstChunk    metric.Float64Histogram
}

// NewRuntime creates the runtime's instruments on reg.
func NewRuntime(reg *Registry) (*Runtime, error) {
	m := reg.Meter()
	rt := Runtime{meter: m, SessionsActive: &Gauge{}, JournalWaiting: &Gauge{}}
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	var err error
	rt.SessionsActive.c, err = m.Float64UpDownCounter("sessionrt.sessions.active",
		metric.WithDescription("Session actors currently active (activated and not passivated)."))
	keep(err)
	rt.JournalWaiting.c, err = m.Float64UpDownCounter("sessionrt.journal.waiting_sessions",
		metric.WithDescription("Sessions whose drain a journal write failure stopped, waiting for the journal to accept writes again."))
	keep(err)
	rt.drains, err = m.Int64Counter("sessionrt.drains",
		metric.WithDescription("Drains finished, by outcome (completed, interrupted, or the failure kind: provider, config, journal, ...)."))
	keep(err)
	rt.turns, err = m.Int64Counter("sessionrt.turns",
		metric.WithDescription("Provider turns finished, by provider and finish reason (error for a failed turn)."))
	keep(err)
	rt.toolCalls, err = m.Int64Counter("sessionrt.tool_calls",
		metric.WithDescription("Tool calls settled, by tool and status (succeeded, or the error kind: rejected, interrupted, ...)."))
	keep(err)
	rt.toolDuration, err = m.Float64Histogram("sessionrt.tool.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a tool call from its start to its settlement, by tool (gen_ai.tool.name) and outcome."),
		metric.WithExplicitBucketBoundaries(LatencyBuckets()...))
	keep(err)
	rt.journalAppend, err = m.Float64Histogram("sessionrt.journal.append", metric.WithUnit("s"),
		metric.WithDescription("Latency of journal append transactions (commit included) in seconds."),
		metric.WithExplicitBucketBoundaries(LatencyBuckets()...))
	keep(err)
	rt.journalEvents, err = m.Int64Histogram("sessionrt.journal.append.events",
		metric.WithDescription("Events written by one journal append transaction (its batch size)."),
		metric.WithExplicitBucketBoundaries(batchBuckets...))
	keep(err)
	rt.journalFenced, err = m.Int64Counter("sessionrt.journal.fenced_appends",
		metric.WithDescription("Journal appends refused because another owner took the session over (fenced)."))
	keep(err)
	rt.contextObservation, err = m.Float64Histogram("sessionrt.context_observation", metric.WithUnit("s"),
		metric.WithDescription("Latency of observing context sources in seconds, by source."),
		metric.WithExplicitBucketBoundaries(LatencyBuckets()...))
	keep(err)
	rt.sourcesUnavailable, err = m.Int64Counter("sessionrt.context_source_unavailable",
		metric.WithDescription("Context source observations that found the source unavailable, by source."))
	keep(err)
	rt.journalRetries, err = m.Int64Counter("sessionrt.journal.retries",
		metric.WithDescription("Attempts to resume a session after a journal write failure, by result (failed: the journal still refused; resumed)."))
	keep(err)
	rt.sessionTitles, err = m.Int64Counter("sessionrt.session.titles",
		metric.WithDescription("Session title requests answered, by result (titled; kept: a client titled the session meanwhile; failed: the session keeps its default)."))
	keep(err)
	rt.httpDuration, err = m.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP server requests."),
		metric.WithExplicitBucketBoundaries(httpBuckets...))
	keep(err)
	rt.genAIDuration, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(genAIBuckets...))
	keep(err)
	rt.genAITokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	keep(err)
	rt.genAIFirstChunk, err = m.Float64Histogram("gen_ai.client.operation.time_to_first_chunk", metric.WithUnit("s"),
		metric.WithDescription("Time from the request to the first chunk of the streamed response."),
		metric.WithExplicitBucketBoundaries(firstChunkBuckets...))
	keep(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &rt, nil
}

// Meter is the meter the instruments are on, for components that add
// instruments of their own (the cluster's, callbacks).
func (r *Runtime) Meter() metric.Meter { return r.meter }

// DrainFinished counts one finished drain.
func (r *Runtime) DrainFinished(outcome string) {
	r.drains.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

// TurnFinished counts one finished provider turn.
func (r *Runtime) TurnFinished(provider, finishReason string) {
	r.turns.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("provider", provider), attribute.String("finish_reason", finishReason)))
}

// ToolCallFinished counts one settled tool call.
func (r *Runtime) ToolCallFinished(tool, status string) {
	r.toolCalls.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("tool", tool), attribute.String("status", status)))
}

// ToolCallTook records how long a settled tool call took, from its start to
// its settlement; ctx links the measurement to the call's trace (exemplar).
func (r *Runtime) ToolCallTook(ctx context.Context, tool, outcome string, d time.Duration) {
	r.toolDuration.Record(ctx, d.Seconds(), metric.WithAttributes(
		semconv.GenAIToolName(tool), attribute.String("outcome", outcome)))
}

// JournalAppended records the latency of one journal append.
func (r *Runtime) JournalAppended(d time.Duration) {
	r.journalAppend.Record(context.Background(), d.Seconds())
}

// JournalBatch records how many events one committed journal append wrote.
func (r *Runtime) JournalBatch(events int) {
	r.journalEvents.Record(context.Background(), int64(events))
}

// JournalFenced counts an append the journal refused because another owner
// had taken the session over.
func (r *Runtime) JournalFenced() { r.journalFenced.Add(context.Background(), 1) }

// ContextObserved records how long observing one context source took.
func (r *Runtime) ContextObserved(source string, d time.Duration) {
	r.contextObservation.Record(context.Background(), d.Seconds(), metric.WithAttributes(attribute.String("source", source)))
}

// SourceUnavailable counts one observation that found a context source unavailable.
func (r *Runtime) SourceUnavailable(source string) {
	r.sourcesUnavailable.Add(context.Background(), 1, metric.WithAttributes(attribute.String("source", source)))
}

// JournalRetried counts one attempt to resume a session after a journal
// failure: result is "failed" or "resumed".
func (r *Runtime) JournalRetried(result string) {
	r.journalRetries.Add(context.Background(), 1, metric.WithAttributes(attribute.String("result", result)))
}

// SessionTitled counts one title request's answer: result is "titled",
// "kept" or "failed".
func (r *Runtime) SessionTitled(result string) {
	r.sessionTitles.Add(context.Background(), 1, metric.WithAttributes(attribute.String("result", result)))
}

// HTTPServed records one HTTP request the API served: route is the route
// template ("POST /api/session/{id}/prompt" gives method POST and route
// /api/session/{id}/prompt), never the raw path. ctx links the measurement
// to the request's trace (exemplar).
func (r *Runtime) HTTPServed(ctx context.Context, method, route string, status int, d time.Duration) {
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(method),
		semconv.HTTPResponseStatusCode(status),
	}
	if route != "" {
		attrs = append(attrs, semconv.HTTPRoute(route))
	}
	if status >= 500 {
		attrs = append(attrs, semconv.ErrorTypeKey.String(strconv.Itoa(status)))
	}
	r.httpDuration.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
}

// Operation is one GenAI client operation (a provider turn) as the
// semantic conventions describe it.
type Operation struct {
	Name     string // gen_ai.operation.name: "chat"
	Provider string // gen_ai.provider.name
	Model    string // gen_ai.request.model
	// Duration is from the request to the end of the response.
	Duration time.Duration
	// FirstChunk is from the request to the first streamed chunk; 0 when
	// none arrived.
	FirstChunk time.Duration
	// InputTokens and OutputTokens are the usage the provider reported;
	// negative when it reported none.
	InputTokens, OutputTokens int64
	// ErrorType is error.type of a failed operation (the failure class);
	// empty when it succeeded.
	ErrorType string
}

// GenAIOperation records gen_ai.client.operation.duration, the time to the
// first chunk and gen_ai.client.token.usage (one record per token type).
func (r *Runtime) GenAIOperation(ctx context.Context, op Operation) {
	name := op.Name
	if name == "" {
		name = "chat"
	}
	base := []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(name),
		semconv.GenAIProviderNameKey.String(op.Provider),
		semconv.GenAIRequestModel(op.Model),
	}
	if op.ErrorType != "" {
		r.genAIDuration.Record(ctx, op.Duration.Seconds(), metric.WithAttributes(append(base, semconv.ErrorTypeKey.String(op.ErrorType))...))
	} else {
		r.genAIDuration.Record(ctx, op.Duration.Seconds(), metric.WithAttributes(base...))
	}
	if op.FirstChunk > 0 {
		r.genAIFirstChunk.Record(ctx, op.FirstChunk.Seconds(), metric.WithAttributes(base...))
	}
	if op.InputTokens >= 0 {
		r.genAITokens.Record(ctx, op.InputTokens, metric.WithAttributes(append(base, semconv.GenAITokenTypeInput)...))
	}
	if op.OutputTokens >= 0 {
		r.genAITokens.Record(ctx, op.OutputTokens, metric.WithAttributes(append(base[:len(base):len(base)], semconv.GenAITokenTypeOutput)...))
	}
}
