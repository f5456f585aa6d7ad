package boltsql

import (
	"strings"
	"testing"
)

// Foreign keys are kept with the declaring table, across a reopen, and
// go-mysql-server enforces them through this engine: a child row needs its
// parent (on the fast INSERT path too), a referenced parent key cannot
// change (on the fast UPDATE path too), ON DELETE CASCADE deletes the
// children, a row may reference one inserted earlier by the same statement,
// and an ALTER TABLE … ADD FOREIGN KEY that fails leaves nothing. Before, CREATE TABLE …
// FOREIGN KEY was refused.
func TestForeignKeys(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	mustExec(t, e.DB(), "CREATE TABLE p (id BIGINT PRIMARY KEY, v INT)")
	mustExec(t, e.DB(), "CREATE TABLE c (id BIGINT PRIMARY KEY, pid BIGINT, CONSTRAINT fk_p FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE)")
	mustExec(t, e.DB(), "INSERT INTO p VALUES (1, 0), (2, 0)")
	mustExec(t, e.DB(), "INSERT INTO c VALUES (10, 1), (11, 2)")
	e = reopen(t, e, dir)

	if ddl := showCreate(t, e, "c"); !strings.Contains(ddl, "CONSTRAINT `fk_p` FOREIGN KEY (`pid`) REFERENCES `p` (`id`) ON DELETE CASCADE") {
		t.Errorf("SHOW CREATE TABLE after a reopen:\n%s", ddl)
	}
	// Arguments make these eligible for the fast paths, which must step aside.
	if _, err := e.DB().Exec("INSERT INTO c VALUES (?, ?)", 12, 3); mysqlCode(err) != 1452 {
		t.Errorf("child row without a parent: %v, want error 1452", err)
	}
	if _, err := e.DB().Exec("UPDATE p SET id = ? WHERE id = ?", 5, 2); mysqlCode(err) != 1451 {
		t.Errorf("changing a referenced parent key: %v, want error 1451", err)
	}
	mustExec(t, e.DB(), "UPDATE p SET v = ? WHERE id = ?", 7, 2) // not a key column: allowed
	mustExec(t, e.DB(), "INSERT INTO c VALUES (?, ?)", 12, 2)
	mustExec(t, e.DB(), "DELETE FROM p WHERE id = 2")
	if got := queryStrings(t, e.DB(), "SELECT CAST(id AS CHAR) FROM c ORDER BY id"); strings.Join(got, ",") != "10" {
		t.Errorf("children after deleting parent 2 (cascade): %v, want [10]", got)
	}

	// A row referencing one the same statement inserted before it.
	mustExec(t, e.DB(), "CREATE TABLE tree (id BIGINT PRIMARY KEY, up BIGINT, FOREIGN KEY (up) REFERENCES tree (id))")
	mustExec(t, e.DB(), "INSERT INTO tree VALUES (1, NULL), (2, 1), (3, 2)")
	if _, err := e.DB().Exec("INSERT INTO tree VALUES (4, 9)"); mysqlCode(err) != 1452 {
		t.Errorf("self-reference to a missing row: %v, want error 1452", err)
	}

	// A statement that fails leaves no foreign key, and no index for it.
	mustExec(t, e.DB(), "CREATE TABLE d (id BIGINT PRIMARY KEY, pid BIGINT)")
	mustExec(t, e.DB(), "INSERT INTO d VALUES (1, 99)")
	if _, err := e.DB().Exec("ALTER TABLE d ADD CONSTRAINT fk_d FOREIGN KEY (pid) REFERENCES p (id)"); mysqlCode(err) != 1452 {
		t.Errorf("adding a foreign key the existing rows violate: %v, want error 1452", err)
	}
	if ddl := showCreate(t, e, "d"); strings.Contains(ddl, "fk_d") || strings.Contains(ddl, "KEY `") {
		t.Errorf("a failed ALTER left a trace:\n%s", ddl)
	}
	mustExec(t, e.DB(), "DELETE FROM d")
	mustExec(t, e.DB(), "ALTER TABLE d ADD CONSTRAINT fk_d FOREIGN KEY (pid) REFERENCES p (id)")
	mustExec(t, e.DB(), "ALTER TABLE d DROP FOREIGN KEY fk_d")
	e = reopen(t, e, dir)
	mustExec(t, e.DB(), "INSERT INTO d VALUES (2, 99)")
	if _, err := e.DB().Exec("DROP TABLE p"); err == nil {
		t.Error("dropped a table a foreign key references")
	}
}
