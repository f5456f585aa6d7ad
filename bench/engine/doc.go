// Package engine benchmarks the embedded SQL engine (persistence/boltsql)
// beside its peers measured in the same run: go-mysql-server's memory
// backend and SQLite (modernc.org/sqlite, WAL, synchronous=FULL), on the
// journal's workload: point lookups and 100-row range reads by primary key
// at 1k and 1M rows, durable autocommit inserts with 1 and 64 writers,
// 3-statement transactions, and journal-style appends from 100 sessions.
//
//	go test -run '^$' -bench . -benchtime 2000x ./bench/engine/
//
// Durable write rates follow the disk's fsync latency, which on a shared
// machine moves several-fold from run to run: read them beside boltsql's
// µs/commit metric (a bbolt commit is two fdatasyncs; the 1-writer figure is
// ~250 µs on a quiet disk and 1-2 ms on a busy one, and the 64-writer rate
// falls with it). BENCH_NOSYNC=1 removes fsync to show CPU cost alone.
//
// It holds no code used elsewhere.
package engine
