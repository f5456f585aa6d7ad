package boltsql

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// A column's collation survives the catalog: before, the stored type was
// re-parsed without it, LIKE on every CHAR/VARCHAR/TEXT column was false
// and COLLATE on one an error ("not valid for CHARACTER SET").
func TestLikeAndCollateOnStringColumnsAfterReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE t (id BIGINT PRIMARY KEY, s VARCHAR(20), c CHAR(5), x TEXT, g VARCHAR(20) COLLATE utf8mb4_general_ci)")
	mustExec(t, e.DB(), "INSERT INTO t VALUES (1, 'hello', 'abc', 'text', 'Mixed')")
	check := func(e *Engine) {
		t.Helper()
		for q, want := range map[string]int64{
			"SELECT COUNT(*) FROM t WHERE s LIKE 'h%'":                              1,
			"SELECT COUNT(*) FROM t WHERE c LIKE 'a_c'":                             1,
			"SELECT COUNT(*) FROM t WHERE x LIKE '%ex%'":                            1,
			"SELECT COUNT(*) FROM t WHERE s LIKE 'H%'":                              0, // utf8mb4_0900_bin is case-sensitive
			"SELECT COUNT(*) FROM t WHERE g = 'mixed'":                              1, // the column's own collation is kept
			"SELECT COUNT(*) FROM t WHERE s COLLATE utf8mb4_general_ci = 'HELLO'":   1,
			"SELECT COUNT(*) FROM t WHERE s COLLATE utf8mb4_0900_ai_ci LIKE 'HEL%'": 1,
		} {
			if got := queryInt(t, e.DB(), q); got != want {
				t.Errorf("%s = %d, want %d", q, got, want)
			}
		}
	}
	check(e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	check(e)
}

// A definition written before types named their collation ("varchar(20)")
// loads with the table's collation, or the default one.
func TestOldDefinitionsGetTheTableCollation(t *testing.T) {
	for coll, want := range map[string]sql.CollationID{"": sql.Collation_Default, "utf8mb4_general_ci": sql.Collation_utf8mb4_general_ci} {
		ti, err := compile("db", tableDef{ID: 1, Name: "t", Collation: coll, PK: []int{0},
			Columns: []columnDef{{Name: "id", Type: "bigint"}, {Name: "s", Type: "varchar(20)", Nullable: true}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := ti.schema.Schema[1].Type.(sql.TypeWithCollation).Collation(); got != want {
			t.Errorf("table collation %q: column collation %s, want %s", coll, got, want)
		}
	}
}
