// Package cluster benchmarks sessionrt as a cluster (issue 10): member
// processes (cluster/internal/chaosmember, built without -race by
// clustertest.BuildMember) on one MariaDB journal (internal/testdb),
// driven through their control APIs, with the scripted provider answering
// a "plain" prompt at once, so a turn
// is admit + drain + WaitIdle and the figures are the runtime's own cost.
//
//	go test -run '^$' -bench . -benchtime 100x ./bench/cluster/
//
// BenchmarkTurnLatency compares one session's sequential turns on a
// 1-member cluster (single node) with a 3-member cluster entered through
// the grain's host (local grain) and through another member (one
// cross-member hop per command): ms/turn each, and the cross-member
// overhead. BenchmarkToolTurnLatency runs a bash tool per turn with the
// session's Location held by the grain's member or by another one (the
// call, its permission check and its settlement cross members). BenchmarkThroughput reports turns/s of 24 sessions driven
// concurrently through every member, for 1 and 3 members (on a shared
// 2-core machine more members add no CPU: the figure shows the
// coordination cost, not scale-out). It holds no code used elsewhere.
package cluster
