// Package metrics is a small, dependency-free metrics registry that writes the
// Prometheus text exposition format (version 0.0.4) by hand.
//
// It owns counters, gauges and histograms with fixed buckets (each optionally
// split by a fixed list of label names), a Registry that renders them in a stable
// order, an http.Handler for /metrics, and Runtime: the named metrics the
// sessionrt server records (sessions active, drains, turns, tool calls, journal
// append latency, context observation latency, unavailable context sources).
//
// It must not keep global state (there is no default registry: callers create
// one and pass it around) and must not open a port: the server mounts Handler
// wherever it serves HTTP.
//
//	reg := metrics.NewRegistry()
//	rt := metrics.NewRuntime(reg)
//	rt.Turns.Inc()
//	mux.Handle("/metrics", reg.Handler())
package metrics
