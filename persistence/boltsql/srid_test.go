package boltsql

import (
	"errors"
	"strings"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// A spatial column keeps the SRID it was declared with: SHOW CREATE TABLE
// prints it and a value of another SRID is refused, after a reopen and an
// ALTER TABLE too. Before, the stored type dropped it.
func TestSpatialColumnsKeepTheirSRID(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE g (i BIGINT PRIMARY KEY, p POINT NOT NULL SRID 4326, q GEOMETRY SRID 0, r LINESTRING)")
	mustExec(t, e.DB(), "INSERT INTO g VALUES (1, ST_GEOMFROMTEXT('POINT(1 2)', 4326), POINT(1, 2), NULL)")
	e = reopen(t, e, dir)
	mustExec(t, e.DB(), "ALTER TABLE g ADD COLUMN n INT")
	ddl := showCreate(t, e, "g")
	for _, want := range []string{"`p` point NOT NULL /*!80003 SRID 4326 */", "`q` geometry /*!80003 SRID 0 */", "`r` linestring,"} {
		if !strings.Contains(ddl, want) {
			t.Errorf("SHOW CREATE TABLE lacks %q:\n%s", want, ddl)
		}
	}
	var me *mysqldriver.MySQLError
	if _, err := e.DB().Exec("INSERT INTO g VALUES (2, POINT(1, 2), NULL, NULL, NULL)"); !errors.As(err, &me) {
		t.Errorf("a point of SRID 0 into a column of SRID 4326: %v, want an error", err)
	}
}

// An ALTER to an SRID or a spatial type the stored values do not fit fails
// with go-mysql-server's own errors (the SRID one naming the column) and
// changes nothing. Before, the conversion error was wrapped, which hid its
// kind from the engine's callers.
func TestAlterToAnSRIDTheRowsLackFails(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	mustExec(t, e.DB(), "CREATE TABLE s (i INT PRIMARY KEY, g GEOMETRY)")
	mustExec(t, e.DB(), "INSERT INTO s VALUES (1, POINT(3, 4))")
	if _, err := e.DB().Exec("ALTER TABLE s MODIFY COLUMN g GEOMETRY SRID 4326"); err == nil || !strings.Contains(err.Error(), "SRID of the geometry does not match the SRID of the column 'g'") {
		t.Errorf("ALTER to an SRID the rows do not have: %v", err)
	}
	if _, err := e.DB().Exec("ALTER TABLE s MODIFY COLUMN g LINESTRING"); err == nil || strings.Contains(err.Error(), "column g:") {
		t.Errorf("ALTER to a spatial type the rows are not: %v, want go-mysql-server's error unwrapped", err)
	}
	if ddl := showCreate(t, e, "s"); !strings.Contains(ddl, "`g` geometry,") {
		t.Errorf("after the failed ALTERs:\n%s", ddl)
	}
}
