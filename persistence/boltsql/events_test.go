package boltsql

import (
	"context"
	"strings"
	"testing"

	gsql "github.com/dolthub/go-mysql-server/sql"
)

// Events are kept in the database: CREATE EVENT, ALTER EVENT (a rename
// too) and DROP EVENT last across a reopen, a refused statement changes
// nothing, and undone changes take the definitions back. Before,
// CREATE EVENT was refused.
func TestEventsArePersistent(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE totals (n INT)")
	mustExec(t, e.DB(), "CREATE EVENT tick ON SCHEDULE EVERY 1 HOUR STARTS '2037-10-16 23:59:00' DISABLE COMMENT 'hourly' DO INSERT INTO totals VALUES (1)")
	mustExec(t, e.DB(), "CREATE EVENT once ON SCHEDULE AT '2037-01-16 12:00:00' ON COMPLETION PRESERVE DISABLE DO INSERT INTO totals VALUES (2)")
	names := func(e *Engine) string {
		t.Helper()
		return strings.Join(queryStrings(t, e.DB(), "SELECT CONCAT(event_name, ':', event_comment) FROM information_schema.events ORDER BY event_name"), ",")
	}
	e = reopen(t, e, dir)
	if got := names(e); got != "once:,tick:hourly" {
		t.Fatalf("events after a reopen: %s", got)
	}
	var name, mode, zone, ddl, cs, coll, dbColl string
	if err := e.DB().QueryRow("SHOW CREATE EVENT tick").Scan(&name, &mode, &zone, &ddl, &cs, &coll, &dbColl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ddl, "EVERY 1 HOUR STARTS '2037-10-16 23:59:00'") || !strings.Contains(ddl, "INSERT INTO totals VALUES (1)") {
		t.Errorf("SHOW CREATE EVENT: %s", ddl)
	}
	for _, q := range []string{
		"CREATE EVENT TICK ON SCHEDULE EVERY 1 DAY DISABLE DO INSERT INTO totals VALUES (3)",
		"ALTER EVENT once RENAME TO tick",
		"DROP EVENT nope",
	} {
		if _, err := e.DB().Exec(q); err == nil {
			t.Errorf("%s succeeded", q)
		}
	}
	mustExec(t, e.DB(), "ALTER EVENT tick RENAME TO hourly COMMENT 'renamed'")
	mustExec(t, e.DB(), "DROP EVENT once")
	// CREATE EVENT is DDL: it commits the open transaction, as in MySQL.
	ctx := context.Background()
	c, err := e.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"START TRANSACTION", "CREATE EVENT later ON SCHEDULE EVERY 1 DAY DISABLE DO INSERT INTO totals VALUES (4)", "ROLLBACK"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c.Close()
	mustExec(t, e.DB(), "DROP EVENT later")
	// Undone changes (a failing statement's, a rollback's) take the
	// event's definition back, in the catalog and on disk.
	sess := e.newSession(gsql.NewBaseSessionWithClientServer("test", gsql.Client{User: "root"}, e.connIDs.Add(1)))
	sctx := e.newContext(ctx, sess, "")
	tx, err := sess.StartTransaction(sctx, gsql.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	sctx.SetTransaction(tx)
	db := &database{eng: e, name: "sessionrt"}
	ed, _, err := db.GetEvent(sctx, "hourly")
	if err != nil {
		t.Fatal(err)
	}
	renamed := ed
	renamed.Name = "undone"
	if _, err := db.UpdateEvent(sctx, "hourly", renamed); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveEvent(sctx, ed); err != nil {
		t.Fatal(err)
	}
	if err := sess.Rollback(sctx, tx); err != nil {
		t.Fatal(err)
	}
	if got := names(e); got != "hourly:renamed" {
		t.Errorf("events after a rolled-back rename and create: %s", got)
	}
	e = reopen(t, e, dir)
	if got := names(e); got != "hourly:renamed" {
		t.Errorf("events after ALTER, DROP, a rollback and a reopen: %s", got)
	}
}
