package telemetry

// extraBackends are further databases the store benchmarks run on.
var extraBackends []backend
