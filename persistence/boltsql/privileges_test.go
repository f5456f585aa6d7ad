package boltsql

import (
	"slices"
	"testing"
)

// Every connection has every privilege (there are no user accounts), and
// information_schema shows what it filters by privilege: a procedure in
// information_schema.routines, and column_statistics after ANALYZE TABLE.
// Before, routines was empty and column_statistics panicked inside
// go-mysql-server (error 1105).
func TestInformationSchemaShowsWhatPrivilegesFilter(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	mustExec(t, e.DB(), "CREATE TABLE t (i BIGINT PRIMARY KEY, j INT)")
	mustExec(t, e.DB(), "INSERT INTO t VALUES (1, 1), (2, 2)")
	mustExec(t, e.DB(), "CREATE PROCEDURE p1() SELECT 1")
	if got := queryStrings(t, e.DB(), "SELECT routine_name FROM information_schema.routines WHERE routine_schema = 'sessionrt'"); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("information_schema.routines lists %v", got)
	}
	mustExec(t, e.DB(), "ANALYZE TABLE t")
	if got := queryStrings(t, e.DB(), "SELECT column_name FROM information_schema.column_statistics WHERE table_name = 't' ORDER BY 1"); len(got) == 0 {
		t.Errorf("information_schema.column_statistics lists nothing after ANALYZE TABLE")
	}
}
