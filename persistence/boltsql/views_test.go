package boltsql

import (
	"context"
	"fmt"
	"testing"
)

// A view is part of the database: every connection sees it, it survives a
// reopen, CREATE OR REPLACE replaces it and DROP VIEW removes it for good.
// Before, a view lived only in the connection that created it.
func TestViewsArePersistent(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mustExec(t, e.DB(), "CREATE TABLE base (id BIGINT PRIMARY KEY, n INT)")
	mustExec(t, e.DB(), "INSERT INTO base VALUES (1, 2), (2, 3)")
	c1, err := e.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.ExecContext(ctx, "CREATE VIEW tens AS SELECT id, n * 10 AS m FROM base"); err != nil {
		t.Fatal(err)
	}
	c2, err := e.DB().Conn(ctx) // another connection (and session)
	if err != nil {
		t.Fatal(err)
	}
	var m int
	if err := c2.QueryRowContext(ctx, "SELECT m FROM tens WHERE id = 2").Scan(&m); err != nil || m != 30 {
		t.Fatalf("the view from another connection: %d, %v", m, err)
	}
	c1.Close()
	c2.Close()
	e = reopen(t, e, dir)
	if got := fmt.Sprint(queryStrings(t, e.DB(), "SELECT CONCAT(id, ':', m) FROM tens ORDER BY id")); got != "[1:20 2:30]" {
		t.Errorf("after reopen: %s", got)
	}
	if _, err := e.DB().Exec("CREATE VIEW tens AS SELECT 1"); err == nil {
		t.Error("a second CREATE VIEW of the same name succeeded")
	}
	mustExec(t, e.DB(), "CREATE OR REPLACE VIEW tens AS SELECT id, n * 100 AS m FROM base")
	e = reopen(t, e, dir)
	if got := fmt.Sprint(queryStrings(t, e.DB(), "SELECT CONCAT(id, ':', m) FROM tens ORDER BY id")); got != "[1:200 2:300]" {
		t.Errorf("after CREATE OR REPLACE and reopen: %s", got)
	}
	mustExec(t, e.DB(), "DROP VIEW tens")
	e = reopen(t, e, dir)
	if _, err := e.DB().Exec("SELECT * FROM tens"); mysqlCode(err) != 1146 {
		t.Errorf("the dropped view after reopen: %v, want 1146", err)
	}
}
