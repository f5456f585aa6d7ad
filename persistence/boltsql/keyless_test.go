package boltsql

import (
	"fmt"
	"testing"
)

// A table without a primary key stores rows under hidden row ids: equal
// rows may repeat, UPDATE and DELETE change as many rows as they match,
// secondary indexes (unique ones too) work, and it all survives ALTER TABLE
// and a reopen. Before, CREATE TABLE was refused ("tables without a
// PRIMARY KEY").
func TestTablesWithoutAPrimaryKey(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE k (a INT, b VARCHAR(10), INDEX ib (b))")
	mustExec(t, e.DB(), "INSERT INTO k VALUES (1, 'x'), (1, 'x'), (2, 'y'), (NULL, NULL)")
	mustExec(t, e.DB(), "INSERT INTO k VALUES (?, ?)", 3, "z")
	rows := func(e *Engine) string {
		return fmt.Sprint(queryStrings(t, e.DB(), "SELECT CONCAT(IFNULL(a, '-'), IFNULL(b, '-')) FROM k ORDER BY a, b"))
	}
	if got := rows(e); got != "[-- 1x 1x 2y 3z]" {
		t.Fatalf("rows %s", got)
	}
	if n := mustExec(t, e.DB(), "UPDATE k SET a = 5 WHERE b = 'x'"); affected(n) != 2 {
		t.Errorf("UPDATE of two equal rows changed %d", affected(n))
	}
	if n := mustExec(t, e.DB(), "DELETE FROM k WHERE a = 5 LIMIT 1"); affected(n) != 1 {
		t.Errorf("DELETE … LIMIT 1 of two equal rows deleted %d", affected(n))
	}
	if got := rows(e); got != "[-- 2y 3z 5x]" {
		t.Errorf("after UPDATE and DELETE: %s", got)
	}
	if got := fmt.Sprint(queryStrings(t, e.DB(), "SELECT a FROM k WHERE b = 'y'")); got != "[2]" {
		t.Errorf("index lookup: %s", got)
	}
	mustExec(t, e.DB(), "CREATE UNIQUE INDEX ua ON k (a)")
	if _, err := e.DB().Exec("INSERT INTO k VALUES (2, 'again')"); mysqlCode(err) != 1062 {
		t.Errorf("duplicate in a unique index: %v, want 1062", err)
	}
	mustExec(t, e.DB(), "ALTER TABLE k ADD COLUMN c INT NOT NULL DEFAULT 0")
	mustExec(t, e.DB(), "INSERT INTO k VALUES (7, 'w', 1)")
	e = reopen(t, e, dir)
	if got := rows(e); got != "[-- 2y 3z 5x 7w]" {
		t.Errorf("after ALTER and reopen: %s", got)
	}
	mustExec(t, e.DB(), "INSERT INTO k VALUES (8, 'v', 2)") // hidden ids go on after a reopen
	if got := queryInt(t, e.DB(), "SELECT COUNT(*) FROM k"); got != 6 {
		t.Errorf("count %d, want 6", got)
	}
}

func affected(r interface{ RowsAffected() (int64, error) }) int64 {
	n, _ := r.RowsAffected()
	return n
}
