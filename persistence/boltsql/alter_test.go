package boltsql

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func showCreate(t *testing.T, e *Engine, table string) string {
	t.Helper()
	var name, ddl string
	if err := e.DB().QueryRow("SHOW CREATE TABLE "+table).Scan(&name, &ddl); err != nil {
		t.Fatalf("SHOW CREATE TABLE %s: %v", table, err)
	}
	return ddl
}

// ALTER TABLE's column changes and RENAME TABLE keep every row, convert
// values, keep indexes usable and unique keys enforced, and survive a
// reopen. Before, each was refused ("not supported"), so the journal's
// schema could not change on the embedded engine.
func TestAlterTableColumnsAndRename(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE a (id BIGINT PRIMARY KEY AUTO_INCREMENT, n INT DEFAULT 5, s VARCHAR(10), UNIQUE KEY us (s), INDEX ns (n, s))")
	mustExec(t, e.DB(), "INSERT INTO a (n, s) VALUES (1, 'x'), (2, 'y'), (NULL, 'z')")
	for _, q := range []string{
		"ALTER TABLE a ALTER COLUMN n DROP DEFAULT", // panicked
		"ALTER TABLE a ADD COLUMN added INT NOT NULL DEFAULT 7 AFTER id",
		"ALTER TABLE a ADD COLUMN tail VARCHAR(5)",
		"ALTER TABLE a MODIFY COLUMN n BIGINT",
		"ALTER TABLE a CHANGE COLUMN s label VARCHAR(20)",
		"ALTER TABLE a DROP COLUMN tail",
		"RENAME TABLE a TO b",
		"ALTER TABLE b RENAME TO c",
	} {
		mustExec(t, e.DB(), q)
	}
	check := func(e *Engine) {
		t.Helper()
		got := queryStrings(t, e.DB(), "SELECT CONCAT_WS(',', id, added, IFNULL(n, 'null'), label) FROM c ORDER BY id")
		if want := "[1,7,1,x 2,7,2,y 3,7,null,z]"; fmt.Sprint(got) != want {
			t.Errorf("rows %v, want %s", got, want)
		}
		if got := queryStrings(t, e.DB(), "SELECT label FROM c WHERE n = 2"); fmt.Sprint(got) != "[y]" {
			t.Errorf("index lookup on n: %v", got)
		}
		if _, err := e.DB().Exec("INSERT INTO c (n, label) VALUES (9, 'x')"); mysqlCode(err) != 1062 {
			t.Errorf("duplicate on the renamed unique column: %v, want 1062", err)
		}
		mustExec(t, e.DB(), "INSERT INTO c (n, label) VALUES (9, ?)", fmt.Sprint("w", e.Stats().KeysRead))
		if got := queryInt(t, e.DB(), "SELECT MAX(id) FROM c"); got != 4 && got != 5 {
			t.Errorf("AUTO_INCREMENT after the rewrite gave %d", got)
		}
		mustExec(t, e.DB(), "DELETE FROM c WHERE id > 3")
		for _, gone := range []string{"a", "b"} {
			if _, err := e.DB().Exec("SELECT * FROM " + gone); mysqlCode(err) != 1146 {
				t.Errorf("table %s after the renames: %v, want 1146", gone, err)
			}
		}
	}
	check(e)
	ddl := showCreate(t, e, "c")
	e = reopen(t, e, dir)
	check(e)
	autoInc := regexp.MustCompile(`AUTO_INCREMENT=\d+ `) // the checks inserted rows
	if again := showCreate(t, e, "c"); autoInc.ReplaceAllString(again, "") != autoInc.ReplaceAllString(ddl, "") {
		t.Errorf("after reopen:\n%s\nbefore:\n%s", again, ddl)
	}
}

// A column change that fails (a value that does not convert) changes
// nothing: rows, definition and indexes stay as they were.
func TestFailedAlterChangesNothing(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	mustExec(t, e.DB(), "CREATE TABLE f (id BIGINT PRIMARY KEY, s VARCHAR(10), INDEX (s))")
	mustExec(t, e.DB(), "INSERT INTO f VALUES (1, '12'), (2, 'abc')")
	before := showCreate(t, e, "f")
	if _, err := e.DB().Exec("ALTER TABLE f MODIFY COLUMN s INT"); err == nil {
		t.Fatal("converting 'abc' to INT succeeded")
	}
	if _, err := e.DB().Exec("ALTER TABLE f MODIFY COLUMN s VARCHAR(10) NOT NULL"); err != nil {
		t.Fatalf("NOT NULL with no NULLs: %v", err)
	}
	mustExec(t, e.DB(), "INSERT INTO f VALUES (3, 'n')")
	if _, err := e.DB().Exec("ALTER TABLE f MODIFY COLUMN s VARCHAR(10) NULL"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "INSERT INTO f VALUES (4, NULL)")
	if _, err := e.DB().Exec("ALTER TABLE f MODIFY COLUMN s VARCHAR(10) NOT NULL"); err == nil {
		t.Fatal("NOT NULL over a NULL succeeded")
	}
	mustExec(t, e.DB(), "DELETE FROM f WHERE id > 2")
	if after := showCreate(t, e, "f"); after != before {
		t.Errorf("definition after failed changes:\n%s\nbefore:\n%s", after, before)
	}
	if got := queryStrings(t, e.DB(), "SELECT CONCAT(id, s) FROM f WHERE s = 'abc'"); fmt.Sprint(got) != "[2abc]" {
		t.Errorf("rows after failed changes: %v", got)
	}
}

// A column added with a default computed from other columns gets it, in
// every existing row, from the row's own values wherever the new column
// goes (FIRST moves the others). Before, the expression read the columns
// at their old positions: (pk, v1) = (1, 3) gave v2 = pk + 2 = 3, not 5.
func TestAddColumnDefaultReadsTheRowsColumns(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE d (pk BIGINT PRIMARY KEY, v1 BIGINT)")
	mustExec(t, e.DB(), "INSERT INTO d VALUES (1, 3), (2, 4)")
	mustExec(t, e.DB(), "ALTER TABLE d ADD COLUMN v2 BIGINT DEFAULT (v1 + 2) FIRST")
	mustExec(t, e.DB(), "ALTER TABLE d ADD COLUMN v3 BIGINT DEFAULT (pk * 10) AFTER v2")
	e = reopen(t, e, dir)
	mustExec(t, e.DB(), "INSERT INTO d (pk, v1) VALUES (3, 5)")
	got := fmt.Sprint(queryStrings(t, e.DB(), "SELECT CONCAT(v2, ':', v3, ':', pk, ':', v1) FROM d ORDER BY pk"))
	if got != "[5:10:1:3 6:20:2:4 7:30:3:5]" {
		t.Errorf("rows: %s", got)
	}
}

// MODIFY … AUTO_INCREMENT on a column with values starts the counter past
// the largest: the next insert without a value got 1 and failed as a
// duplicate key.
func TestModifyToAutoIncrementStartsPastTheRows(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE a (id BIGINT PRIMARY KEY, s VARCHAR(10))")
	mustExec(t, e.DB(), "INSERT INTO a VALUES (1, 'x'), (7, 'y')")
	mustExec(t, e.DB(), "ALTER TABLE a MODIFY id BIGINT AUTO_INCREMENT")
	e = reopen(t, e, dir)
	mustExec(t, e.DB(), "INSERT INTO a (s) VALUES ('z')")
	if got := fmt.Sprint(queryStrings(t, e.DB(), "SELECT CONCAT(id, s) FROM a ORDER BY id")); got != "[1x 7y 8z]" {
		t.Errorf("rows: %s", got)
	}
}

// MODIFY of an ENUM column keeps each row's value (its string), not its
// position: ENUM('a','b','c') -> ENUM('c','a','b') keeps 'a' as 'a'; a
// value the new list lacks fails the ALTER (data truncated) and changes
// nothing. Before, the stored position was kept, so 'a' became 'c'.
func TestModifyEnumKeepsTheValues(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE en (i INT PRIMARY KEY, e ENUM('a', 'b', 'c'))")
	mustExec(t, e.DB(), "INSERT INTO en VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, NULL)")
	mustExec(t, e.DB(), "ALTER TABLE en MODIFY COLUMN e ENUM('c', 'a', 'b')")
	rows := func(e *Engine) string {
		t.Helper()
		return fmt.Sprint(queryStrings(t, e.DB(), "SELECT e FROM en WHERE e IS NOT NULL ORDER BY i"), queryStrings(t, e.DB(), "SELECT e + 0 FROM en WHERE e IS NOT NULL ORDER BY i"))
	}
	e = reopen(t, e, dir)
	if got := rows(e); got != "[a b c] [2 3 1]" {
		t.Errorf("after the reorder: %s", got)
	}
	if _, err := e.DB().Exec("ALTER TABLE en MODIFY COLUMN e ENUM('a', 'b')"); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("dropping a used value: %v, want data truncated", err)
	}
	if got := rows(e); got != "[a b c] [2 3 1]" {
		t.Errorf("after the failed ALTER: %s", got)
	}
}
