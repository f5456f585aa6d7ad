package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	gmssql "github.com/dolthub/go-mysql-server/sql"
	"github.com/go-sql-driver/mysql"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// Config configures a Journal.
type Config struct {
	// DB is the database (required). The Journal does not close it unless
	// it was opened by OpenURL.
	DB *sql.DB
	// Registry decodes stored events. Default: messages.SessionRegistry().
	Registry *messages.Registry
	// PollInterval bounds how late a tailer sees commits made by another
	// process (in-process commits wake tailers at once). Default 250 ms.
	PollInterval time.Duration
	// MaxRetries is how often a transaction that the database aborted for a
	// deadlock or lock timeout is retried before the error is returned.
	// Default 8.
	MaxRetries int
	// Now stamps events. Default time.Now.
	Now func() time.Time
	// RecentEventBytes bounds the memory of the events this Journal
	// committed recently, which ReadEvents and Events serve without a
	// database read (rows of other processes are always read). Default
	// DefaultRecentEventBytes; negative disables it.
	RecentEventBytes int
}

// Journal is the event journal with its projections. Safe for concurrent use.
type Journal struct {
	db      *sql.DB
	reg     *messages.Registry
	n       *names
	poll    time.Duration
	retries int
	now     func() time.Time
	hub     *hub
	recent  *recentEvents
	cache   sessionCache
	closers []func() error
	// engine is the embedded engine OpenURL opened (nil on MySQL/MariaDB or
	// a DB from Open): its counters and file feed the metrics (stats.go).
	engine *boltsql.Engine

	// afterAcquireRead, when set by a test, runs inside Acquire's
	// transaction right after it read the stream head.
	afterAcquireRead func()
	// afterMessagesReverts, when set by a test, runs inside Messages' read
	// transaction between its read of the revert state and of the rows.
	afterMessagesReverts func()
}

// Open migrates the schema and returns a Journal on cfg.DB.
func Open(ctx context.Context, cfg Config) (*Journal, error) {
	if cfg.DB == nil {
		return nil, errors.New("open journal: Config.DB is nil")
	}
	if cfg.Registry == nil {
		cfg.Registry = messages.SessionRegistry()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = 8
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RecentEventBytes == 0 {
		cfg.RecentEventBytes = DefaultRecentEventBytes
	}
	if err := migrate(ctx, cfg.DB); err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	_, server := cfg.DB.Driver().(*mysql.MySQLDriver)
	return &Journal{db: cfg.DB, reg: cfg.Registry, n: newNames("", server), poll: cfg.PollInterval,
		retries: cfg.MaxRetries, now: cfg.Now, hub: newHub(), recent: newRecentEvents(cfg.RecentEventBytes)}, nil
}

// DB is the underlying database (for admin tools and tests).
func (j *Journal) DB() *sql.DB { return j.db }

// Registry is the event registry the journal decodes with.
func (j *Journal) Registry() *messages.Registry { return j.reg }

// Close releases what OpenURL opened; a Journal from Open leaves its DB open.
func (j *Journal) Close() error {
	var errs []error
	for i := len(j.closers) - 1; i >= 0; i-- {
		errs = append(errs, j.closers[i]())
	}
	j.closers = nil
	return errors.Join(errs...)
}

var (
	qStream = stmt(`SELECT last_seq, epoch FROM {streams} WHERE session_id = ?`)
	// qStreamLocked is qStream as a locking read: on MariaDB/MySQL a plain
	// SELECT in a transaction reads its snapshot, so Acquire could bump the
	// epoch over an append the old owner committed after that snapshot and
	// hand out a stale head and sessions row. (The embedded engine's
	// read-write transactions hold the writer from their first read.)
	qStreamLocked  = stmt(`SELECT last_seq, epoch FROM {streams} WHERE session_id = ? FOR UPDATE`)
	qAdvanceStream = stmt(`UPDATE {streams} SET last_seq = ? WHERE session_id = ? AND last_seq = ? AND epoch = ?`)
	qInsertStream  = stmt(`INSERT INTO {streams} (session_id, last_seq, owner, epoch) VALUES (?, ?, ?, ?)`)
	qBumpEpoch     = stmt(`UPDATE {streams} SET epoch = ?, owner = ? WHERE session_id = ? AND epoch = ?`)
)

// Acquire makes owner the session's owner and returns a new epoch, greater
// than every earlier one. Appends with an older epoch are then ErrFenced.
// The session need not exist yet.
func (j *Journal) Acquire(ctx context.Context, sessionID, owner string) (Ownership, error) {
	own, _, _, err := j.acquire(ctx, sessionID, owner, false)
	return own, err
}

// AcquireSession is Acquire and then Session in one: the sessions row is
// read inside Acquire's transaction, as the new owner finds it (found false:
// never created; a new stream needs no read at all). An activation thus
// costs one transaction instead of a transaction and two reads, and the row
// goes to the sessionCache, where later Session and ModelHistory calls
// prove it current with one read of the stream head.
func (j *Journal) AcquireSession(ctx context.Context, sessionID, owner string) (own Ownership, s Session, found bool, err error) {
	return j.acquire(ctx, sessionID, owner, true)
}

func (j *Journal) acquire(ctx context.Context, sessionID, owner string, withSession bool) (Ownership, Session, bool, error) {
	if sessionID == "" {
		return Ownership{}, Session{}, false, errors.New("acquire: empty session ID")
	}
	if !j.cache.has(sessionID) {
		// A new session's stream does not exist yet: one INSERT, atomic on
		// its own, creates it at epoch 1 (no transaction, no read). A
		// duplicate key (or any failure) leaves the transaction below to
		// bump the existing epoch. Sessions this Journal wrote skip the try.
		if _, err := j.db.ExecContext(ctx, j.n.q(qInsertStream), sessionID, 0, owner, 1); err == nil {
			return Ownership{Epoch: 1}, Session{}, false, nil
		}
	}
	var own Ownership
	var sess Session
	var found bool
	err := j.inTx(ctx, func(tx *sql.Tx) error {
		found = false
		var last, epoch int64
		err := tx.QueryRowContext(ctx, j.n.q(qStreamLocked), sessionID).Scan(&last, &epoch)
		if j.afterAcquireRead != nil && err == nil {
			j.afterAcquireRead()
		}
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := tx.ExecContext(ctx, j.n.q(qInsertStream), sessionID, 0, owner, 1); err != nil {
				return err // a duplicate means a racing Acquire: retried by inTx
			}
			own = Ownership{Epoch: 1}
			return nil
		} else if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, j.n.q(qBumpEpoch), epoch+1, owner, sessionID, epoch)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return errRetry
		}
		own = Ownership{Epoch: epoch + 1, LastSeq: last}
		if !withSession || last == 0 { // no session before its first event
			return nil
		}
		sess, err = j.readSessionRow(ctx, tx, sessionID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		found = err == nil
		sess.LastSeq = last
		return err
	}, true)
	if err != nil {
		return Ownership{}, Session{}, false, fmt.Errorf("acquire session %s for %s: %w", sessionID, owner, err)
	}
	if found {
		j.cache.learn(sessionID, sess)
	}
	return own, sess, found, nil
}

// Append writes events as seqs expectedSeq+1.. and projects them, in one
// transaction, and returns the new last seq. ownerEpoch must be the epoch of
// the latest Acquire (0 if the session was never acquired). A stale
// expectedSeq gives ErrConflict, a superseded epoch ErrFenced, an event that
// breaks a projection ErrProjection; in every error case nothing is written.
func (j *Journal) Append(ctx context.Context, sessionID string, expectedSeq, ownerEpoch int64, events ...messages.Event) (int64, error) {
	last, _, err := j.appendTx(ctx, sessionID, expectedSeq, ownerEpoch, events, nil)
	if err != nil {
		return 0, fmt.Errorf("append session %s after seq %d: %w", sessionID, expectedSeq, err)
	}
	return last, nil
}

// appendTx is the one write path. pre, when set, runs first in the same
// transaction; if it returns done=true the transaction ends without
// writing anything (used for idempotent commands). atMicros is the
// commit-side time stamp the events were stored with (0 when pre ended it).
func (j *Journal) appendTx(ctx context.Context, sessionID string, expectedSeq, epoch int64, events []messages.Event,
	pre func(tx *sql.Tx) (done bool, err error)) (last, atMicros int64, err error) {
	if sessionID == "" {
		return 0, 0, fmt.Errorf("%w: empty session ID", ErrInvalidEvent)
	}
	if len(events) == 0 {
		return 0, 0, fmt.Errorf("%w: no events to append", ErrInvalidEvent)
	}
	if expectedSeq < 0 {
		return 0, 0, fmt.Errorf("%w: negative expected seq %d", ErrInvalidEvent, expectedSeq)
	}
	// Encode before the transaction: a bad event costs no round trip.
	payloads := make([][]byte, len(events))
	for i, e := range events {
		b, err := j.reg.Marshal(e)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: event %d: %w", ErrInvalidEvent, i, err)
		}
		payloads[i] = b
	}
	newLast := expectedSeq + int64(len(events))
	at := j.now().UnixMicro()
	done := false
	cached := j.cache.get(sessionID, expectedSeq)
	var next *cacheEntry
	err = j.inTx(ctx, func(tx *sql.Tx) error {
		done, next = false, nil
		if pre != nil {
			d, err := pre(tx)
			if err != nil || d {
				done = d
				return err
			}
		}
		if err := j.advance(ctx, tx, sessionID, expectedSeq, epoch, newLast); err != nil {
			return err
		}
		if err := j.insertEvents(ctx, tx, sessionID, expectedSeq, at, events, payloads); err != nil {
			return err
		}
		p := newProjector(ctx, tx, j.n, sessionID)
		if cached != nil {
			p.use(cached)
		}
		for i, e := range events {
			if err := p.apply(expectedSeq+1+int64(i), e); err != nil {
				return err
			}
		}
		if err := p.flush(); err != nil {
			return err
		}
		next = p.next(newLast)
		return nil
	}, false)
	if err != nil {
		j.cache.put(sessionID, nil)
		return 0, 0, err
	}
	if done {
		return expectedSeq, 0, nil
	}
	j.cache.put(sessionID, next)
	// Only a COMMIT that returned success gets here: a failed, fenced or
	// ambiguous one (an error from Commit itself) is never cached or handed
	// to tailers, who find its rows in the database if it did commit.
	rows := make([]*committed, len(events))
	for i, e := range events {
		rows[i] = newCommitted(expectedSeq+1+int64(i), e.EventType(), at, payloads[i])
	}
	j.recent.add(sessionID, rows)
	j.hub.notify(sessionID, rows)
	return newLast, at, nil
}

// advance moves the stream head from expectedSeq to newLast, checking the
// epoch. The UPDATE takes the stream row's lock, so concurrent appends to one
// session serialize here and the loser sees the winner's last_seq.
func (j *Journal) advance(ctx context.Context, tx *sql.Tx, sid string, expectedSeq, epoch, newLast int64) error {
	res, err := tx.ExecContext(ctx, j.n.q(qAdvanceStream), newLast, sid, expectedSeq, epoch)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 1 {
		return nil
	}
	var last, current int64
	err = tx.QueryRowContext(ctx, j.n.q(qStream), sid).Scan(&last, &current)
	if errors.Is(err, sql.ErrNoRows) {
		switch {
		case epoch != 0:
			return fmt.Errorf("%w: epoch %d was never acquired", ErrFenced, epoch)
		case expectedSeq != 0:
			return &ConflictError{Expected: expectedSeq, Last: 0}
		}
		if _, err := tx.ExecContext(ctx, j.n.q(qInsertStream), sid, newLast, "", 0); err != nil {
			if isDuplicate(err) {
				return fmt.Errorf("%w: a concurrent writer created the stream", ErrConflict)
			}
			return err
		}
		return nil
	} else if err != nil {
		return err
	}
	if current != epoch {
		return fmt.Errorf("%w: epoch %d, current %d", ErrFenced, epoch, current)
	}
	return &ConflictError{Expected: expectedSeq, Last: last}
}

func (j *Journal) insertEvents(ctx context.Context, tx *sql.Tx, sid string, after, at int64, events []messages.Event, payloads [][]byte) error {
	args := make([]any, 0, mEvents.cols*len(events))
	for i, e := range events {
		t := e.EventType()
		args = append(args, sid, after+1+int64(i), t.Name, t.Version, at, payloads[i])
	}
	if err := execMulti(ctx, tx, j.n, &mEvents, args); err != nil {
		if isDuplicate(err) {
			return fmt.Errorf("%w: event seq already written", ErrConflict)
		}
		return err
	}
	return nil
}

// errRetry asks inTx to run the transaction again.
var errRetry = errors.New("retry transaction")

// inTx runs fn in a transaction, committing on nil. Deadlocks and lock
// timeouts (and errRetry; and duplicates when retryDup) are retried.
func (j *Journal) inTx(ctx context.Context, fn func(tx *sql.Tx) error, retryDup bool) error {
	var err error
	for attempt := 0; attempt <= j.retries; attempt++ {
		err = j.tryTx(ctx, fn)
		if err == nil {
			return nil
		}
		if !(errors.Is(err, errRetry) || isTransient(err) || (retryDup && isDuplicate(err))) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (j *Journal) tryTx(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil { // no panic escapes the journal
			tx.Rollback()
			err = fmt.Errorf("journal transaction panicked: %v", p)
		}
	}()
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// isDuplicate reports a duplicate-key error from MySQL/MariaDB or the
// embedded engine.
func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1062
	}
	if gmssql.ErrPrimaryKeyViolation.Is(err) || gmssql.ErrUniqueKeyViolation.Is(err) || gmssql.ErrDuplicateEntry.Is(err) {
		return true
	}
	var ue gmssql.UniqueKeyError
	if errors.As(err, &ue) {
		return true
	}
	var num interface{ Number() int } // vitess *mysql.SQLError
	if errors.As(err, &num) && num.Number() == 1062 {
		return true
	}
	return false
}

// isTransient reports a deadlock, a lock-wait timeout or a table definition
// that changed under the transaction (1412: the embedded engine refuses a
// write whose table an index DDL changed while it waited): the transaction
// was rolled back and can be run again.
func isTransient(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return transientCode(int(me.Number))
	}
	var num interface{ Number() int }
	if errors.As(err, &num) {
		return transientCode(num.Number())
	}
	return false
}

func transientCode(n int) bool { return n == 1213 || n == 1205 || n == 1412 }
