package boltsql

import (
	"database/sql/driver"
	"strings"

	gsql "github.com/dolthub/go-mysql-server/sql"
	bolt "go.etcd.io/bbolt"
)

// Steps every fast path (fastinsert.go, fastupdate.go, fastselect.go)
// takes the way go-mysql-server takes them for the same statement: which
// statements it may run at all, the warnings binding leaves, beginning the
// statement's transaction and committing it when autocommit is on.

// positional reports whether args are exactly n unnamed ? values in order,
// the only binding the fast paths run.
func positional(args []driver.NamedValue, n int) bool {
	if len(args) != n {
		return false
	}
	for i, a := range args {
		if a.Name != "" || a.Ordinal != i+1 {
			return false
		}
	}
	return true
}

// ownTxn reports whether the statement's open transaction, if any, is one
// of ours (and, for a write, not read-only): the errors of any other are
// go-mysql-server's to give.
func ownTxn(ctx *gsql.Context, write bool) bool {
	cur := ctx.GetTransaction()
	if cur == nil {
		return true
	}
	t, ok := cur.(*txn)
	return ok && !(write && t.readOnly)
}

// statementTable is the table a statement names in db (the session's
// current database when empty), or nil when the engine must resolve it: no
// database, information_schema, no such table, or user accounts enabled
// (the planner checks each statement's privileges; the fast paths do not).
func (e *Engine) statementTable(ctx *gsql.Context, db, table string) *tableInfo {
	if e.sqle.Analyzer.Catalog.MySQLDb.Enabled() {
		return nil
	}
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	if db == "" || strings.EqualFold(db, "information_schema") {
		return nil
	}
	return e.lookupTable(db, table)
}

// keepBindingWarnings keeps the warnings raised since the session had
// `since` of them (binding's conversions of the literals) and drops the
// previous statement's, as QueryWithBindings does around bindQuery.
func keepBindingWarnings(ctx *gsql.Context, since int) {
	newWarnings := ctx.Session.Warnings()[since:]
	ctx.ClearWarnings()
	for i := len(newWarnings) - 1; i >= 0; i-- {
		ctx.Session.Warn(newWarnings[i])
	}
}

// beginStatement validates the session and begins the statement's
// transaction when none is open.
func beginStatement(ctx *gsql.Context, sess *Session) error {
	if err := sess.ValidateSession(ctx); err != nil {
		return err
	}
	if ctx.GetTransaction() == nil {
		tx, err := sess.StartTransaction(ctx, gsql.ReadWrite)
		if err != nil {
			return err
		}
		ctx.SetTransaction(tx)
	}
	return nil
}

// commitAutocommit commits the statement's transaction when autocommit is
// on, as TransactionCommittingIter.Close does: after a failed statement too
// (its changes are discarded by then).
func commitAutocommit(ctx *gsql.Context, sess *Session, autoCommit bool) error {
	tx := ctx.GetTransaction()
	if tx == nil || ctx.GetIgnoreAutoCommit() || !autoCommit {
		return nil
	}
	if err := sess.CommitTransaction(ctx, tx); err != nil {
		return err
	}
	ctx.SetTransaction(nil)
	return nil
}

// endEdit ends a statement's edits as the engine's iterators do: a
// cancelled or failed statement discards them, a good one completes; the
// editor is closed either way. It returns the statement's error.
func endEdit(ctx *gsql.Context, ed *editor, err error) error {
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = ed.DiscardChanges(ctx, err)
	} else {
		err = ed.StatementComplete(ctx)
	}
	_ = ed.Close(ctx)
	return err
}

// readData is the table's data bucket in the statement's read view (the
// write transaction once the statement holds the writer); nil with a nil
// error when the table's storage is gone.
func readData(ctx *gsql.Context, ti *tableInfo) (*bolt.Bucket, error) {
	t, err := txnOf(ctx)
	if err != nil {
		return nil, err
	}
	btx, err := t.readTx(ctx)
	if err != nil {
		return nil, err
	}
	return btx.Bucket(ti.dataBucket), nil
}
