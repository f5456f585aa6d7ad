package boltsql

import (
	"strings"
	"testing"
)

// ALTER TABLE … ADD/DROP PRIMARY KEY rekeys the stored rows: a repeated or
// NULL key fails the statement and leaves the table as it was (a
// multi-clause ALTER included), the new key is enforced and used for point
// reads after a reopen, and a dropped key lets equal rows in again while the
// secondary indexes keep working. Before, both were refused ("table does
// not support primary key alterations").
func TestAddAndDropPrimaryKey(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE p (a INT, b VARCHAR(10), c INT, KEY by_b (b))")
	mustExec(t, e.DB(), "INSERT INTO p VALUES (1, 'x', 10), (1, 'y', 11), (NULL, 'z', 12)")
	rows := func(e *Engine, q string) string {
		t.Helper()
		return strings.Join(queryStrings(t, e.DB(), q), ",")
	}
	const all = "SELECT CONCAT(COALESCE(a, '-'), b, c) FROM p ORDER BY c"
	if _, err := e.DB().Exec("ALTER TABLE p ADD PRIMARY KEY (c, a)"); mysqlCode(err) != 1048 {
		t.Errorf("a NULL key column: %v, want 1048", err)
	}
	if _, err := e.DB().Exec("ALTER TABLE p ADD PRIMARY KEY (a)"); mysqlCode(err) != 1062 {
		t.Errorf("a repeated key: %v, want 1062", err)
	}
	if got := rows(e, all); got != "1x10,1y11,-z12" {
		t.Fatalf("rows after the failed ALTERs: %s", got)
	}
	mustExec(t, e.DB(), "DELETE FROM p WHERE a IS NULL")
	mustExec(t, e.DB(), "ALTER TABLE p ADD PRIMARY KEY (a, b)")
	e = reopen(t, e, dir)
	if ddl := showCreate(t, e, "p"); !strings.Contains(ddl, "`a` int NOT NULL") || !strings.Contains(ddl, "PRIMARY KEY (`a`,`b`)") {
		t.Errorf("SHOW CREATE TABLE:\n%s", ddl)
	}
	if _, err := e.DB().Exec("INSERT INTO p VALUES (1, 'x', 99)"); mysqlCode(err) != 1062 {
		t.Errorf("a duplicate of the new key: %v, want 1062", err)
	}
	before := e.fastSelects.Load()
	if got := rows(e, "SELECT c FROM p WHERE a = 1 AND b = 'y'"); got != "11" || e.fastSelects.Load() != before+1 {
		t.Errorf("point read by the new key: %q (fast path ran %d times)", got, e.fastSelects.Load()-before)
	}
	// The second clause fails: the first is undone with it.
	if _, err := e.DB().Exec("ALTER TABLE p DROP PRIMARY KEY, ADD PRIMARY KEY (a)"); mysqlCode(err) != 1062 {
		t.Errorf("DROP + ADD of a repeated key: %v, want 1062", err)
	}
	if ddl := showCreate(t, e, "p"); !strings.Contains(ddl, "PRIMARY KEY (`a`,`b`)") {
		t.Errorf("the key after the failed ALTER:\n%s", ddl)
	}
	mustExec(t, e.DB(), "ALTER TABLE p DROP PRIMARY KEY")
	e = reopen(t, e, dir)
	mustExec(t, e.DB(), "INSERT INTO p VALUES (1, 'x', 10)")
	if got := rows(e, all); got != "1x10,1x10,1y11" {
		t.Errorf("rows without the key: %s", got)
	}
	if got := rows(e, "SELECT c FROM p WHERE b = 'y'"); got != "11" {
		t.Errorf("by the secondary index: %q", got)
	}
	if _, err := e.DB().Exec("ALTER TABLE p DROP PRIMARY KEY"); mysqlCode(err) != 1091 {
		t.Errorf("dropping a key that is not there: %v, want 1091", err)
	}

	// An AUTO_INCREMENT key keeps an index that starts with its column.
	mustExec(t, e.DB(), "CREATE TABLE q (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	mustExec(t, e.DB(), "INSERT INTO q (v) VALUES (1)")
	if _, err := e.DB().Exec("ALTER TABLE q DROP PRIMARY KEY"); err == nil || !strings.Contains(err.Error(), "auto column") {
		t.Errorf("dropping an AUTO_INCREMENT key without another index: %v", err)
	}
	mustExec(t, e.DB(), "ALTER TABLE q ADD KEY id (id)")
	mustExec(t, e.DB(), "ALTER TABLE q DROP PRIMARY KEY")
	e = reopen(t, e, dir)
	mustExec(t, e.DB(), "INSERT INTO q (v) VALUES (2)")
	if got := rows(e, "SELECT CONCAT(id, ':', v) FROM q ORDER BY id"); got != "1:1,2:2" {
		t.Errorf("AUTO_INCREMENT after the key went: %s", got)
	}
}
