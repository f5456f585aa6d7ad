package boltsql

import (
	"context"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Tables report their committed row count (information_schema.tables,
// SHOW TABLE STATUS, the planner's costs): it follows inserts, deletes,
// statement and transaction rollbacks, ALTER rewrites, TRUNCATE and DROP,
// survives a reopen, and a file written before counts existed is counted
// once at open. After ANALYZE TABLE a self-join on an indexed text column
// plans and runs. Before, every table said 0 rows and that join divided by
// zero inside go-mysql-server.
func TestRowCount(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	count := func(want int64, when string) {
		t.Helper()
		if n := queryInt(t, e.DB(), "SELECT table_rows FROM information_schema.tables WHERE table_name = 's'"); n != want {
			t.Errorf("%s: table_rows %d, want %d", when, n, want)
		}
	}
	mustExec(t, e.DB(), "CREATE TABLE s (id BIGINT PRIMARY KEY, name VARCHAR(20), KEY by_name (name))")
	count(0, "created")
	mustExec(t, e.DB(), "INSERT INTO s VALUES (1, 'a'), (2, 'b'), (3, 'a')")
	mustExec(t, e.DB(), "INSERT INTO s VALUES (?, ?)", 4, "c") // the fast path
	count(4, "inserted")
	if _, err := e.DB().Exec("INSERT INTO s VALUES (5, 'd'), (1, 'dup')"); err == nil {
		t.Fatal("duplicate key inserted")
	}
	count(4, "a failed statement")
	tx, err := e.DB().BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, tx, "INSERT INTO s VALUES (6, 'e')")
	mustExec(t, tx, "DELETE FROM s WHERE id = 6")
	mustExec(t, tx, "DELETE FROM s WHERE id = 4")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	count(4, "a rolled-back transaction")
	mustExec(t, e.DB(), "DELETE FROM s WHERE id = 4")
	mustExec(t, e.DB(), "UPDATE s SET name = 'z' WHERE id = 3")
	count(3, "deleted one")
	e = reopen(t, e, dir)
	count(3, "reopened")
	mustExec(t, e.DB(), "ALTER TABLE s ADD COLUMN extra INT")
	count(3, "rewritten by ALTER")

	mustExec(t, e.DB(), "ANALYZE TABLE s")
	if n := queryInt(t, e.DB(), "SELECT COUNT(*) FROM s a JOIN s b ON a.name = b.name"); n != 3 {
		t.Errorf("self-join after ANALYZE: %d rows, want 3", n)
	}

	// A file from before the counts: the bucket is missing.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketRowCount) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	e = reopen(t, openAt(t, dir), dir)
	count(3, "counted at open")
	mustExec(t, e.DB(), "TRUNCATE TABLE s")
	count(0, "truncated")
	mustExec(t, e.DB(), "DROP TABLE s")
	mustExec(t, e.DB(), "CREATE TABLE s (id BIGINT PRIMARY KEY)")
	count(0, "dropped and created again")
}

func openAt(t *testing.T, dir string) *Engine {
	t.Helper()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
