package boltsql

import (
	"slices"
	"strings"
	"testing"
)

// A VECTOR index is kept in the table's definition: SHOW CREATE TABLE and
// information_schema list it, a reopen keeps it, its name is taken, and
// it is never read (rows and ORDER BY VEC_DISTANCE … LIMIT come from the
// table, right); DROP INDEX removes it. Before, CREATE VECTOR INDEX was
// refused, which failed the set-up of enginetest's TestComplexIndexQueries.
func TestVectorIndexIsKept(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE vectors (id BIGINT PRIMARY KEY, v JSON)")
	mustExec(t, e.DB(), "INSERT INTO vectors VALUES (1, '[4.0,3.0]'), (2, '[0.0,0.0]'), (3, '[-1.0,1.0]')")
	mustExec(t, e.DB(), "CREATE VECTOR INDEX v_idx ON vectors (v)")
	mustExec(t, e.DB(), "INSERT INTO vectors VALUES (4, '[0.0,-2.0]')")
	if _, err := e.DB().Exec("CREATE INDEX v_idx ON vectors (id)"); err == nil || !strings.Contains(err.Error(), "v_idx") {
		t.Errorf("a second index named v_idx: %v", err)
	}
	e = reopen(t, e, dir)
	if ddl := showCreate(t, e, "vectors"); !strings.Contains(ddl, "VECTOR KEY `v_idx` (`v`)") {
		t.Errorf("VECTOR index not kept:\n%s", ddl)
	}
	if got := queryStrings(t, e.DB(), "SELECT index_name FROM information_schema.statistics WHERE table_name = 'vectors' ORDER BY index_name"); !slices.Equal(got, []string{"PRIMARY", "v_idx"}) {
		t.Errorf("information_schema.statistics lists %v", got)
	}
	if got := queryStrings(t, e.DB(), "SELECT id FROM vectors ORDER BY VEC_DISTANCE('[0.0,0.0]', v) LIMIT 4"); !slices.Equal(got, []string{"2", "3", "4", "1"}) {
		t.Errorf("ORDER BY VEC_DISTANCE … LIMIT 4: %v", got)
	}
	mustExec(t, e.DB(), "UPDATE vectors SET v = '[9.0,9.0]' WHERE id = 2")
	mustExec(t, e.DB(), "DELETE FROM vectors WHERE id = 3")
	if got := queryStrings(t, e.DB(), "SELECT id FROM vectors WHERE v = CAST('[9.0,9.0]' AS JSON)"); !slices.Equal(got, []string{"2"}) {
		t.Errorf("rows after UPDATE and DELETE: %v", got)
	}
	mustExec(t, e.DB(), "DROP INDEX v_idx ON vectors")
	if ddl := showCreate(t, e, "vectors"); strings.Contains(ddl, "v_idx") {
		t.Errorf("VECTOR index left after DROP INDEX:\n%s", ddl)
	}
}

// A SPATIAL index is kept like a VECTOR one: listed, kept across a reopen,
// never read (a spatial predicate scans the table and answers right).
// Before, SPATIAL INDEX was refused.
func TestSpatialIndexIsKept(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE geom (i BIGINT PRIMARY KEY, g POINT NOT NULL SRID 0, SPATIAL INDEX (g))")
	mustExec(t, e.DB(), "INSERT INTO geom VALUES (1, POINT(1, 1)), (2, POINT(5, 5))")
	mustExec(t, e.DB(), "CREATE TABLE geom2 (i BIGINT PRIMARY KEY, g POINT NOT NULL SRID 0)")
	mustExec(t, e.DB(), "INSERT INTO geom2 VALUES (1, POINT(2, 2))")
	mustExec(t, e.DB(), "ALTER TABLE geom2 ADD SPATIAL INDEX s (g)")
	e = reopen(t, e, dir)
	if ddl := showCreate(t, e, "geom"); !strings.Contains(ddl, "SPATIAL KEY `g` (`g`)") {
		t.Errorf("SPATIAL index not kept:\n%s", ddl)
	}
	if ddl := showCreate(t, e, "geom2"); !strings.Contains(ddl, "SPATIAL KEY `s` (`g`)") {
		t.Errorf("SPATIAL index added to rows not kept:\n%s", ddl)
	}
	if got := queryStrings(t, e.DB(), "SELECT i FROM geom WHERE ST_INTERSECTS(g, ST_GEOMFROMTEXT('POLYGON((0 0,0 2,2 2,2 0,0 0))'))"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("ST_INTERSECTS: %v", got)
	}
}
