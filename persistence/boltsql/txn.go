package boltsql

import (
	"errors"
	"fmt"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	bolt "go.etcd.io/bbolt"
)

// txn is one SQL transaction. It opens bbolt lazily: an autocommit statement
// that only reads runs on a read snapshot that never blocks the writer; a
// write (or the first table access of an explicit read-write transaction)
// takes a writer turn and then sees the latest state and excludes other
// writers until COMMIT or ROLLBACK. Every change is recorded in an undo log,
// which serves statement rollback, savepoints and ROLLBACK.
type txn struct {
	eng      *Engine
	readOnly bool // START TRANSACTION READ ONLY

	mu       sync.Mutex // the wire server may end a session while a command is running
	decided  bool       // explicit vs autocommit has been determined
	explicit bool
	rtx      *bolt.Tx
	turn     *turn
	wtx      *bolt.Tx
	undo     []undoRec
	drops    [][]byte // buckets to delete at commit (DROP TABLE/INDEX)
	dirty    bool
	done     bool
	mayWrite bool  // counted in eng.writers until done
	failed   error // why the transaction ended without the caller asking
	saves    []savepoint

	// The running data-changing statement's snapshot: per bucket, each key
	// it has written and the value the key had when it began (nil: absent).
	// Its reads go through it, so it sees the rows as they were when it
	// began, as MySQL's statements do: UPDATE … JOIN re-reading a row it
	// has updated updated it again, once per joined row. Only the
	// statement's goroutine touches it.
	snapOn bool
	snap   map[string]map[string][]byte
}

func (t *txn) beginSnapshot() {
	if !t.snapOn {
		t.snapOn, t.snap = true, nil
	}
}

func (t *txn) endSnapshot() { t.snapOn, t.snap = false, nil }

// noteOld records key's value at the start of the running statement.
func (t *txn) noteOld(bucket, key, prev []byte) {
	m := t.snap[string(bucket)]
	if m == nil {
		if t.snap == nil {
			t.snap = map[string]map[string][]byte{}
		}
		m = map[string][]byte{}
		t.snap[string(bucket)] = m
	}
	if _, seen := m[string(key)]; !seen {
		m[string(key)] = prev
	}
}

// snapshotOf is bucket's changed keys in the running statement's snapshot,
// nil when it has none.
func (t *txn) snapshotOf(bucket []byte) map[string][]byte {
	if !t.snapOn || t.snap == nil {
		return nil
	}
	return t.snap[string(bucket)]
}

type savepoint struct {
	name string
	mark int
}

// undoRec restores one key (or drops a bucket created by this transaction,
// or reverts an in-memory catalog change).
type undoRec struct {
	bucket     []byte
	key        []byte
	prev       []byte // nil: the key did not exist
	dropBucket bool
	catalog    func()
}

var _ sql.Transaction = (*txn)(nil)

func (t *txn) String() string   { return "boltsql transaction" }
func (t *txn) IsReadOnly() bool { return t.readOnly }

var errTxnDone = errors.New("boltsql: transaction already ended")

// decide records whether this transaction spans statements (START
// TRANSACTION, or autocommit off); explicit read-write ones take the writer
// at their first table access so that a read followed by a write is serializable.
func (t *txn) decide(ctx *sql.Context) {
	if t.decided {
		return
	}
	t.decided = true
	if ctx.GetIgnoreAutoCommit() {
		t.explicit = true
		return
	}
	if v, err := ctx.GetSessionVariable(ctx, "autocommit"); err == nil {
		if on, ok := asInt64(v); ok && on == 0 {
			t.explicit = true
		}
	}
}

// readTx returns the bbolt transaction reads of this statement use.
func (t *txn) readTx(ctx *sql.Context) (*bolt.Tx, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return nil, errTxnDone
	}
	if t.wtx != nil {
		return t.wtx, nil
	}
	t.decide(ctx)
	if t.explicit && !t.readOnly {
		return t.acquireLocked(ctx)
	}
	if t.rtx == nil {
		rtx, err := t.eng.bolt.Begin(false)
		if err != nil {
			return nil, fmt.Errorf("begin read transaction: %w", err)
		}
		t.rtx = rtx
	}
	return t.rtx, nil
}

// writeTx returns the bbolt write transaction, taking a writer turn first.
func (t *txn) writeTx(ctx *sql.Context) (*bolt.Tx, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return nil, errTxnDone
	}
	if t.wtx != nil {
		return t.wtx, nil
	}
	if t.readOnly {
		return nil, sql.ErrReadOnlyTransaction.New()
	}
	t.decide(ctx)
	return t.acquireLocked(ctx)
}

func (t *txn) acquireLocked(ctx *sql.Context) (*bolt.Tx, error) {
	// A read transaction held by this goroutine while waiting for the writer
	// can deadlock bbolt (a commit that grows the file waits for readers).
	if t.rtx != nil {
		_ = t.rtx.Rollback()
		t.rtx = nil
	}
	tu, wtx, err := t.eng.w.acquire(ctx)
	if err != nil {
		return nil, err
	}
	tu.owner.Store(t)
	t.turn, t.wtx = tu, wtx
	return wtx, nil
}

// put writes key=val in bucket, logging the previous value. bbolt keeps
// val until the transaction ends, so callers never reuse it (nor key, which
// the undo record shares).
//
// The undo record shares the previous value's bytes instead of copying
// them: in a write transaction they stay valid until the bbolt commit
// (they are mmap pages, which bbolt neither writes nor remaps before the
// commit, or values put earlier in the same bbolt transaction, never
// reused), and the undo log is used only while this SQL transaction holds
// its writer turn, which ends before that commit.
func (t *txn) put(b *bolt.Bucket, bucket, key, val []byte) error {
	return t.putPrev(b, bucket, key, val, b.Get(key))
}

// putNew is put for a key the caller has just seen absent in b.
func (t *txn) putNew(b *bolt.Bucket, bucket, key, val []byte) error {
	return t.putPrev(b, bucket, key, val, nil)
}

func (t *txn) putPrev(b *bolt.Bucket, bucket, key, val, prev []byte) error {
	if err := b.Put(key, val); err != nil {
		return err
	}
	if t.snapOn {
		t.noteOld(bucket, key, prev)
	}
	t.log(undoRec{bucket: bucket, key: key, prev: prev})
	return nil
}

// del deletes key from bucket, logging the previous value (shared, as in
// put). Callers never reuse key.
func (t *txn) del(b *bolt.Bucket, bucket, key []byte) error {
	prev := b.Get(key)
	if prev == nil {
		return nil
	}
	if err := b.Delete(key); err != nil {
		return err
	}
	if t.snapOn {
		t.noteOld(bucket, key, prev)
	}
	t.log(undoRec{bucket: bucket, key: key, prev: prev})
	return nil
}

// log appends an undo record. A journal transaction writes a few rows with
// an index entry or two each: room for 8 records up front saves the
// slice's first three doublings.
func (t *txn) log(rec undoRec) {
	if t.undo == nil {
		t.undo = make([]undoRec, 0, 8)
	}
	t.undo = append(t.undo, rec)
	t.dirty = true
}

func (t *txn) createBucket(name []byte) (*bolt.Bucket, error) {
	b, err := t.wtx.CreateBucket(name)
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", name, err)
	}
	t.log(undoRec{bucket: append([]byte(nil), name...), dropBucket: true})
	return b, nil
}

func (t *txn) onUndo(f func()) {
	t.log(undoRec{catalog: f})
}

// undoTo reverts every change after mark, newest first.
func (t *txn) undoTo(mark int) error {
	var firstErr error
	for i := len(t.undo) - 1; i >= mark; i-- {
		r := t.undo[i]
		switch {
		case r.catalog != nil:
			r.catalog()
		case r.dropBucket:
			if err := t.wtx.DeleteBucket(r.bucket); err != nil && firstErr == nil {
				firstErr = err
			}
		default:
			b := t.wtx.Bucket(r.bucket)
			if b == nil {
				continue // its creation was undone already
			}
			var err error
			if r.prev == nil {
				err = b.Delete(r.key)
			} else {
				err = b.Put(r.key, r.prev)
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	t.undo = t.undo[:mark]
	return firstErr
}

// maxSpareUndo bounds the undo log a session keeps for its next
// transaction, so one large transaction does not pin its log.
const maxSpareUndo = 64

// takeUndo hands an ended transaction's undo log, emptied, to the
// session's next transaction (a write transaction would otherwise grow a
// new one); nil while t is still running. Once t is done nothing reads its
// log: every path that does checks done or needs the writer turn it gave up.
func (t *txn) takeUndo() []undoRec {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.done || cap(t.undo) == 0 || cap(t.undo) > maxSpareUndo {
		return nil
	}
	u := t.undo[:cap(t.undo)]
	clear(u) // keys and values of the last transaction
	t.undo = nil
	return u[:0]
}

func (t *txn) mark() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.undo)
}

// discardSince is statement rollback.
func (t *txn) discardSince(mark int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wtx == nil || mark > len(t.undo) {
		return nil
	}
	if err := t.undoTo(mark); err != nil {
		t.poisonLocked()
		return fmt.Errorf("statement rollback failed, transaction aborted: %w", err)
	}
	return nil
}

// abort rolls back a transaction its owner abandoned; a later COMMIT fails.
func (t *txn) abort(why error) {
	t.mu.Lock()
	if !t.done {
		t.failed = why
	}
	t.mu.Unlock()
	_ = t.rollback()
}

func (t *txn) poisonLocked() {
	t.failed = errors.New("boltsql: transaction aborted: statement rollback failed")
	if t.turn != nil {
		_ = t.turn.finish(turnPoisoned)
	}
	t.turn, t.wtx = nil, nil
	t.end()
}

func (t *txn) end() {
	t.done = true
	if t.mayWrite {
		t.mayWrite = false
		t.eng.writers.Add(-1)
	}
}

func (t *txn) commit() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return t.failed
	}
	t.end()
	if t.rtx != nil {
		_ = t.rtx.Rollback()
		t.rtx = nil
	}
	if t.turn == nil {
		return nil
	}
	tu := t.turn
	for _, name := range t.drops {
		if err := t.wtx.DeleteBucket(name); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			_ = t.undoTo(0)
			t.turn, t.wtx = nil, nil
			_ = tu.finish(turnPoisoned)
			return fmt.Errorf("commit: drop %s: %w", name, err)
		}
	}
	if t.dirty {
		if err := t.applyRowCounts(); err != nil {
			_ = t.undoTo(0)
			t.turn, t.wtx = nil, nil
			_ = tu.finish(turnPoisoned)
			return fmt.Errorf("commit: row counts: %w", err)
		}
	}
	t.turn, t.wtx = nil, nil
	if !t.dirty {
		return tu.finish(turnRolledBack) // nothing written: no fsync to wait for
	}
	if err := tu.finish(turnCommitted); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (t *txn) rollback() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return nil
	}
	t.end()
	if t.rtx != nil {
		_ = t.rtx.Rollback()
		t.rtx = nil
	}
	if t.turn == nil {
		return nil
	}
	tu := t.turn
	err := t.undoTo(0)
	t.turn, t.wtx = nil, nil
	if err != nil {
		_ = tu.finish(turnPoisoned)
		return fmt.Errorf("rollback: %w", err)
	}
	return tu.finish(turnRolledBack)
}

func (t *txn) savepoint(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.saves = append(t.saves, savepoint{name: name, mark: len(t.undo)})
}

func (t *txn) findSavepoint(name string) int {
	for i := len(t.saves) - 1; i >= 0; i-- {
		if equalFold(t.saves[i].name, name) {
			return i
		}
	}
	return -1
}

func (t *txn) rollbackToSavepoint(name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.findSavepoint(name)
	if i < 0 {
		return sql.ErrSavepointDoesNotExist.New(name)
	}
	if t.wtx != nil {
		if err := t.undoTo(t.saves[i].mark); err != nil {
			t.poisonLocked()
			return err
		}
	}
	t.saves = t.saves[:i+1]
	return nil
}

func (t *txn) releaseSavepoint(name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.findSavepoint(name)
	if i < 0 {
		return sql.ErrSavepointDoesNotExist.New(name)
	}
	t.saves = t.saves[:i]
	return nil
}
