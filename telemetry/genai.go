package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the spans this package starts.
const ScopeName = "github.com/sessionrt/sessionrt"

// GenAI operation names, which are also the first word of each span name.
const (
	OperationInvokeAgent = "invoke_agent" // one span per drain
	OperationChat        = "chat"         // one span per provider turn: "chat {model}"
	OperationExecuteTool = "execute_tool" // one span per tool call: "execute_tool {tool}"
)

// Attribute keys of the OpenTelemetry GenAI semantic conventions (semconv
// v1.41.0) that sessionrt records.
const (
	KeyOperationName         = semconv.GenAIOperationNameKey         // gen_ai.operation.name
	KeyConversationID        = semconv.GenAIConversationIDKey        // gen_ai.conversation.id = session ID
	KeyAgentName             = semconv.GenAIAgentNameKey             // gen_ai.agent.name
	KeyProviderName          = semconv.GenAIProviderNameKey          // gen_ai.provider.name
	KeyRequestModel          = semconv.GenAIRequestModelKey          // gen_ai.request.model
	KeyResponseModel         = semconv.GenAIResponseModelKey         // gen_ai.response.model
	KeyResponseID            = semconv.GenAIResponseIDKey            // gen_ai.response.id
	KeyResponseFinishReasons = semconv.GenAIResponseFinishReasonsKey // gen_ai.response.finish_reasons
	KeyUsageInputTokens      = semconv.GenAIUsageInputTokensKey      // gen_ai.usage.input_tokens
	KeyUsageOutputTokens     = semconv.GenAIUsageOutputTokensKey     // gen_ai.usage.output_tokens
	KeyToolName              = semconv.GenAIToolNameKey              // gen_ai.tool.name
	KeyToolCallID            = semconv.GenAIToolCallIDKey            // gen_ai.tool.call.id
	KeyToolType              = semconv.GenAIToolTypeKey              // gen_ai.tool.type
	KeyErrorType             = semconv.ErrorTypeKey                  // error.type
)

// Tracer starts sessionrt's GenAI spans. The zero value is not usable; a nil
// *Tracer is, and records nothing.
type Tracer struct{ t trace.Tracer }

// NewTracer returns a Tracer on tp; nil tp gives a Tracer that records nothing.
func NewTracer(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return &Tracer{t: tp.Tracer(ScopeName)}
}

func (t *Tracer) tracer() trace.Tracer {
	if t == nil || t.t == nil {
		return noop.NewTracerProvider().Tracer(ScopeName)
	}
	return t.t
}

// Agent describes one drain of a session.
type Agent struct {
	SessionID    string // gen_ai.conversation.id
	AgentName    string // gen_ai.agent.name, e.g. "build"
	ProviderName string // gen_ai.provider.name, e.g. "openai", "anthropic"
	Model        string // gen_ai.request.model
}

// StartInvokeAgent starts the span of one drain, named "invoke_agent".
func (t *Tracer) StartInvokeAgent(ctx context.Context, a Agent) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{KeyOperationName.String(OperationInvokeAgent)}
	attrs = appendNonEmpty(attrs, KeyConversationID, a.SessionID)
	attrs = appendNonEmpty(attrs, KeyAgentName, a.AgentName)
	attrs = appendNonEmpty(attrs, KeyProviderName, a.ProviderName)
	attrs = appendNonEmpty(attrs, KeyRequestModel, a.Model)
	return t.tracer().Start(ctx, OperationInvokeAgent,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// Chat describes one provider turn.
type Chat struct {
	SessionID    string
	AgentName    string
	ProviderName string
	Model        string // gen_ai.request.model; also the span name's second word
}

// ChatSpanName is "chat {model}", or "chat" without a model.
func ChatSpanName(model string) string {
	if model == "" {
		return OperationChat
	}
	return OperationChat + " " + model
}

// StartChat starts the span of one provider turn, named "chat {model}". It is
// a client span: the provider is a remote service.
func (t *Tracer) StartChat(ctx context.Context, c Chat) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{KeyOperationName.String(OperationChat)}
	attrs = appendNonEmpty(attrs, KeyConversationID, c.SessionID)
	attrs = appendNonEmpty(attrs, KeyAgentName, c.AgentName)
	attrs = appendNonEmpty(attrs, KeyProviderName, c.ProviderName)
	attrs = appendNonEmpty(attrs, KeyRequestModel, c.Model)
	return t.tracer().Start(ctx, ChatSpanName(c.Model),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// Tool describes one tool call.
type Tool struct {
	SessionID string
	AgentName string
	ToolName  string // gen_ai.tool.name; also the span name's second word
	CallID    string // gen_ai.tool.call.id
}

// ExecuteToolSpanName is "execute_tool {tool}", or "execute_tool" without a name.
func ExecuteToolSpanName(tool string) string {
	if tool == "" {
		return OperationExecuteTool
	}
	return OperationExecuteTool + " " + tool
}

// StartExecuteTool starts the span of one tool call, named "execute_tool {tool}".
func (t *Tracer) StartExecuteTool(ctx context.Context, c Tool) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{KeyOperationName.String(OperationExecuteTool), KeyToolType.String("function")}
	attrs = appendNonEmpty(attrs, KeyConversationID, c.SessionID)
	attrs = appendNonEmpty(attrs, KeyAgentName, c.AgentName)
	attrs = appendNonEmpty(attrs, KeyToolName, c.ToolName)
	attrs = appendNonEmpty(attrs, KeyToolCallID, c.CallID)
	return t.tracer().Start(ctx, ExecuteToolSpanName(c.ToolName),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// Usage is token usage as the provider reported it.
type Usage struct {
	InputTokens  int64 // gen_ai.usage.input_tokens
	OutputTokens int64 // gen_ai.usage.output_tokens
}

// ChatResult is what a provider turn ended with.
type ChatResult struct {
	Usage
	FinishReasons []string // gen_ai.response.finish_reasons, e.g. ["stop"], ["tool_calls"]
	ResponseModel string   // gen_ai.response.model, when the provider names it
	ResponseID    string   // gen_ai.response.id
}

// EndChat records a provider turn's result and ends its span; err non-nil
// marks the span failed (see End).
func EndChat(span trace.Span, r ChatResult, err error) {
	attrs := []attribute.KeyValue{
		KeyUsageInputTokens.Int64(r.InputTokens),
		KeyUsageOutputTokens.Int64(r.OutputTokens),
	}
	if len(r.FinishReasons) > 0 {
		attrs = append(attrs, KeyResponseFinishReasons.StringSlice(r.FinishReasons))
	}
	attrs = appendNonEmpty(attrs, KeyResponseModel, r.ResponseModel)
	attrs = appendNonEmpty(attrs, KeyResponseID, r.ResponseID)
	span.SetAttributes(attrs...)
	End(span, err)
}

// EndInvokeAgent records a drain's total usage and ends its span.
func EndInvokeAgent(span trace.Span, u Usage, err error) {
	span.SetAttributes(KeyUsageInputTokens.Int64(u.InputTokens), KeyUsageOutputTokens.Int64(u.OutputTokens))
	End(span, err)
}

// End ends a span. A non-nil err marks it failed: status Error with the
// message, an exception event, and error.type (see ErrorType).
func End(span trace.Span, err error) {
	if err != nil {
		span.SetAttributes(KeyErrorType.String(ErrorType(err)))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// ErrorType is the low-cardinality error.type of err: the value of an
// ErrorType() string method anywhere in its chain; "canceled" and "timeout"
// for context cancellation and deadlines; otherwise the error's Go type, as
// the semantic conventions suggest.
func ErrorType(err error) string {
	var typed interface{ ErrorType() string }
	switch {
	case err == nil:
		return ""
	case errors.As(err, &typed) && typed.ErrorType() != "":
		return typed.ErrorType()
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return semconv.ErrorType(err).Value.AsString()
}

func appendNonEmpty(attrs []attribute.KeyValue, k attribute.Key, v string) []attribute.KeyValue {
	if v == "" {
		return attrs
	}
	return append(attrs, k.String(v))
}
