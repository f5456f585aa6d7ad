package api

import (
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sessionrt/sessionrt/telemetry"
)

// observe wraps one request: it joins the caller's trace when the request
// carries a W3C traceparent (a server span, child of the caller's, so the
// caller's trace shows the request; its context reaches the handler), and
// records http.server.request.duration by route template and status, with
// the trace as exemplar. Requests without a traceparent start no span: the
// server traces its sessions' drains, not every poll.
func (s *Server) observe(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request)) {
	tel := s.cfg.Telemetry
	if tel == nil {
		serve(w, r)
		return
	}
	start := time.Now()
	ctx := r.Context()
	var span trace.Span
	if r.Header.Get(telemetry.HeaderTraceparent) != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
		if trace.SpanContextFromContext(ctx).IsValid() && tel.TracerProvider != nil {
			ctx, span = tel.TracerProvider.Tracer(telemetry.ScopeName).Start(ctx, r.Method,
				trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path)))
		}
		r = r.WithContext(ctx)
	}
	sw := &statusWriter{ResponseWriter: w}
	serve(sw, r)
	status := sw.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	// r.Pattern is the ServeMux pattern that matched ("POST /api/session/{sessionID}/prompt"):
	// its path is the route template; a refused request has none.
	route := r.Pattern
	if _, path, ok := strings.Cut(route, " "); ok {
		route = path
	}
	if span != nil {
		name := r.Method
		if route != "" {
			name += " " + route
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		span.SetName(name)
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if id := r.PathValue("sessionID"); id != "" {
			// Stored with the session's spans: `sessionrt trace show` lists it.
			span.SetAttributes(telemetry.KeyConversationID.String(id))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
	}
	if m := tel.Metrics; m != nil {
		m.HTTPServed(ctx, r.Method, route, status, time.Since(start))
	}
}

// statusWriter remembers the status a handler wrote. Unwrap lets
// http.ResponseController reach the connection (flushes of event streams,
// deadlines, a terminal's hijack).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush serves handlers that assert http.Flusher rather than use a
// ResponseController.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
