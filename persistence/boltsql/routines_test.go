package boltsql

import (
	"fmt"
	"testing"
)

// Triggers and stored procedures are kept in the database and run by the
// engine, also for the statements the fast paths would take, and after a
// reopen; DROP removes them for good. Before, CREATE TRIGGER and CREATE
// PROCEDURE were refused.
func TestTriggersAndProceduresArePersistent(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE src (id BIGINT PRIMARY KEY, n INT)")
	mustExec(t, e.DB(), "CREATE TABLE audit (id BIGINT PRIMARY KEY, what VARCHAR(20))")
	mustExec(t, e.DB(), "CREATE TRIGGER src_ins AFTER INSERT ON src FOR EACH ROW INSERT INTO audit VALUES (new.id, CONCAT('ins ', new.n))")
	mustExec(t, e.DB(), "CREATE TRIGGER src_upd AFTER UPDATE ON src FOR EACH ROW INSERT INTO audit VALUES (new.id + 100, CONCAT('upd ', new.n))")
	mustExec(t, e.DB(), "CREATE PROCEDURE add_src(i BIGINT, v INT) BEGIN INSERT INTO src VALUES (i, v); END")
	e = reopen(t, e, dir)
	mustExec(t, e.DB(), "INSERT INTO src VALUES (?, ?)", 1, 10) // a fast-path shape
	mustExec(t, e.DB(), "UPDATE src SET n = ? WHERE id = ?", 11, 1)
	mustExec(t, e.DB(), "CALL add_src(2, 20)")
	if got := fmt.Sprint(queryStrings(t, e.DB(), "SELECT CONCAT(id, ' ', what) FROM audit ORDER BY id")); got != "[1 ins 10 2 ins 20 101 upd 11]" {
		t.Errorf("audit rows %s", got)
	}
	mustExec(t, e.DB(), "DROP TRIGGER src_ins")
	mustExec(t, e.DB(), "DROP TRIGGER src_upd")
	mustExec(t, e.DB(), "DROP PROCEDURE add_src")
	e = reopen(t, e, dir)
	mustExec(t, e.DB(), "INSERT INTO src VALUES (?, ?)", 3, 30)
	if got := queryInt(t, e.DB(), "SELECT COUNT(*) FROM audit"); got != 3 {
		t.Errorf("a dropped trigger ran: %d audit rows", got)
	}
	if _, err := e.DB().Exec("CALL add_src(4, 40)"); err == nil {
		t.Error("the dropped procedure ran")
	}
	if n := e.triggers.Load(); n != 0 {
		t.Errorf("%d triggers counted after dropping all", n)
	}
}

// A trigger may call a procedure: its statements run inside the statement
// that fired the trigger (one transaction), and when one of them fails the
// whole statement is undone. Before, each of the procedure's statements
// started a transaction, which rolled back the running one: "transaction
// already ended".
func TestTriggerCallingAProcedureRunsInTheStatement(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE t (i INT PRIMARY KEY)",
		"CREATE TABLE src (k INT)", "INSERT INTO src VALUES (1), (2)",
		"CREATE TABLE n (l INT)", "INSERT INTO n VALUES (1)",
		"CREATE TABLE log (m INT PRIMARY KEY)",
		"CREATE PROCEDURE p(x INT) BEGIN DELETE FROM src WHERE k = x; UPDATE n SET l = l + 10; INSERT INTO log VALUES (x); END",
		"CREATE TRIGGER trig BEFORE INSERT ON t FOR EACH ROW BEGIN CALL p(new.i); END",
		"INSERT INTO t VALUES (1)",
	} {
		mustExec(t, e.DB(), q)
	}
	state := func(e *Engine) string {
		t.Helper()
		return fmt.Sprint(queryStrings(t, e.DB(), "SELECT CONCAT('t', i) FROM t UNION ALL SELECT CONCAT('src', k) FROM src UNION ALL SELECT CONCAT('n', l) FROM n UNION ALL SELECT CONCAT('log', m) FROM log"))
	}
	e = reopen(t, e, dir)
	if got := state(e); got != "[t1 src2 n11 log1]" {
		t.Fatalf("after the trigger: %s", got)
	}
	// Row 2 runs the procedure; row 1 runs it again, and its INSERT INTO
	// log repeats key 1: the statement fails, row 2's changes with it.
	if _, err := e.DB().Exec("INSERT INTO t VALUES (2), (1)"); err == nil {
		t.Fatal("a duplicate key inside the procedure did not fail the INSERT")
	}
	if got := state(e); got != "[t1 src2 n11 log1]" {
		t.Errorf("after the failed INSERT: %s", got)
	}
	mustExec(t, e.DB(), "INSERT INTO t VALUES (2), (3)")
	e = reopen(t, e, dir)
	if got := state(e); got != "[t1 t2 t3 n31 log1 log2 log3]" {
		t.Errorf("after two more rows: %s", got)
	}
}
