package boltsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// TestTxStatementsMatchEngine runs one script of transaction-control
// statements with them handled by the driver and through go-mysql-server
// alone: each statement's error, what the session itself sees and what
// another connection sees must be identical.
func TestTxStatementsMatchEngine(t *testing.T) {
	fast, slow := openTest(t, Options{NoSync: true}), openTest(t, Options{NoSync: true})
	slow.noFastTxStmts, slow.noFastInsert, slow.noFastUpdate = true, true, true
	ctx := context.Background()
	script := []string{
		"COMMIT",
		"ROLLBACK",
		"START TRANSACTION", "INSERT INTO tt VALUES (1)", "ROLLBACK",
		"BEGIN", "INSERT INTO tt VALUES (2)", "COMMIT",
		// START TRANSACTION inside a transaction commits it first.
		"START TRANSACTION", "INSERT INTO tt VALUES (3)", "START TRANSACTION", "INSERT INTO tt VALUES (4)", "ROLLBACK",
		"START TRANSACTION READ ONLY", "INSERT INTO tt VALUES (5)", "UPDATE tt SET id = 5 WHERE id = 2", "SELECT COUNT(*) FROM tt", "COMMIT",
		"SET autocommit = 0", "INSERT INTO tt VALUES (6)", "COMMIT", "INSERT INTO tt VALUES (7)", "ROLLBACK",
		"INSERT INTO tt VALUES (8)", "start transaction;", "INSERT INTO tt VALUES (9)", "rollback ;", "SET autocommit = 1",
		"begin", "INSERT INTO tt VALUES (10)", "INSERT INTO tt VALUES (10)", " commit; ",
		"INSERT INTO tt VALUES (11)", "ROLLBACK", "COMMIT",
	}
	run := func(e *Engine) []string {
		db := e.DB()
		mustExec(t, db, "CREATE TABLE tt (id BIGINT PRIMARY KEY)")
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var out []string
		for _, q := range script {
			var res string
			if strings.HasPrefix(q, "SELECT") {
				var n int64
				err = c.QueryRowContext(ctx, q).Scan(&n)
				res = fmt.Sprint(n)
			} else {
				_, err = c.ExecContext(ctx, q)
			}
			if err != nil {
				res = fmt.Sprintf("error %d: %v", mysqlCode(err), err)
			}
			mine := strings.Join(queryConnStrings(t, c, "SELECT CAST(id AS CHAR) FROM tt ORDER BY id"), ",")
			others := strings.Join(queryStrings(t, db, "SELECT CAST(id AS CHAR) FROM tt ORDER BY id"), ",")
			out = append(out, fmt.Sprintf("%-30q %s | session sees [%s] | others see [%s]", q, res, mine, others))
		}
		// database/sql's own transactions.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO tt VALUES (20)"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		ro, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = ro.Exec("INSERT INTO tt VALUES (21)")
		out = append(out, fmt.Sprintf("read-only tx insert: %d %v", mysqlCode(err), err))
		if err := ro.Rollback(); err != nil {
			t.Fatal(err)
		}
		out = append(out, "final: "+strings.Join(queryStrings(t, db, "SELECT CAST(id AS CHAR) FROM tt ORDER BY id"), ","))
		return out
	}
	got, want := run(fast), run(slow)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d:\n driver: %s\n engine: %s", i, got[i], want[i])
		}
	}
	if final := got[len(got)-1]; final != "final: 2,3,6,8,10,11,20" {
		t.Errorf("unexpected final contents %q", final)
	}
	if fast.fastTxStmts.Load() < 20 || slow.fastTxStmts.Load() != 0 {
		t.Errorf("driver ran %d (fast) and %d (disabled) transaction statements", fast.fastTxStmts.Load(), slow.fastTxStmts.Load())
	}
}

func queryConnStrings(t *testing.T, c *sql.Conn, q string) []string {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
