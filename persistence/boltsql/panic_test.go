package boltsql

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// panicExpr is a function whose evaluation panics, standing for any bug
// inside go-mysql-server that panics while a statement runs (ALTER COLUMN
// … DROP DEFAULT on a table that is not alterable did; so does a
// self-join after ANALYZE TABLE).
type panicExpr struct{}

func (panicExpr) Resolved() bool                                             { return true }
func (panicExpr) String() string                                             { return "test_panic()" }
func (panicExpr) Type() gsql.Type                                            { return types.Int64 }
func (panicExpr) IsNullable() bool                                           { return false }
func (panicExpr) Children() []gsql.Expression                                { return nil }
func (panicExpr) Eval(*gsql.Context, gsql.Row) (interface{}, error)          { panic("test panic") }
func (p panicExpr) WithChildren(...gsql.Expression) (gsql.Expression, error) { return p, nil }

func withPanicFunction(e *Engine) {
	e.sqle.Analyzer.Catalog.RegisterFunction(gsql.NewEmptyContext(),
		gsql.NewFunction0("test_panic", func() gsql.Expression { return panicExpr{} }))
}

func wantInternalError(t *testing.T, what string, err error) {
	t.Helper()
	if mysqlCode(err) != 1105 || !strings.Contains(err.Error(), "panic") {
		t.Fatalf("%s: %v, want error 1105 naming the panic", what, err)
	}
}

// A statement that panics inside the engine fails with an error, in
// process and over the wire; its transaction is rolled back (a COMMIT of an
// explicit one fails) and the writer is free for the next statement. Before,
// the panic took down the process (in process) or the connection (wire).
func TestStatementPanicsAreErrors(t *testing.T) {
	e := openTest(t, Options{NoSync: true, LockWaitTimeout: 5 * 1e9})
	withPanicFunction(e)
	mustExec(t, e.DB(), "CREATE TABLE p (id BIGINT PRIMARY KEY, n BIGINT)")
	dbs := map[string]*sql.DB{"in-process": e.DB()}
	wire, err := sql.Open("mysql", "root@tcp("+serveTest(t, e)+")/sessionrt")
	if err != nil {
		t.Fatal(err)
	}
	defer wire.Close()
	wire.SetMaxOpenConns(1) // the connection that saw the panic is the one reused
	dbs["wire"] = wire
	id := 0
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rows, err := db.Query("SELECT test_panic()")
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			wantInternalError(t, "SELECT", err)
			_, err = db.Exec("INSERT INTO p VALUES (100, test_panic())")
			wantInternalError(t, "INSERT", err)
			id++
			mustExec(t, db, "INSERT INTO p VALUES (?, 1)", id) // the writer is free

			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, "INSERT INTO p VALUES (200, 2)"); err != nil {
				t.Fatal(err)
			}
			_, err = conn.ExecContext(ctx, "UPDATE p SET n = test_panic() WHERE id = 200")
			wantInternalError(t, "UPDATE in a transaction", err)
			if _, err := conn.ExecContext(ctx, "COMMIT"); err == nil {
				t.Fatal("COMMIT after a statement panicked succeeded")
			}
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			conn.Close() // the wire side has one connection
			if n := queryInt(t, db, "SELECT COUNT(*) FROM p WHERE id = 200"); n != 0 {
				t.Fatalf("the aborted transaction's row was committed")
			}
			id++
			mustExec(t, db, "INSERT INTO p VALUES (?, 1)", id)
		})
	}
}
