package boltsql

import (
	"context"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/eventscheduler"
	gsql "github.com/dolthub/go-mysql-server/sql"
)

// The event scheduler runs the events CREATE EVENT stores (events.go), as
// MySQL's does with its default event_scheduler=ON: an event belongs to
// the database, not to the connection that made it, so it runs whether it
// was created over the MySQL-wire listener or through DB(), and after a
// reopen. Options.NoEventScheduler turns it off (MySQL's
// --event-scheduler=DISABLED: events are stored and shown, never run).
//
// go-mysql-server's executor wakes once per period, takes a session from
// schedSessions, checks its list in memory and ends the session; its
// transaction opens bbolt only when a table is touched, so an idle wake
// reads nothing and never waits for or holds the writer. It runs at most
// one due event per wake, so the period is its smallest: one second.
const eventPeriod = 1 // seconds

// schedSessions hands go-mysql-server's event scheduler its sessions and
// knows which are still in use, so Close can wait for them before it closes
// the file. go-mysql-server ends every session it takes (sql.SessionEnd).
type schedSessions struct {
	e *Engine

	mu     sync.Mutex
	closed bool          // Close began: hand out sessions that cannot touch the file
	live   int           // engine sessions handed out and not ended
	ended  chan struct{} // closed and replaced when live drops to 0
	taken  uint64        // engine sessions handed out since Open (tests)
}

// startEventScheduler starts go-mysql-server's scheduler on this engine,
// loading the stored events.
func (e *Engine) startEventScheduler() error {
	e.sched = &schedSessions{e: e, ended: make(chan struct{})}
	return e.sqle.InitializeEventScheduler(e.sched.context, eventscheduler.SchedulerOn, eventPeriod)
}

// context is the scheduler's context getter. Its sessions have the
// engine's privileges (newSession), as the in-process driver's and the
// wire server's do; the executor sets the event's definer as the client.
//
// After Close began it returns a session without transactions: the
// executor's loop cannot be stopped, only told to stop, and it checks that
// after it took a session and began its transaction; a getter that failed
// then, or a transaction that failed on the closed file, would send it
// round its loop forever instead.
func (s *schedSessions) context() (*gsql.Context, error) {
	id := 1<<31 + s.e.connIDs.Add(1) // in-process ids, as the driver's
	client := gsql.Client{User: "event_scheduler", Address: "localhost"}
	base := gsql.NewBaseSessionWithClientServer("boltsql", client, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// Tell it again: an executor that first ran after Close (an engine
		// closed right after Open) cleared its stop flag when it started.
		s.e.sqle.EventScheduler.Close()
		return gsql.NewContext(context.Background(), gsql.WithSession(base)), nil
	}
	s.live++
	s.taken++
	sess := s.e.newSession(base)
	sess.onEnd = s.end
	return s.e.newContext(context.Background(), sess, ""), nil
}

func (s *schedSessions) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live--; s.live == 0 {
		close(s.ended)
		s.ended = make(chan struct{})
	}
}

// stop stops the scheduler: no event starts after it returns, and the
// ones running have ended, or grace passed. The executor's goroutine
// returns at its next wake, within a period, without touching the file.
func (s *schedSessions) stop(grace time.Duration) {
	// Tells the executor to stop (under mu, as context does: it writes the
	// scheduler's status), then waits for the event bodies running in
	// go-mysql-server's background threads.
	s.mu.Lock()
	s.closed = true
	s.e.sqle.EventScheduler.Close()
	s.mu.Unlock()
	_ = s.e.sqle.BackgroundThreads.Shutdown()
	deadline := time.After(grace)
	for {
		s.mu.Lock()
		live, ended := s.live, s.ended
		s.mu.Unlock()
		if live == 0 {
			return
		}
		select {
		case <-ended:
		case <-deadline:
			return // a stuck event: the writer's close rolls its transaction back
		}
	}
}
