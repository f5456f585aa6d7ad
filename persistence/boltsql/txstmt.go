package boltsql

import (
	"context"
	"strings"

	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// Transaction control without the planner: database/sql's BeginTx, Commit
// and Rollback issue START TRANSACTION, COMMIT and ROLLBACK on every
// transaction, and parsing, binding and analyzing them costs as much as a
// point read. For exactly these texts the driver runs the steps
// go-mysql-server v0.20.0 runs for them (QueryWithBindings: Questions,
// ValidateSession; rowexec buildStartTransaction / buildCommit /
// buildRollback; on error clearAutocommitTransaction) against the same
// session. The only step left out is the engine's beginTransaction before
// the statement: for these statements it starts a transaction only to
// commit (or roll back) it unused right away.

type txStmt int

const (
	txNone txStmt = iota
	txStart
	txStartReadOnly
	txCommit
	txRollback
)

// txStatementOf recognizes the plain transaction-control statements.
func txStatementOf(q string) txStmt {
	q = strings.TrimSpace(gsql.RemoveSpaceAndDelimiter(q, ';'))
	if len(q) > len("START TRANSACTION READ ONLY") {
		return txNone
	}
	switch strings.ToUpper(q) {
	case "START TRANSACTION", "BEGIN":
		return txStart
	case "START TRANSACTION READ ONLY":
		return txStartReadOnly
	case "COMMIT":
		return txCommit
	case "ROLLBACK":
		return txRollback
	}
	return txNone
}

// execTxStatement runs a recognized transaction-control statement.
func (c *conn) execTxStatement(ctx context.Context, query string, kind txStmt) error {
	c.eng.fastTxStmts.Add(1)
	qctx := c.fastContext(ctx, query)
	defer c.sess.CommandEnd()
	defer c.fastDone()
	gsql.IncrementStatusVariable(qctx, "Questions", 1)
	if err := c.sess.ValidateSession(qctx); err != nil {
		return toMySQLError(err)
	}
	fail := func(err error) error {
		// QueryWithBindings after a failed build.
		if !qctx.GetIgnoreAutoCommit() {
			if on, aerr := plan.IsSessionAutocommit(qctx); aerr == nil && on {
				qctx.SetTransaction(nil)
			}
		}
		return toMySQLError(err)
	}
	cur := qctx.GetTransaction()
	switch kind {
	case txStart, txStartReadOnly:
		// A START TRANSACTION commits any pending work first.
		if cur != nil {
			if err := c.sess.CommitTransaction(qctx, cur); err != nil {
				return fail(err)
			}
		}
		char := gsql.ReadWrite
		if kind == txStartReadOnly {
			char = gsql.ReadOnly
		}
		t, err := c.sess.StartTransaction(qctx, char)
		if err != nil {
			return fail(err)
		}
		qctx.SetTransaction(t)
		qctx.SetIgnoreAutoCommit(true)
	case txCommit, txRollback:
		if cur != nil {
			var err error
			if kind == txCommit {
				err = c.sess.CommitTransaction(qctx, cur)
			} else {
				err = c.sess.Rollback(qctx, cur)
			}
			if err != nil {
				return fail(err)
			}
		}
		qctx.SetIgnoreAutoCommit(false)
		qctx.SetTransaction(nil)
	}
	return nil
}
