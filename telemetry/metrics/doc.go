// Package metrics records sessionrt's metrics through the OpenTelemetry
// metrics SDK and exposes them two ways: Prometheus's exposition at
// Registry.Handler (text or OpenMetrics with exemplars; plus the Go runtime
// and process collectors of prometheus/client_golang: go_*, process_*) and,
// when the standard OTEL_EXPORTER_OTLP_* variables name an endpoint,
// OTLP/HTTP (plus OpenTelemetry's Go runtime instruments, go.*).
//
// The OpenTelemetry SDK was chosen over client_golang by measurement
// (bench/telemetry BenchmarkMetricsLibraryPerTurn): one turn's records cost
// tens of microseconds either way, well under 1% of a turn's server CPU,
// and only the SDK gives both outputs from one instrumentation.
//
// It owns Registry (the MeterProvider and its readers) and Runtime: the
// named instruments the server records (sessions, drains, turns, tool calls
// and their duration, journal appends, context observation, HTTP requests
// by route template, GenAI operations by provider and model). Components
// with instruments of their own (the cluster, the journal engine's
// counters) create them on Runtime.Meter or Registry.Meter.
//
// It keeps no global state (no otel.SetMeterProvider, no default registry)
// and opens no port: the server mounts Handler wherever it serves HTTP.
//
//	reg, err := metrics.Open(ctx, metrics.Config{Resource: res})
//	rt, err := metrics.NewRuntime(reg)
//	rt.DrainFinished("completed")
//	mux.Handle("GET /metrics", reg.Handler())
//	defer reg.Shutdown(ctx)
package metrics
