// Package journal benchmarks the journal (persistence) on both backends in
// one run: the embedded engine (boltsql, with fsync) and MariaDB (via
// internal/testdb). Run:
//
//	go test -run '^$' -bench . -benchtime 2000x ./bench/journal/
//
// Metrics: events/s for appends (1 session, 100 concurrent sessions; batch=1
// is one event per append, batch=8 a provider turn's events in one append),
// decoded events/s for replay, and commit→tailer latency percentiles;
// cpu-us/append (process CPU per append) is the steadier figure on a shared
// machine; txn/commit and commit-ms (embedded) show the group commit: no
// write transaction runs while a commit's fsync does. BenchmarkHistory is an owner's per-turn history cost: ModelHistory
// against a kept persistence.History.
package journal
