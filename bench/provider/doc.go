// Package provider holds the benchmarks of the provider adapters: SSE
// stream decoding throughput (a 10,000-chunk stream, target ≥ 50 MB/s) and
// per-turn adapter overhead beyond the network (target ≤ 100 µs), measured
// with an in-memory HTTP transport so that only our code and net/http's
// client machinery are timed. It holds no production code.
package provider
