package boltsql

import (
	"testing"
	"time"
)

// With go-mysql-server's user accounts enabled the planner checks every
// statement's privileges, so the fast paths, which do not, leave every
// statement to it. Before, a fast INSERT/UPDATE/SELECT ran whatever the
// user's grants (enginetest TestUserPrivileges: an INSERT without the
// INSERT privilege succeeded through them).
func TestFastPathsStepAsideWithUserAccounts(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	mustExec(t, e.DB(), eventsDDL)
	db := e.sqle.Analyzer.Catalog.MySQLDb
	ed := db.Editor()
	db.AddSuperUser(ed, "root", "%", "") // the driver's client is root@in-process
	ed.Close()
	if !db.Enabled() {
		t.Fatal("user accounts not enabled")
	}
	mustExec(t, e.DB(), "INSERT INTO events VALUES (?, ?, ?, ?, ?)", "s", 1, "k", []byte("b"), time.Now())
	mustExec(t, e.DB(), "UPDATE events SET kind = ? WHERE session_id = ? AND seq = ?", "j", "s", 1)
	if got := queryStrings(t, e.DB(), "SELECT kind FROM events WHERE session_id = ? AND seq = ?", "s", 1); len(got) != 1 || got[0] != "j" {
		t.Errorf("read back %q", got)
	}
	if n := e.fastInserts.Load() + e.fastUpdates.Load() + e.fastSelects.Load(); n != 0 {
		t.Errorf("the fast paths ran %d statements", n)
	}
}
