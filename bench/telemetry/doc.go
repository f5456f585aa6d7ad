// Package telemetry holds the benchmarks of the telemetry packages: span store
// writes and reads (per backend), GenAI span overhead, trace-context
// propagation, metrics updates and exposition, and tree rendering.
//
//	go test -run '^$' -bench . -benchmem ./bench/telemetry/
package telemetry
