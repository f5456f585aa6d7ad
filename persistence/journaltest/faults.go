package journaltest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// Faults makes a database refuse writes on demand, the way a full disk
// does: while failing, every statement that writes (INSERT, UPDATE,
// DELETE, REPLACE, and COMMIT) returns the error, reads still work, and
// nothing the failed statement or its transaction did is kept. Heal lets
// writes through again. It sits between database/sql and the real driver,
// so the journal sees the error exactly where a storage failure surfaces.
type Faults struct {
	err     atomic.Pointer[error]
	refused atomic.Int64
}

// ErrDiskFull is the error FailWrites uses by default: what a write to a
// full disk returns.
var ErrDiskFull error = &os.PathError{Op: "write", Path: "journal", Err: syscall.ENOSPC}

// FailWrites makes every write fail with err (ErrDiskFull when nil).
func (f *Faults) FailWrites(err error) {
	if err == nil {
		err = ErrDiskFull
	}
	f.err.Store(&err)
}

// Heal lets writes through again.
func (f *Faults) Heal() { f.err.Store(nil) }

// Refused counts the writes refused so far.
func (f *Faults) Refused() int64 { return f.refused.Load() }

// DB opens a database/sql handle on inner with these faults in front.
func (f *Faults) DB(inner driver.Connector) *sql.DB {
	return sql.OpenDB(&faultConnector{inner: inner, f: f})
}

// EmbeddedWithFaults opens a fresh journal on the embedded engine with
// Faults in front of it; both are closed when the test ends.
func EmbeddedWithFaults(t testing.TB) (*persistence.Journal, *Faults) {
	t.Helper()
	e, err := boltsql.Open(t.TempDir(), boltsql.Options{NoSync: true})
	if err != nil {
		t.Fatalf("journaltest: open embedded engine: %v", err)
	}
	f := &Faults{}
	db := f.DB(e.Connector())
	db.SetMaxOpenConns(32) // as the engine's own DB does
	db.SetMaxIdleConns(32)
	t.Cleanup(func() { db.Close(); e.Close() })
	return open(t, persistence.Config{DB: db}), f
}

// MariaDBWithFaults opens a fresh journal on a fresh MariaDB database with
// Faults in front of it (skips loudly when no server can be had).
func MariaDBWithFaults(t testing.TB) (*persistence.Journal, *Faults) {
	t.Helper()
	d := testdb.MariaDB(t)
	c, err := d.Connector()
	if err != nil {
		t.Fatalf("journaltest: %v", err)
	}
	f := &Faults{}
	db := f.DB(c)
	t.Cleanup(func() { db.Close() })
	return open(t, persistence.Config{DB: db}), f
}

func (f *Faults) check(query string) error {
	p := f.err.Load()
	if p == nil || !writes(query) {
		return nil
	}
	f.refused.Add(1)
	return fmt.Errorf("journaltest: %w", *p)
}

// writes reports whether query changes data (or commits a change).
func writes(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	word, _, _ := strings.Cut(q, " ")
	switch strings.ToUpper(word) {
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "COMMIT":
		return true
	}
	return false
}

type faultConnector struct {
	inner driver.Connector
	f     *Faults
}

func (c *faultConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &faultConn{Conn: conn, f: c.f}, nil
}

func (c *faultConnector) Driver() driver.Driver { return c.inner.Driver() }

// faultConn forwards to the real connection, refusing writes while the
// faults say so. It implements what both real drivers implement.
type faultConn struct {
	driver.Conn
	f *Faults
}

func (c *faultConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.f.check(query); err != nil {
		return nil, err
	}
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *faultConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.f.check(query); err != nil {
		return nil, err
	}
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *faultConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.f.check(query); err != nil {
		return nil, err
	}
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.Conn.Prepare(query)
}

func (c *faultConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &faultTx{Tx: tx, f: c.f}, nil
}

func (c *faultConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *faultConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *faultConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// faultTx refuses a COMMIT while failing: the transaction is rolled back,
// as a commit whose write failed leaves nothing.
type faultTx struct {
	driver.Tx
	f *Faults
}

func (t *faultTx) Commit() error {
	if err := t.f.check("COMMIT"); err != nil {
		_ = t.Tx.Rollback()
		return err
	}
	return t.Tx.Commit()
}
