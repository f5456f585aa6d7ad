package boltsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/shopspring/decimal"
)

type gsqlContext = context.Context

// connector is the in-process database/sql driver: one engine session per
// connection, so START TRANSACTION ... COMMIT on a pinned connection is a
// real transaction.
type connector struct {
	eng *Engine
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	// In-process ids start high so they never collide with the wire
	// server's connection ids in the shared process list.
	id := 1<<31 + c.eng.connIDs.Add(1)
	base := gsql.NewBaseSessionWithClientServer("boltsql", gsql.Client{User: "root", Address: "in-process"}, id)
	return &conn{eng: c.eng, sess: c.eng.newSession(base)}, nil
}

func (c *connector) Driver() driver.Driver { return inProcessDriver{} }

type inProcessDriver struct{}

func (inProcessDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("boltsql: use Engine.DB(); there is no DSN form")
}

type conn struct {
	eng  *Engine
	sess *Session

	// fctx is the context the fast paths (and transaction statements) run
	// in, reused from statement to statement: go-mysql-server's NewContext
	// costs seven allocations, and those paths finish the statement before
	// they return (results materialised, nothing keeps the context). What
	// they read of it is the session, the caller's context and the query
	// text (StartTransaction's read-statement test); the pid is for the
	// process list, which only go-mysql-server's execution uses, so a
	// statement that falls back to it gets a context of its own.
	// database/sql never calls one driver connection concurrently.
	fctx   *gsql.Context
	fquery string

	closed atomic.Bool
}

// fastContext is fctx made ready for query.
func (c *conn) fastContext(ctx context.Context, query string) *gsql.Context {
	if c.fctx == nil {
		c.fctx, c.fquery = c.eng.newContext(ctx, c.sess, query), query
		return c.fctx
	}
	if query != c.fquery {
		c.fctx.ApplyOpts(gsql.WithQuery(query))
		c.fquery = query
	}
	c.fctx.Context = ctx
	c.fctx.SetQueryTime(gsql.Now())
	return c.fctx
}

// fastDone drops the caller's context from fctx, so an idle connection
// does not keep it reachable.
func (c *conn) fastDone() {
	if c.fctx != nil {
		c.fctx.Context = context.Background()
	}
}

var (
	_ driver.ConnBeginTx       = (*conn)(nil)
	_ driver.ExecerContext     = (*conn)(nil)
	_ driver.QueryerContext    = (*conn)(nil)
	_ driver.SessionResetter   = (*conn)(nil)
	_ driver.Validator         = (*conn)(nil)
	_ driver.NamedValueChecker = (*conn)(nil)
)

func (c *conn) Prepare(query string) (driver.Stmt, error) { return &stmt{c: c, query: query}, nil }

func (c *conn) Close() error {
	c.closed.Store(true)
	c.sess.SessionEnd()
	c.eng.sqle.CloseSession(c.sess.ID())
	return nil
}

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	q := "START TRANSACTION"
	if opts.ReadOnly {
		q = "START TRANSACTION READ ONLY"
	}
	if _, err := c.ExecContext(ctx, q, nil); err != nil {
		return nil, err
	}
	return &tx{c: c}, nil
}

// IsValid implements driver.Validator. With ResetSession it tells
// database/sql that a transaction whose context was canceled can be rolled
// back and the connection kept (it discards the connection otherwise, and
// the next caller pays for a new engine session: ~115 KB of variable maps).
// The rollback is our ROLLBACK, and ResetSession ends anything left before
// the connection is reused.
func (c *conn) IsValid() bool { return !c.closed.Load() }

// ResetSession ends a transaction a caller left open before the pool hands
// the connection to someone else.
func (c *conn) ResetSession(ctx context.Context) error {
	c.sess.SessionEnd()
	return nil
}

func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case float64:
		return checkFinite(v)
	case float32:
		nv.Value = float64(v)
		return checkFinite(float64(v))
	case nil, int64, bool, []byte, string, time.Time:
		return nil
	case int:
		nv.Value = int64(v)
	case int32:
		nv.Value = int64(v)
	case int16:
		nv.Value = int64(v)
	case int8:
		nv.Value = int64(v)
	case uint8:
		nv.Value = int64(v)
	case uint16:
		nv.Value = int64(v)
	case uint32:
		nv.Value = int64(v)
	case uint64:
		nv.Value = v
	case uint:
		nv.Value = uint64(v)
	default:
		val, err := driver.DefaultParameterConverter.ConvertValue(nv.Value)
		if err != nil {
			return err
		}
		nv.Value = val
	}
	return nil
}

// checkFinite refuses NaN and ±Inf: SQL has no such values, and
// go-mysql-server's binding panics on them.
func checkFinite(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("boltsql: %v is not a SQL number (NaN and infinities cannot be stored or compared)", f)
	}
	return nil
}

type tx struct{ c *conn }

func (t *tx) Commit() error {
	_, err := t.c.ExecContext(context.Background(), "COMMIT", nil)
	return err
}

func (t *tx) Rollback() error {
	_, err := t.c.ExecContext(context.Background(), "ROLLBACK", nil)
	return err
}

// run runs query through go-mysql-server in a context of its own.
func (c *conn) run(ctx context.Context, query string, args []driver.NamedValue) (*gsql.Context, gsql.Schema, gsql.RowIter, error) {
	var bindings map[string]sqlparser.Expr
	if len(args) > 0 {
		bindings = make(map[string]sqlparser.Expr, len(args))
		for _, a := range args {
			name := a.Name
			if name == "" {
				name = "v" + strconv.Itoa(a.Ordinal)
			}
			b, err := toBinding(a.Value)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("argument %s: %w", name, err)
			}
			bindings[name] = b
		}
	}
	qctx := c.eng.newContext(ctx, c.sess, query)
	sch, iter, _, err := c.eng.sqle.QueryWithBindings(qctx, query, nil, bindings, nil)
	if err != nil {
		c.sess.CommandEnd()
		return nil, nil, nil, toMySQLError(err)
	}
	return qctx, sch, iter, nil
}

func toBinding(v driver.Value) (sqlparser.Expr, error) {
	if t, ok := v.(time.Time); ok {
		v = t.UTC().Format("2006-01-02 15:04:05.999999")
	}
	bv, err := sqltypes.BuildBindVariable(v)
	if err != nil {
		return nil, err
	}
	val, err := sqltypes.BindVariableToValue(bv)
	if err != nil {
		return nil, err
	}
	return sqlparser.ExprFromValue(val)
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Result, err error) {
	defer c.recoverStatement(query, &err)
	if len(args) == 0 && !c.eng.noFastTxStmts {
		if kind := txStatementOf(query); kind != txNone {
			if err := c.execTxStatement(ctx, query, kind); err != nil {
				return nil, err
			}
			return resultOf(0), nil
		}
	}
	if !c.eng.noFastInsert && startsWithKeyword(query, "insert") {
		qctx := c.fastContext(ctx, query)
		if s := c.eng.insertShapeFor(qctx, gsql.RemoveSpaceAndDelimiter(query, ';')); s != nil {
			if r := c.eng.execInsert(qctx, c.sess, s, args); r.handled {
				c.fastDone()
				c.sess.CommandEnd()
				if r.err != nil {
					return nil, toMySQLError(r.err)
				}
				return resultOf(r.affected), nil
			}
		}
	}
	if !c.eng.noFastUpdate && startsWithKeyword(query, "update") {
		qctx := c.fastContext(ctx, query)
		if s := c.eng.updateShapeFor(qctx, gsql.RemoveSpaceAndDelimiter(query, ';')); s != nil {
			if r := c.eng.execUpdate(qctx, c.sess, s, args); r.handled {
				c.fastDone()
				c.sess.CommandEnd()
				if r.err != nil {
					return nil, toMySQLError(r.err)
				}
				return resultOf(r.affected), nil
			}
		}
	}
	c.fastDone()
	qctx, _, iter, err := c.run(ctx, query, args)
	if err != nil {
		return nil, err
	}
	var res result
	for {
		row, err := iter.Next(qctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = iter.Close(qctx)
			c.sess.CommandEnd()
			return nil, toMySQLError(err)
		}
		if len(row) == 1 {
			if ok, isOK := row[0].(types.OkResult); isOK {
				res.affected += int64(ok.RowsAffected)
				if ok.InsertID != 0 {
					res.insertID = int64(ok.InsertID)
				}
			}
		}
	}
	err = iter.Close(qctx)
	c.sess.CommandEnd()
	if err != nil {
		return nil, toMySQLError(err)
	}
	return &res, nil
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Rows, err error) {
	defer c.recoverStatement(query, &err)
	if !c.eng.noFastSelect && startsWithKeyword(query, "select") {
		qctx := c.fastContext(ctx, query)
		if s := c.eng.selectShapeFor(qctx, gsql.RemoveSpaceAndDelimiter(query, ';')); s != nil {
			if r := c.eng.execSelect(qctx, c.sess, s, args); r.handled {
				c.fastDone()
				c.sess.CommandEnd()
				if r.err != nil {
					return nil, toMySQLError(r.err)
				}
				return &fastRows{names: r.names, rows: r.rows, nextErr: toMySQLError(r.nextErr), closeErr: toMySQLError(r.closeErr)}, nil
			}
		}
	}
	c.fastDone()
	qctx, sch, iter, err := c.run(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return &rows{c: c, ctx: qctx, sch: sch, iter: iter}, nil
}

// recoverStatement turns a panic inside go-mysql-server (or a fast path)
// into the statement's error, MySQL's 1105, and aborts the statement's
// transaction: its partial writes are rolled back, and a COMMIT of an
// explicit transaction fails. A caller (journal sql) never sees a Go stack.
func (c *conn) recoverStatement(query string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	*err = statementPanic(query, r)
	c.sess.abortStatement(*err)
}

func statementPanic(query string, r any) *mysqldriver.MySQLError {
	if len(query) > 200 {
		query = query[:200] + "…"
	}
	return &mysqldriver.MySQLError{Number: 1105, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
		Message: fmt.Sprintf("internal error in the SQL engine running %q: %v (the statement was rolled back)", query, r)}
}

type result struct{ affected, insertID int64 }

// smallResults are shared by fast-path statements that changed a few rows
// (a Result is only read).
var smallResults = func() (r [8]result) {
	for i := range r {
		r[i].affected = int64(i)
	}
	return r
}()

func resultOf(affected int64) *result {
	if affected >= 0 && affected < int64(len(smallResults)) {
		return &smallResults[affected]
	}
	return &result{affected: affected}
}

func (r *result) LastInsertId() (int64, error) { return r.insertID, nil }
func (r *result) RowsAffected() (int64, error) { return r.affected, nil }

type stmt struct {
	c     *conn
	query string
}

func (s *stmt) Close() error  { return nil }
func (s *stmt) NumInput() int { return -1 }
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.c.ExecContext(context.Background(), s.query, named(args))
}
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.c.QueryContext(context.Background(), s.query, named(args))
}
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.query, args)
}
func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.query, args)
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

type rows struct {
	c      *conn
	ctx    *gsql.Context
	sch    gsql.Schema
	iter   gsql.RowIter
	closed bool
}

func (r *rows) Columns() []string {
	names := make([]string, len(r.sch))
	for i, col := range r.sch {
		names[i] = col.Name
	}
	return names
}

// Close finishes the statement: an autocommit statement commits here.
func (r *rows) Close() (err error) {
	if r.closed {
		return nil
	}
	r.closed = true
	defer r.c.recoverStatement(r.ctx.Query(), &err)
	err = r.iter.Close(r.ctx)
	r.c.sess.CommandEnd()
	return toMySQLError(err)
}

func (r *rows) Next(dest []driver.Value) (err error) {
	defer r.c.recoverStatement(r.ctx.Query(), &err)
	for {
		row, err := r.iter.Next(r.ctx)
		if err != nil {
			if err == io.EOF {
				return io.EOF
			}
			return toMySQLError(err)
		}
		if len(row) == 1 {
			if _, ok := row[0].(types.OkResult); ok {
				continue
			}
		}
		for i := range dest {
			if i < len(row) {
				dest[i] = driverValue(row[i])
				if i < len(r.sch) {
					dest[i] = enumOrSetValue(r.sch[i].Type, row[i], dest[i])
				}
			}
		}
		return nil
	}
}

// enumOrSetValue is an ENUM or SET value as MySQL sends it, its string
// (the engine holds an ENUM's index and a SET's bits; the wire server
// converts them, and the in-process driver sent the numbers); dv for any
// other value.
func enumOrSetValue(t gsql.Type, v interface{}, dv driver.Value) driver.Value {
	switch t := t.(type) {
	case gsql.EnumType:
		if idx, ok := v.(uint16); ok {
			if s, ok := t.At(int(idx)); ok {
				return s
			}
			return "" // 0, the error value
		}
	case gsql.SetType:
		if bits, ok := v.(uint64); ok {
			if s, err := t.BitsToString(bits); err == nil {
				return s
			}
		}
	}
	return dv
}

// driverValue maps engine values onto the types database/sql accepts.
func driverValue(v interface{}) driver.Value {
	switch x := v.(type) {
	case nil, int64, float64, bool, []byte, string, time.Time:
		return x
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return x
	case float32:
		return float64(x)
	case decimal.Decimal:
		return x.String()
	case gsql.JSONWrapper:
		// MySQL's text of the document, as the wire server sends it (a
		// DECIMAL inside is a number; json.Marshal quoted it).
		s, err := types.JsonToMySqlString(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return []byte(s)
	}
	return fmt.Sprint(v)
}

// toMySQLError gives in-process callers the error type a MySQL server
// connection gives them, so one check (Number 1062) works for both.
func toMySQLError(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	se := gsql.CastSQLError(err)
	if se == nil {
		return err
	}
	me := &mysqldriver.MySQLError{Number: uint16(se.Num), Message: se.Message}
	copy(me.SQLState[:], se.State)
	// go-mysql-server reports these as 1105 (unknown error); MySQL has codes.
	switch {
	case gsql.ErrSyntaxError.Is(err):
		me.Number, me.SQLState = 1064, [5]byte{'4', '2', '0', '0', '0'}
	case gsql.ErrColumnNotFound.Is(err) || gsql.ErrTableColumnNotFound.Is(err):
		me.Number, me.SQLState = 1054, [5]byte{'4', '2', 'S', '2', '2'}
	case gsql.ErrColumnExists.Is(err):
		me.Number, me.SQLState = 1060, [5]byte{'4', '2', 'S', '2', '1'}
	}
	return me
}
