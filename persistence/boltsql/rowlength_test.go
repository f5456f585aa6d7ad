package boltsql

import (
	"strings"
	"testing"
)

// A table whose row could exceed MySQL's 65,535 bytes is refused on CREATE
// and ALTER TABLE, as MySQL and MariaDB refuse it, and the table is left
// as it was. Before, the embedded engine accepted it.
func TestRowsLongerThanMySQLAllowsAreRefused(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	if _, err := e.DB().Exec("CREATE TABLE t1 (c1 VARCHAR(16883) NOT NULL)"); err == nil || !strings.Contains(err.Error(), "invalid table spec") {
		t.Errorf("CREATE TABLE of a 67,532-byte row: %v", err)
	}
	mustExec(t, e.DB(), "CREATE TABLE t (id BIGINT PRIMARY KEY, a VARCHAR(10000), b TEXT)")
	if _, err := e.DB().Exec("ALTER TABLE t ADD COLUMN c VARCHAR(10000)"); err == nil || !strings.Contains(err.Error(), "invalid table spec") {
		t.Errorf("ALTER TABLE to an 80,024-byte row: %v", err)
	}
	mustExec(t, e.DB(), "CREATE TABLE n (a INT PRIMARY KEY)")
	if _, err := e.DB().Exec("ALTER TABLE n ADD COLUMN b VARCHAR(16383)"); err == nil || !strings.Contains(err.Error(), "found 65540") {
		t.Errorf("ALTER TABLE to a 65,540-byte row (an INT counts 8): %v", err)
	}
	mustExec(t, e.DB(), "ALTER TABLE t ADD COLUMN d VARCHAR(100)")
	if ddl := showCreate(t, e, "t"); strings.Contains(ddl, "`c`") {
		t.Errorf("the refused column was added:\n%s", ddl)
	}
}
