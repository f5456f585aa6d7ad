// Package api benchmarks the HTTP API against the runtime it fronts: prompt
// admission over HTTP next to the same admission through actors.Sessions
// directly (the peer, measured in the same run), replay throughput of the
// durable SSE stream, and a message page read. Run:
//
//	go test -run '^$' -bench . ./bench/api/
package api
