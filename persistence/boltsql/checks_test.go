package boltsql

import (
	"strings"
	"testing"
)

// CHECK constraints are kept with the table and enforced on INSERT and
// UPDATE, after a reopen too; ALTER TABLE adds (checking existing rows) and
// drops them. Before, CREATE TABLE … CHECK was refused.
func TestCheckConstraints(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE c (id BIGINT PRIMARY KEY, n INT, CONSTRAINT positive CHECK (n > 0), CHECK (n < 100))")
	mustExec(t, e.DB(), "INSERT INTO c VALUES (1, 5)")
	e = reopen(t, e, dir)
	for _, q := range []string{"INSERT INTO c VALUES (2, 0)", "INSERT INTO c VALUES (3, 100)", "UPDATE c SET n = -1 WHERE id = 1"} {
		if _, err := e.DB().Exec(q); err == nil || !strings.Contains(err.Error(), "violated") {
			t.Errorf("%s: %v, want a violated check", q, err)
		}
	}
	if _, err := e.DB().Exec("ALTER TABLE c ADD CONSTRAINT small CHECK (n < 5)"); err == nil {
		t.Error("adding a check the existing row fails succeeded")
	}
	mustExec(t, e.DB(), "ALTER TABLE c DROP CHECK positive")
	mustExec(t, e.DB(), "INSERT INTO c VALUES (2, 0)")
	mustExec(t, e.DB(), "ALTER TABLE c ADD CONSTRAINT big CHECK (n < 50)")
	e = reopen(t, e, dir)
	if _, err := e.DB().Exec("INSERT INTO c VALUES (4, 60)"); err == nil {
		t.Error("the added check is not enforced after a reopen")
	}
	ddl := showCreate(t, e, "c")
	if !strings.Contains(ddl, "CONSTRAINT `big` CHECK") || !strings.Contains(ddl, "c_chk_1") || strings.Contains(ddl, "positive") {
		t.Errorf("SHOW CREATE TABLE:\n%s", ddl)
	}
}
