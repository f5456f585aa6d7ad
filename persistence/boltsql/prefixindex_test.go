package boltsql

import (
	"errors"
	"slices"
	"strings"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// An index on a column prefix (KEY (c(3))) keys each row by the column's
// first characters (bytes for a binary column): a lookup through it finds
// exactly the rows a full scan finds, for points, ranges, overlapping IN
// lists and LIKE, with multi-byte characters cut whole; a unique prefix
// index refuses a second row with the same prefix, as MySQL does; the index
// and its lengths survive a reopen and DROP COLUMN. Before, CREATE INDEX
// with a prefix length was refused.
func TestIndexOnAColumnPrefix(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	cols := "id BIGINT PRIMARY KEY, name VARCHAR(20), b VARBINARY(20)"
	mustExec(t, e.DB(), "CREATE TABLE t ("+cols+", KEY name3 (name(3)), KEY b2 (b(2)), KEY nb (name(2), b))")
	mustExec(t, e.DB(), "CREATE TABLE scan ("+cols+")") // the same rows, no index
	rows := "(1, 'abc', 'abc'), (2, 'abcd', 'abcd'), (3, 'abcz', 'ab'), (4, 'abd', 'b'), (5, 'ab', 'a'), " +
		"(6, NULL, NULL), (7, 'xyz', 'xyz'), (8, 'ééé', 'ééé'), (9, 'éééx', 'éé'), (10, 'ééa', 'é'), (11, '', '')"
	for _, tbl := range []string{"t", "scan"} {
		mustExec(t, e.DB(), "INSERT INTO "+tbl+" VALUES "+rows)
	}
	if plan := strings.Join(queryStrings(t, e.DB(), "EXPLAIN PLAN SELECT id FROM t WHERE name IN ('abcd', 'abcz')"), "\n"); !strings.Contains(plan, "IndexedTableAccess") {
		t.Fatalf("the prefix index is not used:\n%s", plan)
	}
	wheres := []string{
		"name = 'abcd'", "name = 'abc'", "name = 'ab'", "name = 'éééx'", "name = 'ééé'", "name = ''",
		"name < 'abcd'", "name <= 'abcd'", "name > 'abc'", "name >= 'abcz'", "name > 'ab' AND name < 'abd'",
		"name BETWEEN 'abca' AND 'abcy'", "name IN ('abcd', 'abcz', 'abc')", "name IN ('ab', 'éééx', 'xyz')",
		"name LIKE 'abc%'", "name IS NULL", "name IS NOT NULL", "name <> 'abc'",
		"b = 'abcd'", "b = 'ab'", "b < 'abc'", "b >= 'é'", "b IN ('abc', 'abcd')", "b LIKE 'é%'",
		"name = 'abcd' AND b = 'abcd'", "name = 'abx' AND b > 'a'", "name > 'a' AND b = 'ab'",
	}
	check := func(e *Engine) {
		t.Helper()
		for _, w := range wheres {
			got := queryStrings(t, e.DB(), "SELECT id FROM t WHERE "+w+" ORDER BY id")
			want := queryStrings(t, e.DB(), "SELECT id FROM scan WHERE "+w+" ORDER BY id")
			if !slices.Equal(got, want) {
				t.Errorf("WHERE %s: index finds %v, a scan %v", w, got, want)
			}
		}
		got := queryStrings(t, e.DB(), "SELECT id FROM t WHERE b >= 'ab' ORDER BY b DESC, id")
		want := queryStrings(t, e.DB(), "SELECT id FROM scan WHERE b >= 'ab' ORDER BY b DESC, id")
		if !slices.Equal(got, want) {
			t.Errorf("ORDER BY b DESC: %v, want %v", got, want)
		}
	}
	check(e)

	mustExec(t, e.DB(), "CREATE TABLE u (id BIGINT PRIMARY KEY, name VARCHAR(20), UNIQUE KEY name2 (name(2)))")
	mustExec(t, e.DB(), "INSERT INTO u VALUES (1, 'abc'), (2, 'b'), (3, NULL), (4, NULL)")
	var me *mysqldriver.MySQLError
	if _, err := e.DB().Exec("INSERT INTO u VALUES (5, 'abz')"); !errors.As(err, &me) || me.Number != 1062 {
		t.Errorf("a second row with the unique prefix 'ab': %v, want error 1062", err)
	}
	if _, err := e.DB().Exec("UPDATE u SET name = 'abd' WHERE id = 2"); !errors.As(err, &me) || me.Number != 1062 {
		t.Errorf("an update to the unique prefix 'ab': %v, want error 1062", err)
	}
	mustExec(t, e.DB(), "UPDATE u SET name = 'abd' WHERE id = 1") // its own prefix
	mustExec(t, e.DB(), "INSERT INTO u VALUES (5, 'ba')")         // 'b' and 'ba' differ in two characters
	if _, err := e.DB().Exec("CREATE UNIQUE INDEX name1 ON u (name(1))"); !errors.As(err, &me) || me.Number != 1062 {
		t.Errorf("a unique prefix index over rows that share it: %v, want error 1062", err)
	}

	e = reopen(t, e, dir)
	if ddl := showCreate(t, e, "t"); !strings.Contains(ddl, "KEY `name3` (`name`(3))") || !strings.Contains(ddl, "KEY `nb` (`name`(2),`b`)") {
		t.Errorf("prefix lengths lost at reopen:\n%s", ddl)
	}
	check(e)
	if _, err := e.DB().Exec("INSERT INTO u VALUES (6, 'abq')"); !errors.As(err, &me) || me.Number != 1062 {
		t.Errorf("unique prefix after a reopen: %v, want error 1062", err)
	}

	// Dropping a column keeps every other column's prefix length.
	mustExec(t, e.DB(), "ALTER TABLE t DROP COLUMN name")
	mustExec(t, e.DB(), "ALTER TABLE scan DROP COLUMN name")
	if ddl := showCreate(t, e, "t"); !strings.Contains(ddl, "KEY `b2` (`b`(2))") || !strings.Contains(ddl, "KEY `nb` (`b`)") {
		t.Errorf("prefix lengths after DROP COLUMN:\n%s", ddl)
	}
	wheres = slices.DeleteFunc(wheres, func(w string) bool { return strings.Contains(w, "name") })
	check(e)
}
