package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// Header names of the W3C Trace Context, as they appear in message headers.
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// Inject returns the W3C trace context of ctx's span as message headers
// ("traceparent" and, when set, "tracestate"). It returns an empty map when
// ctx carries no valid span context, so the receiver starts a new trace.
func Inject(ctx context.Context) map[string]string {
	h := make(map[string]string, 2)
	InjectInto(ctx, h)
	return h
}

// InjectInto adds the W3C trace context of ctx to existing headers, replacing
// any trace context they held. headers must not be nil.
func InjectInto(ctx context.Context, headers map[string]string) {
	delete(headers, HeaderTraceparent)
	delete(headers, HeaderTracestate)
	propagation.TraceContext{}.Inject(ctx, propagation.MapCarrier(headers))
}

// Extract returns ctx carrying the remote span context found in headers, so
// that spans started from it are children of the sender's span. Missing or
// malformed trace headers leave ctx as it was (the spec says to start a new
// trace rather than fail). A nil map is fine.
func Extract(ctx context.Context, headers map[string]string) context.Context {
	if len(headers) == 0 {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier(headers))
}

// HeaderGetter is read-only message headers, such as protoactor's
// actor.ReadonlyMessageHeader (ctx.MessageHeader()).
type HeaderGetter interface {
	Get(key string) string
}

// ExtractHeaders is Extract for read-only headers, without copying them into
// a map. A nil getter leaves ctx as it was.
func ExtractHeaders(ctx context.Context, h HeaderGetter) context.Context {
	if h == nil {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, getterCarrier{h})
}

// getterCarrier adapts a HeaderGetter to the propagation carrier; extraction
// only reads.
type getterCarrier struct{ h HeaderGetter }

func (c getterCarrier) Get(key string) string { return c.h.Get(key) }
func (getterCarrier) Set(string, string)      {}
func (getterCarrier) Keys() []string          { return nil }

// TraceParent is the "traceparent" value of ctx's span context, empty when
// ctx carries no valid one: the trace context of a command that crosses a
// mailbox (or a member) in one of its fields.
func TraceParent(ctx context.Context) string {
	h := make(propagation.MapCarrier, 2)
	propagation.TraceContext{}.Inject(ctx, h)
	return h[HeaderTraceparent]
}

// WithTraceParent returns ctx carrying the remote span context of a
// "traceparent" value; an empty or malformed one leaves ctx as it was.
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return Extract(ctx, map[string]string{HeaderTraceparent: traceparent})
}
