package boltsql

import (
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
)

// Session is a go-mysql-server session whose transactions are boltsql txns.
type Session struct {
	*sql.BaseSession
	eng *Engine
	cur *txn // the last transaction started; the engine may drop it from the session without ending it

	spareMu sync.Mutex // SessionEnd may come from another goroutine
	spare   []undoRec  // an ended transaction's undo log, emptied, for the next one

	onEnd func() // called once at SessionEnd (the event scheduler's sessions)
}

// keepUndo keeps t's undo log for the session's next transaction.
func (s *Session) keepUndo(t *txn) {
	if u := t.takeUndo(); u != nil {
		s.spareMu.Lock()
		s.spare = u
		s.spareMu.Unlock()
	}
}

func (s *Session) takeSpareUndo() []undoRec {
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	u := s.spare
	s.spare = nil
	return u
}

var (
	_ sql.TransactionSession    = (*Session)(nil)
	_ sql.LifecycleAwareSession = (*Session)(nil)
)

func (e *Engine) newSession(base *sql.BaseSession) *Session {
	base.SetCurrentDatabase(e.opts.Database)
	// Without user accounts every connection may do everything; the
	// session says so, since go-mysql-server's information_schema filters
	// by the session's privileges: with none, routines and their
	// parameters were hidden, and column_statistics panicked (a nil
	// iterator when the set's counter is 0). The set is only read.
	base.SetPrivilegeSet(e.privileges, 1)
	return &Session{BaseSession: base, eng: e}
}

// StartTransaction implements sql.TransactionSession. A transaction still
// attached to the session (the engine drops some on error paths) is rolled
// back first, so it cannot keep the writer.
func (s *Session) StartTransaction(ctx *sql.Context, char sql.TransactionCharacteristic) (sql.Transaction, error) {
	if s.cur != nil && !s.cur.done && s.cur.snapOn {
		// A statement of the current transaction is running: this one is
		// nested in it (the statements of a procedure a trigger calls,
		// which go-mysql-server runs each in a transaction of its own).
		// Rolling the running one back, as below, lost its changes and its
		// writer mid-statement ("transaction already ended"); the nested
		// statements are part of it instead, as in MySQL.
		return &nestedTxn{t: s.cur}, nil
	}
	if old, ok := s.GetTransaction().(*txn); ok && old != nil {
		_ = old.rollback()
	}
	if s.cur != nil {
		_ = s.cur.rollback() // no-op when it ended normally
		s.keepUndo(s.cur)
	}
	t := &txn{eng: s.eng, readOnly: char == sql.ReadOnly, undo: s.takeSpareUndo()}
	s.cur = t
	if !t.readOnly && !isReadStatement(ctx.Query()) {
		t.mayWrite = true
		s.eng.writers.Add(1)
	}
	return t, nil
}

func (s *Session) CommitTransaction(ctx *sql.Context, tx sql.Transaction) error {
	t, ok := tx.(*txn)
	if !ok {
		return nil
	}
	return t.commit()
}

func (s *Session) Rollback(ctx *sql.Context, tx sql.Transaction) error {
	t, ok := tx.(*txn)
	if !ok {
		return nil
	}
	return t.rollback()
}

func (s *Session) CreateSavepoint(ctx *sql.Context, tx sql.Transaction, name string) error {
	if t, ok := tx.(*txn); ok {
		t.savepoint(name)
	}
	return nil
}

func (s *Session) RollbackToSavepoint(ctx *sql.Context, tx sql.Transaction, name string) error {
	if t, ok := tx.(*txn); ok {
		return t.rollbackToSavepoint(name)
	}
	return nil
}

func (s *Session) ReleaseSavepoint(ctx *sql.Context, tx sql.Transaction, name string) error {
	if t, ok := tx.(*txn); ok {
		return t.releaseSavepoint(name)
	}
	return nil
}

// abortStatement ends the statement that failed with why (a panic): its
// transaction is rolled back, and an explicit one fails at COMMIT.
func (s *Session) abortStatement(why error) {
	if t, ok := s.GetTransaction().(*txn); ok && t != nil {
		t.abort(why)
	}
	if s.cur != nil {
		s.cur.abort(why)
	}
	s.CommandEnd()
}

// CommandBegin implements sql.LifecycleAwareSession.
func (s *Session) CommandBegin() error { return nil }

// CommandEnd ends an autocommit transaction the engine left behind after an
// error, so a failed statement never keeps the writer.
func (s *Session) CommandEnd() { s.endLeftover(false) }

// SessionEnd rolls back whatever is open.
func (s *Session) SessionEnd() {
	s.endLeftover(true)
	if f := s.onEnd; f != nil {
		s.onEnd = nil
		f()
	}
}

func (s *Session) endLeftover(all bool) {
	// A transaction the engine detached from the session without ending it
	// (some error paths do) would otherwise hold the writer forever.
	if s.cur != nil && s.GetTransaction() != sql.Transaction(s.cur) {
		_ = s.cur.rollback()
		s.keepUndo(s.cur)
		s.cur = nil
	}
	t, ok := s.GetTransaction().(*txn)
	if !ok || t == nil {
		return
	}
	if !all && (s.GetIgnoreAutoCommit() || !s.autocommit()) {
		return
	}
	_ = t.rollback()
	s.SetTransaction(nil)
	if all {
		s.SetIgnoreAutoCommit(false)
	}
}

func (s *Session) autocommit() bool {
	v, err := s.GetSessionVariable(nil, "autocommit")
	if err != nil {
		return true
	}
	on, ok := asInt64(v)
	return !ok || on != 0
}

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }

// isReadStatement recognizes autocommit statements that cannot write, so
// group commit does not wait for them.
func isReadStatement(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n(")
	if len(q) < 4 {
		return false
	}
	switch w := q[:4]; {
	case strings.EqualFold(w, "sele"), strings.EqualFold(w, "show"), strings.EqualFold(w, "expl"), strings.EqualFold(w, "desc"):
		return !containsFoldASCII(q, "for update")
	}
	return false
}

// containsFoldASCII is strings.Contains(strings.ToLower(s), lower) for
// lower = "for update" without lowering a copy of s. Besides ASCII, only
// the Kelvin sign and U+0130 lower to ASCII letters ("k", "i" + a combining
// dot), and neither letter is in the needle.
func containsFoldASCII(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for ; j < len(lower); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// nestedTxn is the transaction of a statement running inside another
// statement of the same session (see StartTransaction): it works in the
// outer statement's transaction (txnOf), which alone commits or rolls back.
// Its reads see the rows as they are (its changes go into the outer
// statement's snapshot, which the outer statement keeps reading through),
// and a failing nested statement undoes its own changes as any does.
type nestedTxn struct{ t *txn }

var _ sql.Transaction = (*nestedTxn)(nil)

func (n *nestedTxn) String() string   { return "boltsql nested statement" }
func (n *nestedTxn) IsReadOnly() bool { return n.t.readOnly }
