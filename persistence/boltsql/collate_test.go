package boltsql

import (
	"slices"
	"strings"
	"testing"
)

// ALTER TABLE … COLLATE changes the table's default collation only, as in
// MySQL: existing columns and their keys keep theirs, a column added later
// takes the new one, and a reopen keeps both. Before, it failed with
// "table does not support collation alterations".
func TestAlterTableCollateChangesTheDefaultOnly(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE c (pk BIGINT PRIMARY KEY, v1 VARCHAR(10), KEY v1 (v1)) COLLATE utf8mb4_0900_bin")
	mustExec(t, e.DB(), "INSERT INTO c VALUES (1, 'a'), (2, 'A')")
	mustExec(t, e.DB(), "ALTER TABLE c COLLATE utf8mb4_0900_ai_ci")
	mustExec(t, e.DB(), "ALTER TABLE c ADD COLUMN v2 VARCHAR(10)")
	mustExec(t, e.DB(), "UPDATE c SET v2 = v1")
	e = reopen(t, e, dir)
	ddl := showCreate(t, e, "c")
	for _, want := range []string{"`v1` varchar(10) COLLATE utf8mb4_0900_bin,", "`v2` varchar(10),", "COLLATE=utf8mb4_0900_ai_ci"} {
		if !strings.Contains(ddl, want) {
			t.Errorf("SHOW CREATE TABLE lacks %q:\n%s", want, ddl)
		}
	}
	if got := queryStrings(t, e.DB(), "SELECT pk FROM c WHERE v1 = 'A'"); !slices.Equal(got, []string{"2"}) {
		t.Errorf("v1 = 'A' under the column's binary collation: %v", got)
	}
	if got := queryStrings(t, e.DB(), "SELECT pk FROM c WHERE v2 = 'A' ORDER BY pk"); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("v2 = 'A' under the new default: %v", got)
	}
}
