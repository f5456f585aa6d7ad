// Package engine benchmarks the embedded SQL engine (persistence/boltsql)
// beside its peers measured in the same run: go-mysql-server's memory
// backend and SQLite (modernc.org/sqlite, WAL, synchronous=FULL), on the
// journal's workload: point lookups and 100-row range reads by primary key
// at 1k and 1M rows, durable autocommit inserts with 1 and 64 writers,
// 3-statement transactions, and journal-style appends from 100 sessions.
//
//	go test -run '^$' -bench . -benchtime 2000x ./bench/engine/
//
// It holds no code used elsewhere.
package engine
