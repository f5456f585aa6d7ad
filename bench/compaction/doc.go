// Package compaction benchmarks the compaction package: the token estimate of
// a complete 200k-token request (budget: 5 ms, run before every provider
// turn) and planning a compaction of a long history.
package compaction
