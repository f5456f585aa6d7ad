package boltsql

import (
	"context"
	"strings"
	"testing"
)

// isReadStatement tests its statement without lowering copies; it must
// answer as the lowering version did.
func TestIsReadStatementMatchesLowering(t *testing.T) {
	lowering := func(q string) bool {
		q = strings.TrimLeft(q, " \t\r\n(")
		if len(q) < 4 {
			return false
		}
		switch strings.ToLower(q[:4]) {
		case "sele", "show", "expl", "desc":
			return !strings.Contains(strings.ToLower(q), "for update")
		}
		return false
	}
	for _, q := range []string{
		"SELECT 1", "select * from t", "  (SELECT a FROM t)", "SELECT a FROM t FOR UPDATE", "select a from t for update",
		"SELECT a FROM t For\tUpdate", "SELECT a FROM t FOR  UPDATE", "SeLeCt 'for update'", "SELECT 'FOR UPDATE", "SHOW TABLES",
		"EXPLAIN SELECT 1", "DESCRIBE t", "INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "sel", "", "SELE",
		"SELECT 'İ' FOR UPDATE", "SELECT 'K' FROM t", "SÉLECT 1", "SELECT 'fór update'", "SELECT x FROM t for updatE;",
		"SELECT x FROM t FOR UPDAT", "select\u212a from t for update",
	} {
		if got, want := isReadStatement(q), lowering(q); got != want {
			t.Errorf("isReadStatement(%q) = %v, want %v", q, got, want)
		}
	}
}

// A session hands an ended transaction's undo log to its next one: rolling
// back a short transaction after a longer one must undo exactly its own
// changes, never records left from the one before.
func TestUndoLogReusedAcrossTransactions(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	db.SetMaxOpenConns(1) // one session for every transaction
	mustExec(t, db, `CREATE TABLE u (id INT NOT NULL PRIMARY KEY, v INT NOT NULL, KEY kv (v))`)
	for round := 0; round < 5; round++ {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 6; i++ {
			mustExec(t, tx, `INSERT INTO u VALUES (?, ?)`, round*100+i, i)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		tx, err = db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, tx, `UPDATE u SET v = v + 1000 WHERE id = ?`, round*100)
		mustExec(t, tx, `INSERT INTO u VALUES (?, 7)`, round*100+50)
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `INSERT INTO u VALUES (?, 8)`, round*100+60) // autocommit, reusing the log again
	}
	if n := queryInt(t, db, `SELECT COUNT(*) FROM u`); n != 5*7 {
		t.Fatalf("%d rows, want %d", n, 5*7)
	}
	if n := queryInt(t, db, `SELECT COUNT(*) FROM u WHERE v >= 1000 OR v = 7`); n != 0 {
		t.Fatalf("%d rows of rolled-back transactions remain", n)
	}
	if n := queryInt(t, db, `SELECT COUNT(*) FROM u WHERE v = 0`); n != 5 {
		t.Fatalf("index finds %d rows with v = 0, want 5", n)
	}
}

// A transaction whose context is canceled is rolled back and its
// connection kept (database/sql discards it unless the driver can validate
// and reset it): the next caller gets the same engine session, with nothing
// of the canceled transaction left.
func TestCanceledTransactionKeepsItsConnection(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	db.SetMaxOpenConns(1)
	mustExec(t, db, `CREATE TABLE c (id INT NOT NULL PRIMARY KEY)`)
	conns := e.connIDs.Load()
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, tx, `INSERT INTO c VALUES (?)`, 100+i)
		cancel()
		if err := tx.Commit(); err == nil {
			t.Fatal("commit after cancel succeeded")
		}
		mustExec(t, db, `INSERT INTO c VALUES (?)`, i) // waits for the rollback to release the connection
	}
	if n := queryInt(t, db, `SELECT COUNT(*) FROM c`); n != 3 {
		t.Fatalf("%d rows, want the 3 autocommit ones", n)
	}
	if n := e.connIDs.Load() - conns; n != 0 {
		t.Fatalf("%d connections opened after canceled transactions, want 0", n)
	}
}
