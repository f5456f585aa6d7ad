package boltsql

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// taken is how many engine sessions the event scheduler took: one per
// wake, one per event it runs.
func (s *schedSessions) takenCount() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taken
}

// waitFor polls cond until it holds; the scheduler wakes once a second,
// so the conditions below take seconds. The deadline is a backstop.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// executors are the goroutines running go-mysql-server's event executor
// loop, by goroutine id (other tests' engines may still have theirs).
func executors() map[string]bool {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	ids := map[string]bool{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		// Not "(*eventExecutor).start": a goroutine not yet run shows its
		// go statement's wrapper instead.
		if bytes.Contains(g, []byte("created by github.com/dolthub/go-mysql-server/eventscheduler.(*EventScheduler).loadEventsAndStartEventExecutor")) {
			id, _, _ := bytes.Cut(bytes.TrimPrefix(g, []byte("goroutine ")), []byte(" "))
			ids[string(id)] = true
		}
	}
	return ids
}

// newExecutors are the executors running now that were not in before.
func newExecutors(before map[string]bool) []string {
	var out []string
	for id := range executors() {
		if !before[id] {
			out = append(out, id)
		}
	}
	return out
}

// TestEventsRunOnSchedule: an event ON SCHEDULE EVERY 1 SECOND fires again
// and again; a one-time event fires once and is dropped (ON COMPLETION NOT
// PRESERVE); DROP EVENT stops one; a closed engine runs nothing and its
// scheduler's goroutine returns. Before, events were stored and never ran.
func TestEventsRunOnSchedule(t *testing.T) {
	before := executors()
	e, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n := len(newExecutors(before)); n != 1 {
		t.Fatalf("Open started %d event executors, want 1", n)
	}
	db := e.DB()
	mustExec(t, db, "CREATE TABLE ticks (id INT PRIMARY KEY AUTO_INCREMENT, what VARCHAR(10))")
	count := func(what string) int64 {
		return queryInt(t, db, "SELECT COUNT(*) FROM ticks WHERE what = ?", what)
	}
	events := func(name string) int64 {
		return queryInt(t, db, "SELECT COUNT(*) FROM information_schema.events WHERE event_name = ?", name)
	}
	// wakes waits for n more wakes of the scheduler.
	wakes := func(n uint64) {
		t.Helper()
		w := e.sched.takenCount()
		waitFor(t, "the scheduler woke", func() bool { return e.sched.takenCount() >= w+n })
	}
	mustExec(t, db, "CREATE EVENT every_second ON SCHEDULE EVERY 1 SECOND DO INSERT INTO ticks (what) VALUES ('every')")
	mustExec(t, db, "CREATE EVENT once ON SCHEDULE AT CURRENT_TIMESTAMP + INTERVAL 1 SECOND DO INSERT INTO ticks (what) VALUES ('once')")
	waitFor(t, "the every-second event fired twice", func() bool { return count("every") >= 2 })
	waitFor(t, "the one-time event fired and was dropped", func() bool { return count("once") == 1 && events("once") == 0 })

	mustExec(t, db, "DROP EVENT every_second")
	wakes(2) // an execution begun before the drop has ended
	n := count("every")
	wakes(3)
	if got := count("every"); got != n {
		t.Fatalf("a dropped event ran: %d rows, then %d", n, got)
	}
	if got := count("once"); got != 1 {
		t.Fatalf("the one-time event ran %d times", got)
	}

	mustExec(t, db, "CREATE EVENT again ON SCHEDULE EVERY 1 SECOND DO INSERT INTO ticks (what) VALUES ('again')")
	waitFor(t, "the new event fired", func() bool { return count("again") >= 1 })
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	taken := e.sched.takenCount()
	waitFor(t, "the scheduler's goroutine returned after Close", func() bool { return len(newExecutors(before)) == 0 })
	if got := e.sched.takenCount(); got != taken {
		t.Fatalf("a closed engine's scheduler took %d sessions to run events", got-taken)
	}
}

// TestIdleSchedulerTouchesNothing: a wake with no event due reads nothing
// and writes nothing, so the journal's writer never waits for it.
func TestIdleSchedulerTouchesNothing(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	mustExec(t, e.DB(), "CREATE TABLE t (id INT PRIMARY KEY)")
	mustExec(t, e.DB(), "CREATE EVENT later ON SCHEDULE EVERY 1 DAY STARTS '2037-01-01 00:00:00' DO INSERT INTO t VALUES (1)")
	w := e.sched.takenCount()
	waitFor(t, "the scheduler woke", func() bool { return e.sched.takenCount() >= w+1 })
	reads, commits := e.bolt.Stats().TxN, e.w.syncs.Load()
	waitFor(t, "the scheduler woke twice more", func() bool { return e.sched.takenCount() >= w+3 })
	if r, c := e.bolt.Stats().TxN, e.w.syncs.Load(); r != reads || c != commits {
		t.Fatalf("an idle wake opened %d read transactions and made %d commits", r-reads, c-commits)
	}
}

// TestNoEventSchedulerRunsNothing: with the scheduler off, events are
// stored and never run, and no executor goroutine starts.
func TestNoEventSchedulerStartsNone(t *testing.T) {
	before := executors()
	e := openTest(t, Options{NoSync: true, NoEventScheduler: true})
	mustExec(t, e.DB(), "CREATE TABLE t (id INT PRIMARY KEY)")
	mustExec(t, e.DB(), "CREATE EVENT soon ON SCHEDULE EVERY 1 SECOND DO INSERT INTO t VALUES (1)")
	if n := len(newExecutors(before)); n != 0 || e.sched != nil {
		t.Fatalf("%d executors with the scheduler off", n)
	}
}

// TestCloseRightAfterOpenStopsTheExecutor: an engine closed before its
// executor's goroutine first ran still stops it (the executor clears its
// stop flag when it starts; before, such loops ran forever).
func TestCloseRightAfterOpenStopsTheExecutor(t *testing.T) {
	before := executors()
	for range 5 {
		e, err := Open(t.TempDir(), Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the closed engines' executors returned", func() bool { return len(newExecutors(before)) == 0 })
}
