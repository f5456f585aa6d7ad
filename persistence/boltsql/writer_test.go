package boltsql

import (
	"testing"
	"time"
)

// Writer turns are pooled; a rolled-back turn may be reused while its end
// still waits in its channel for its writer's loop. A goroutine that
// alternates between two engines (as the differential tests do) must not
// get the other engine's turn: that engine's loop would take the stale end
// as the end of the new transaction and roll back its bbolt transaction
// while the statement still runs (a race, a panic, lost rows or a hang).
func TestTurnsOfTwoEnginesStayApart(t *testing.T) {
	engines := []*Engine{
		openTest(t, Options{NoSync: true, LockWaitTimeout: 10 * time.Second}),
		openTest(t, Options{NoSync: true, LockWaitTimeout: 10 * time.Second}),
	}
	for _, e := range engines {
		mustExec(t, e.DB(), `CREATE TABLE ev (i INT NOT NULL, PRIMARY KEY (i))`)
	}
	const n = 300
	for i := 0; i < n; i++ {
		for k, e := range engines {
			tx, err := e.DB().Begin()
			if err != nil {
				t.Fatalf("engine %d, transaction %d: %v", k, i, err)
			}
			if _, err := tx.Exec(`INSERT INTO ev VALUES (?)`, i); err != nil {
				t.Fatalf("engine %d, transaction %d: %v", k, i, err)
			}
			if i%2 == 0 {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatalf("engine %d, transaction %d: %v", k, i, err)
			}
		}
	}
	for k, e := range engines {
		if got := queryInt(t, e.DB(), `SELECT COUNT(*) FROM ev`); got != n/2 {
			t.Errorf("engine %d: %d rows, want %d", k, got, n/2)
		}
	}
}
