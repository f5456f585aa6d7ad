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
