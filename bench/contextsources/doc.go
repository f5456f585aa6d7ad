// Package contextsources holds the benchmarks of the System Context: a safe
// provider-turn boundary (observe + reconcile) with nothing changed, for ten in-memory
// sources and for the AGENTS.md aggregate over a real 20-directory tree. Targets (issue
// 4): ≤ 50 µs and ≤ 1 ms per boundary. It holds no production code.
package contextsources
