package metrics

import (
	"errors"
	"time"
)

// Metric names the sessionrt server exposes. They are part of the operator
// interface (dashboards and alerts refer to them): change them only on purpose.
const (
	NameSessionsActive     = "sessionrt_sessions_active"
	NameDrains             = "sessionrt_drains_total"
	NameTurns              = "sessionrt_turns_total"
	NameToolCalls          = "sessionrt_tool_calls_total"
	NameJournalAppend      = "sessionrt_journal_append_seconds"
	NameContextObservation = "sessionrt_context_observation_seconds"
	NameSourcesUnavailable = "sessionrt_context_source_unavailable_total"
	NameJournalWaiting     = "sessionrt_journal_waiting_sessions"
	NameJournalRetries     = "sessionrt_journal_retries_total"
)

// Runtime is the set of metrics the runtime records. Its methods take the label
// values as typed arguments, so callers cannot get the label arity wrong.
//
// Label values must have low cardinality: outcomes, provider names, tool
// names and context source names, never session IDs.
type Runtime struct {
	// SessionsActive counts activated (not passivated) Session actors.
	SessionsActive *Gauge
	// JournalAppend is the latency of one journal append transaction.
	JournalAppend *Histogram
	// JournalWaiting counts sessions whose drain a journal failure stopped
	// and that wait for the journal to accept writes again.
	JournalWaiting *Gauge

	drains             *CounterVec
	turns              *CounterVec
	toolCalls          *CounterVec
	contextObservation *HistogramVec
	sourcesUnavailable *CounterVec
	journalRetries     *CounterVec
}

// NewRuntime registers the runtime metrics in reg. It fails only if reg
// already holds one of the names.
func NewRuntime(reg *Registry) (*Runtime, error) {
	var rt Runtime
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	var err error
	rt.SessionsActive, err = reg.Gauge(NameSessionsActive, "Session actors currently active (activated and not passivated).")
	keep(err)
	rt.drains, err = reg.CounterVec(NameDrains, "Drains finished, by outcome (completed, interrupted, failed, ...).", "outcome")
	keep(err)
	rt.turns, err = reg.CounterVec(NameTurns, "Provider turns finished, by provider and finish reason.", "provider", "finish_reason")
	keep(err)
	rt.toolCalls, err = reg.CounterVec(NameToolCalls, "Tool calls settled, by tool and status (completed, error, interrupted, ...).", "tool", "status")
	keep(err)
	rt.JournalAppend, err = reg.Histogram(NameJournalAppend, "Latency of journal append transactions in seconds.", LatencyBuckets())
	keep(err)
	rt.contextObservation, err = reg.HistogramVec(NameContextObservation, "Latency of observing one context source in seconds, by source.", LatencyBuckets(), "source")
	keep(err)
	rt.sourcesUnavailable, err = reg.CounterVec(NameSourcesUnavailable, "Context source observations that found the source unavailable, by source.", "source")
	keep(err)
	rt.JournalWaiting, err = reg.Gauge(NameJournalWaiting, "Sessions whose drain a journal write failure stopped, waiting for the journal to accept writes again.")
	keep(err)
	rt.journalRetries, err = reg.CounterVec(NameJournalRetries, "Attempts to resume a session after a journal write failure, by result (failed: the journal still refused; resumed).", "result")
	keep(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &rt, nil
}

// DrainFinished counts one finished drain.
func (r *Runtime) DrainFinished(outcome string) { mustChild(r.drains.With(outcome)).Inc() }

// TurnFinished counts one finished provider turn.
func (r *Runtime) TurnFinished(provider, finishReason string) {
	mustChild(r.turns.With(provider, finishReason)).Inc()
}

// ToolCallFinished counts one settled tool call.
func (r *Runtime) ToolCallFinished(tool, status string) {
	mustChild(r.toolCalls.With(tool, status)).Inc()
}

// JournalAppended records the latency of one journal append.
func (r *Runtime) JournalAppended(d time.Duration) { r.JournalAppend.ObserveDuration(d) }

// ContextObserved records how long observing one context source took.
func (r *Runtime) ContextObserved(source string, d time.Duration) {
	mustChild(r.contextObservation.With(source)).ObserveDuration(d)
}

// SourceUnavailable counts one observation that found a context source unavailable.
func (r *Runtime) SourceUnavailable(source string) {
	mustChild(r.sourcesUnavailable.With(source)).Inc()
}

// JournalRetried counts one attempt to resume a session after a journal
// failure: result is "failed" or "resumed".
func (r *Runtime) JournalRetried(result string) { mustChild(r.journalRetries.With(result)).Inc() }

// mustChild unwraps With for the typed methods above, whose arity is fixed
// by construction, so the error cannot happen.
func mustChild[T any](m *T, err error) *T {
	if err != nil {
		panic("metrics: internal label arity mismatch: " + err.Error())
	}
	return m
}
