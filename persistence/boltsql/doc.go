// Package boltsql is the embedded, durable SQL engine of the journal:
// go-mysql-server (v0.20.0) with a storage backend on one bbolt file.
//
// Start with Open, then use DB() (database/sql, in process) or Serve (MySQL
// wire protocol). The package owns the on-disk layout, the key and row
// encodings, the catalog and transactions. It knows nothing about the
// journal's tables: those are ordinary SQL issued by package persistence.
//
//	eng, err := boltsql.Open(dir, boltsql.Options{})
//	defer eng.Close()
//	tx, _ := eng.DB().BeginTx(ctx, nil) // serializable: takes the writer at its first statement
//
// Layout: a meta bucket (magic, format version), the catalog (databases and
// table definitions as JSON), one bucket of rows per table keyed by the
// order-preserving encoding of the primary key, and one bucket per secondary
// index keyed by index columns + primary key. Index lookups become byte-range
// scans (keys.go); rows are tagged values that read back as the Go types the
// engine wrote (values.go).
//
// Transactions (txn.go, writer.go): autocommit reads run on bbolt read
// snapshots and never block writers. A write, or the first table access of
// an explicit read-write transaction, takes the single writer turn, so
// write transactions are serializable. Turns share bbolt write transactions
// (group commit): a COMMIT returns only after the fsync that made it durable.
//
// Plain INSERTs skip go-mysql-server's planner (fastinsert.go): an
// in-process `INSERT INTO t [(every column)] VALUES (...), ...` of bind
// parameters and literals, into a table without AUTO_INCREMENT, outside
// READ ONLY transactions, runs the engine's own insert steps directly (a
// differential test holds it to the engine's results and errors). Anything
// else, and every statement from the wire server, goes through the engine.
// Point UPDATEs likewise (fastupdate.go): `UPDATE t SET col = v, ... WHERE
// <every primary-key column> = v [AND col <op> v ...]` reads the one row by
// key, filters, assigns and counts rows matched/changed with the engine's
// own expressions and steps; other shapes, and key values whose seek could
// disagree with the engine's comparison, go through the engine. Point
// SELECTs of plain columns (or `*`) with the same WHERE shape likewise
// (fastselect.go): one key read through the statement's transaction (so a
// transaction sees its own writes), the filter, the stored values; FOR
// UPDATE, expressions and aliases go through the engine. Primary-key range
// SELECTs likewise (fastrange.go): equality on a key prefix, optional
// bounds on the next (integer) key column, ORDER BY the key's trailing
// columns ascending, optional LIMIT n|?: a bbolt cursor over the span in key
// order, each row checked with the engine's comparisons, stopping at LIMIT;
// DESC, OFFSET and other orders go through the engine.
// The driver runs START TRANSACTION / BEGIN / COMMIT / ROLLBACK itself
// (txstmt.go), with the engine's steps for them.
//
// Query shapes that stay fast (the engine reads only the keys in range):
// equality on a key prefix plus a range on the next key column; ORDER BY the
// full key prefix (`ORDER BY session_id, seq`, or both DESC), never a suffix
// alone, which adds a Sort; the latest row as `ORDER BY session_id DESC,
// seq DESC LIMIT 1` rather than MAX(seq), which reads the whole prefix.
// Several rows in one multi-row INSERT cost far less than one INSERT each.
// Close every *sql.Rows before writing from the same goroutine: an open
// result set holds a read snapshot, and a commit that must grow the memory
// map (past Options.InitialMmapSize, 8 GiB by default) waits for all
// snapshots to end.
//
// It must not: overwrite on a duplicate key (that is error 1062), keep bbolt
// memory past its transaction, or hold a read transaction while waiting for
// the writer (bbolt can deadlock on a remap).
package boltsql
