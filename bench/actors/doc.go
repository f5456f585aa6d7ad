// Package actors benchmarks the Session actor runtime in process (issue 7):
// a whole node (embedded journal, Location supervisors, tool actors) driven
// through actors.Sessions with the scripted provider answering instantly.
// Each turn is one prompt answered in two provider turns around one real
// bash `echo hi` tool call.
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/actors/
//
// Figures: BenchmarkTurnLatency reports p50/p90/p99 of prompt-to-idle;
// both it and BenchmarkConcurrentSessions report cpu-ms/turn, the
// process CPU per turn (steadier than wall time on a shared machine);
// BenchmarkConcurrentSessions reports turns/s for 1,000 sessions × 10
// turns; BenchmarkIdleSessions reports the heap that 10,000 passivated
// sessions keep. It holds no code used elsewhere.
package actors
