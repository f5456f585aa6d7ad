package boltsql

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	bolt "go.etcd.io/bbolt"
)

// The writer grants the single bbolt write transaction to one SQL write
// transaction at a time (a "turn") and group-commits: when a turn commits
// and another SQL transaction is already waiting, the next turn runs in the
// same bbolt transaction; the bbolt transaction is committed (one fsync) when
// nobody is waiting or maxBatch turns have committed, and only then do the
// COMMITs of that batch return. Turns never interleave, so SQL write
// transactions are serializable; a turn that rolls back has undone its
// changes before it ends, so a batch holds only whole committed transactions.

// turnEnd says how a turn finished.
type turnEnd int

const (
	turnCommitted  turnEnd = iota // changes stay; wait for the batch's fsync
	turnRolledBack                // changes already undone
	turnPoisoned                  // undo failed: the whole bbolt transaction must be discarded
)

type turn struct {
	granted chan grant   // loop → holder
	ended   chan turnEnd // holder → loop
	durable chan error   // loop → holder, for committed turns
	wait    *time.Timer  // the lock-wait timeout while acquiring; stopped otherwise
	w       *writer      // whose pool it returns to
	owner   atomic.Pointer[txn]
}

// Turns are pooled per writer: a write transaction would otherwise
// allocate three channels and a timer. A turn goes back to its writer's
// pool only when the loop can no longer touch it: acquire failed before the
// loop took it, or the loop granted an error, or finish has handed over
// the turn's end and, for a committed turn, received its durable result
// (the last thing the loop sends it). A rolled-back turn's end may still be
// in its channel when it is reused; that is safe because only this
// writer's loop reads it, and that loop takes the end it is waiting for
// before it reads the next request. (A pool shared between writers would
// let another writer's loop take the stale end.)
func (w *writer) newTurn() any {
	t := &turn{w: w, granted: make(chan grant, 1), ended: make(chan turnEnd, 1), durable: make(chan error, 1),
		wait: time.NewTimer(time.Hour)}
	t.wait.Stop()
	return t
}

func (t *turn) release() {
	t.owner.Store(nil)
	t.w.turns.Put(t)
}

type grant struct {
	tx  *bolt.Tx
	err error
}

type writer struct {
	db        *bolt.DB
	pending   func() int64 // SQL write transactions started and not yet ended
	maxWait   time.Duration
	requests  chan *turn
	quit      chan struct{}
	stopped   chan struct{}
	maxBatch  int
	lockWait  time.Duration
	afterFail func() // called when a batch's commit failed (reload in-memory state)
	turns     sync.Pool

	current   atomic.Pointer[turn] // the turn holding the write transaction
	syncs     atomic.Uint64        // bbolt commits (each one fsync)
	committed atomic.Uint64        // SQL transactions made durable
	syncNanos atomic.Uint64        // time spent in bbolt commits
}

func newWriter(db *bolt.DB, maxBatch int, lockWait, maxWait time.Duration, pending func() int64, afterFail func()) *writer {
	w := &writer{db: db, requests: make(chan *turn), quit: make(chan struct{}), stopped: make(chan struct{}),
		maxBatch: maxBatch, lockWait: lockWait, maxWait: maxWait, pending: pending, afterFail: afterFail}
	w.turns.New = w.newTurn
	go w.loop()
	return w
}

var errEngineClosed = errors.New("boltsql: engine is closed")

// acquire waits for the write transaction, at most the lock-wait timeout.
func (w *writer) acquire(ctx context.Context) (*turn, *bolt.Tx, error) {
	t := w.turns.Get().(*turn)
	// Go 1.23+ timers: after Stop, Reset starts afresh with no stale tick.
	t.wait.Reset(w.lockWait)
	select {
	case w.requests <- t:
		t.wait.Stop()
	case <-t.wait.C:
		t.release()
		return nil, nil, mysql.NewSQLError(mysql.ERLockWaitTimeout, mysql.SSUnknownSQLState,
			"Lock wait timeout exceeded after %s waiting for the write transaction; try restarting transaction", w.lockWait)
	case <-ctx.Done():
		t.wait.Stop()
		t.release()
		return nil, nil, ctx.Err()
	case <-w.quit:
		t.wait.Stop()
		t.release()
		return nil, nil, errEngineClosed
	}
	g := <-t.granted
	if g.err != nil {
		t.release()
		return nil, nil, g.err
	}
	return t, g.tx, nil
}

// finish ends a turn; for a committed turn it returns once the batch holding
// it is durable (or failed). The turn is released: callers drop it.
func (t *turn) finish(end turnEnd) error {
	t.ended <- end
	var err error
	if end == turnCommitted {
		err = <-t.durable
	}
	t.release()
	return err
}

func (w *writer) loop() {
	defer close(w.stopped)
	var tx *bolt.Tx
	var batch []*turn
	// turns counts every SQL transaction run in the open bbolt transaction,
	// rolled back ones included, and oldest is when its first commit
	// arrived: without these bounds, writers that keep conflicting and
	// retrying would keep the batch open forever, so the commits already in
	// it never become durable or visible (a livelock).
	turns := 0
	var oldest time.Time
	lastSync := w.maxWait
	flush := func(discard error) {
		if tx == nil {
			return
		}
		var err error
		if len(batch) == 0 || discard != nil {
			_ = tx.Rollback()
			err = discard
		} else {
			start := time.Now()
			if err = tx.Commit(); err != nil {
				err = fmt.Errorf("commit to disk: %w", err)
			}
			lastSync = time.Since(start)
			w.syncs.Add(1)
			w.syncNanos.Add(uint64(lastSync))
			if err == nil {
				w.committed.Add(uint64(len(batch)))
			}
		}
		if err != nil && len(batch) > 0 && w.afterFail != nil {
			w.afterFail()
		}
		for _, t := range batch {
			t.durable <- err
		}
		tx, batch, turns = nil, batch[:0], 0
	}
	for {
		var t *turn
		if tx == nil {
			select {
			case t = <-w.requests:
			case <-w.quit:
				return
			}
		} else if t = w.next(len(batch) > 0, lastSync); t == nil {
			flush(nil)
			continue
		}
		if tx == nil {
			var err error
			if tx, err = w.db.Begin(true); err != nil {
				tx = nil
				t.granted <- grant{err: fmt.Errorf("begin write transaction: %w", err)}
				continue
			}
		}
		w.current.Store(t)
		t.granted <- grant{tx: tx}
		end := <-t.ended
		w.current.Store(nil)
		turns++
		switch end {
		case turnCommitted:
			if len(batch) == 0 {
				oldest = time.Now()
			}
			batch = append(batch, t)
		case turnPoisoned:
			flush(errors.New("a transaction in this group commit could not be undone; the group was discarded"))
			continue
		}
		if len(batch) > 0 && (len(batch) >= w.maxBatch || turns >= w.maxBatch || time.Since(oldest) >= max(w.maxWait, lastSync)) {
			flush(nil)
		}
	}
}

// next returns a waiting request, or nil when the batch should be flushed.
// Writers that have started a statement but not yet asked for the writer
// (they are parsing and planning) are worth waiting for, but never longer
// than a commit takes (or maxWait): that is what lets many writers share
// one fsync instead of alternating between batches of one and many.
func (w *writer) next(haveBatch bool, lastSync time.Duration) *turn {
	select {
	case t := <-w.requests:
		return t
	default:
	}
	if !haveBatch || w.pending() <= 0 {
		return nil
	}
	wait := min(lastSync, w.maxWait)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(max(wait/16, 20*time.Microsecond))
	defer tick.Stop()
	for {
		select {
		case t := <-w.requests:
			return t
		case <-deadline.C:
			return nil
		case <-tick.C:
			if w.pending() <= 0 {
				return nil
			}
		}
	}
}

// close stops the loop. A transaction that still holds the writer after
// grace (a caller leaked it) is rolled back, so Close cannot hang.
func (w *writer) close(grace time.Duration) {
	close(w.quit)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-w.stopped:
		return
	case <-timer.C:
	}
	if cur := w.current.Load(); cur != nil {
		if owner := cur.owner.Load(); owner != nil {
			owner.abort(errEngineClosed)
		}
	}
	<-w.stopped
}
