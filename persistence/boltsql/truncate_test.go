package boltsql

import (
	"strings"
	"testing"
)

// TRUNCATE TABLE empties the rows and every index, restarts AUTO_INCREMENT,
// and is refused for a table a foreign key references; SHOW CREATE TABLE
// lists secondary indexes by name, as go-mysql-server's memory engine does.
// Before, TRUNCATE was refused and the indexes came in creation order.
func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE a (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20), UNIQUE KEY z_name (name), KEY b_name (name, id))")
	mustExec(t, e.DB(), "INSERT INTO a (name) VALUES ('x'), ('y'), ('z')")
	r := mustExec(t, e.DB(), "TRUNCATE TABLE a")
	if n, _ := r.RowsAffected(); n != 3 {
		t.Errorf("TRUNCATE affected %d rows, want 3", n)
	}
	e = reopen(t, e, dir)
	if n := queryInt(t, e.DB(), "SELECT COUNT(*) FROM a WHERE name = 'x'"); n != 0 {
		t.Errorf("%d rows found through the index after TRUNCATE", n)
	}
	mustExec(t, e.DB(), "INSERT INTO a (name) VALUES ('x')") // the unique index is empty too
	if id := queryInt(t, e.DB(), "SELECT id FROM a"); id != 1 {
		t.Errorf("AUTO_INCREMENT after TRUNCATE gave %d, want 1", id)
	}
	if ddl := showCreate(t, e, "a"); strings.Index(ddl, "b_name") > strings.Index(ddl, "z_name") {
		t.Errorf("indexes not in name order:\n%s", ddl)
	}
	mustExec(t, e.DB(), "CREATE TABLE c (id BIGINT PRIMARY KEY, aid BIGINT, FOREIGN KEY (aid) REFERENCES a (id))")
	if _, err := e.DB().Exec("TRUNCATE TABLE a"); err == nil || !strings.Contains(err.Error(), "referenced in foreign key") {
		t.Errorf("TRUNCATE of a referenced table: %v", err)
	}
	if n := queryInt(t, e.DB(), "SELECT COUNT(*) FROM a"); n != 1 {
		t.Errorf("%d rows after the refused TRUNCATE, want 1", n)
	}
}
