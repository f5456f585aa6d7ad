package boltsql

import (
	"strings"
	"testing"
)

// Stored and virtual generated columns are computed by the engine on
// INSERT and UPDATE (the fast paths step aside), found through an index on
// a virtual column, kept across a reopen, and computed for the existing
// rows when ALTER TABLE adds one; a statement that fails leaves nothing.
// Before, CREATE TABLE refused generated columns.
func TestGeneratedColumnsArePersistent(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	db := e.DB()
	mustExec(t, db, "CREATE TABLE g (id BIGINT PRIMARY KEY, a INT, s INT AS (a * 2) STORED, v INT AS (a + 1) VIRTUAL, KEY by_v (v))")
	mustExec(t, db, "INSERT INTO g (id, a) VALUES (1, 1), (2, 5)")
	mustExec(t, db, "UPDATE g SET a = 10 WHERE id = 1")
	row := func(e *Engine, q string) string {
		t.Helper()
		return strings.Join(queryStrings(t, e.DB(), q), ",")
	}
	if got := row(e, "SELECT CONCAT(id, ':', a, ':', s, ':', v) FROM g ORDER BY id"); got != "1:10:20:11,2:5:10:6" {
		t.Fatalf("rows: %s", got)
	}
	// A value for a generated column is refused (the insert fast path,
	// which takes INSERTs naming every column, leaves them to the engine).
	if _, err := db.Exec("INSERT INTO g VALUES (3, 1, 2, 2)"); err == nil {
		t.Error("a value for a generated column was accepted")
	}
	// A failing multi-row INSERT (duplicate key) leaves no row behind.
	if _, err := db.Exec("INSERT INTO g (id, a) VALUES (3, 1), (1, 2)"); err == nil {
		t.Fatal("duplicate key accepted")
	}
	e = reopen(t, e, dir)
	if got := row(e, "SELECT id FROM g WHERE v = 11"); got != "1" {
		t.Errorf("by the virtual column's index after a reopen: %q", got)
	}
	if got := queryInt(t, e.DB(), "SELECT COUNT(*) FROM g"); got != 2 {
		t.Errorf("%d rows after the failed INSERT", got)
	}
	ddl := showCreate(t, e, "g")
	// go-mysql-server prints a virtual column without VIRTUAL, and no
	// index of a table with one, as it does on its memory engine.
	if !strings.Contains(ddl, "`s` int GENERATED ALWAYS AS ((`a` * 2)) STORED,") || !strings.Contains(ddl, "`v` int GENERATED ALWAYS AS ((`a` + 1)),") {
		t.Errorf("SHOW CREATE TABLE:\n%s", ddl)
	}
	if got := row(e, "SELECT index_name FROM information_schema.statistics WHERE table_name = 'g' ORDER BY 1"); got != "by_v,PRIMARY" {
		t.Errorf("indexes: %s", got)
	}
	// ADD COLUMN computes the new column for the rows there; one that
	// does not fit fails the ALTER and leaves the table as it was.
	if _, err := e.DB().Exec("ALTER TABLE g ADD COLUMN t TINYINT AS (a * 100) STORED"); err == nil {
		t.Error("an out-of-range generated column was added")
	}
	mustExec(t, e.DB(), "ALTER TABLE g ADD COLUMN w INT AS (a + s) VIRTUAL FIRST")
	mustExec(t, e.DB(), "ALTER TABLE g ADD COLUMN x INT AS (s - 1) STORED AFTER a")
	mustExec(t, e.DB(), "CREATE INDEX by_w ON g (w)")
	e = reopen(t, e, dir)
	if got := row(e, "SELECT CONCAT(w, ':', id, ':', a, ':', x) FROM g ORDER BY id"); got != "30:1:10:19,15:2:5:9" {
		t.Errorf("added columns: %s", got)
	}
	if got := row(e, "SELECT id FROM g WHERE w = 15"); got != "2" {
		t.Errorf("by the added virtual column's index: %q", got)
	}

	// A table without a primary key finds a row to change by its stored
	// bytes, virtual value included.
	mustExec(t, e.DB(), "CREATE TABLE k (a INT, v INT AS (a * 3) VIRTUAL)")
	mustExec(t, e.DB(), "INSERT INTO k (a) VALUES (1), (2), (2)")
	mustExec(t, e.DB(), "UPDATE k SET a = 4 WHERE a = 1")
	mustExec(t, e.DB(), "DELETE FROM k WHERE v = 6 LIMIT 1")
	if got := row(e, "SELECT CONCAT(a, ':', v) FROM k ORDER BY a"); got != "2:6,4:12" {
		t.Errorf("keyless rows: %s", got)
	}
}
