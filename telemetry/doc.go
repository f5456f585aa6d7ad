// Package telemetry sets up OpenTelemetry tracing for sessionrt and names what
// it records.
//
// It owns:
//   - Setup: a TracerProvider (not installed globally; the caller may) with an
//     OTLP/HTTP exporter when the standard OTEL_EXPORTER_OTLP_* variables say
//     where to send, and the span store (package spanstore) when given a
//     database, so `sessionrt trace show` works with no tracing backend;
//   - the GenAI semantic-convention span names and attributes: invoke_agent
//     (one per drain), chat {model} (one per provider turn), execute_tool
//     {tool} (one per tool call), with gen_ai.conversation.id = session ID;
//   - trace context across actor messages: Inject and Extract a W3C
//     traceparent in a map[string]string of message headers;
//   - metrics (package metrics: the OpenTelemetry SDK, exposed at /metrics
//     and, with the same OTEL_EXPORTER_OTLP_* variables, over OTLP/HTTP).
//
// It imports nothing of sessionrt's, keeps no package-level mutable state and
// opens no port.
//
//	tel, err := telemetry.Setup(ctx, telemetry.Config{DB: db})
//	defer tel.Shutdown(ctx)
//	tr := telemetry.NewTracer(tel.TracerProvider)
//	ctx, span := tr.StartInvokeAgent(ctx, telemetry.Agent{SessionID: id, AgentName: "build"})
//	defer func() { telemetry.End(span, err) }()
package telemetry
