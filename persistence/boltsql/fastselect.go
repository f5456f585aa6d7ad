package boltsql

import (
	"database/sql/driver"
	"errors"
	"io"

	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// The point-select fast path, the read sibling of fastupdate.go. The
// journal reads single rows by primary key inside its transactions (the
// stream head before an append, the projection rows it updates); through
// go-mysql-server each is parsed, bound, analyzed and built. Here a
//
//	SELECT col [, col ...] | * FROM t
//	WHERE pk1 = v [AND pk2 = v ...] [AND col <op> v ...]
//
// whose WHERE fixes every primary-key column by equality is parsed once
// per text and run as the engine's plan
// Project(Filter(IndexedTableAccess on PRIMARY)) would run: the key and the
// predicates are built by prepareUpdate (the same literal conversions and
// comparison expressions as the update fast path), the row is read through
// the statement's transaction (so a transaction sees its own writes), the
// leftover predicates are evaluated with go-mysql-server's expressions, and
// the stored values are returned as the table's iterator returns them.
// ROW_COUNT becomes -1 and FOUND_ROWS the number of rows, as the engine's
// tracked iterator sets them; an autocommit statement commits.
//
// Not taken: DISTINCT and other query options, aliases, expressions,
// qualified columns, ORDER BY/GROUP BY/HAVING/LIMIT/INTO/WITH/windows,
// FOR UPDATE and other lock clauses, joins, a sql_select_limit of 0, and
// everything prepareUpdate refuses (key values not of the key column's own
// kind, predicates the planner could answer from another index, ...). A
// found row the engine's own key comparison disagrees with goes to the
// engine in the same transaction.

// selectShape is the parsed form of an eligible SELECT.
type selectShape struct {
	where updateShape // db, table, conds and nargs; no sets
	cols  []string    // as written; nil means `*`
	order []string    // ORDER BY columns (fastrange.go); nil for a point select
	limit *insertVal  // LIMIT row count, nil when none
}

// selectShapeFor returns the cached or newly parsed shape of query, nil when
// the statement must go through go-mysql-server.
func (e *Engine) selectShapeFor(ctx *gsql.Context, query string) *selectShape {
	return shapeOf(ctx, &e.selShapes, e.sqle.Parser, query, parseSelectShape)
}

func parseSelectShape(ctx *gsql.Context, p gsql.Parser, query string) *selectShape {
	stmt, next, err := p.ParseOneWithOptions(ctx, query, gsql.LoadSqlMode(ctx).ParserOptions())
	if err != nil || (next != 0 && next < len(query)) {
		return nil
	}
	sel, ok := stmt.(*ast.Select)
	if !ok || len(sel.Comments) > 0 || sel.QueryOpts != (ast.QueryOpts{}) || sel.With != nil ||
		len(sel.GroupBy) > 0 || sel.Having != nil || len(sel.Window) > 0 ||
		sel.Lock != "" || sel.Into != nil || len(sel.From) != 1 ||
		sel.Where == nil || sel.Where.Type != ast.WhereStr || len(sel.SelectExprs) == 0 {
		return nil
	}
	ate, ok := sel.From[0].(*ast.AliasedTableExpr)
	if !ok || len(ate.Partitions) > 0 || !ate.As.IsEmpty() || ate.Hints != nil || ate.AsOf != nil || ate.Lateral {
		return nil
	}
	tn, ok := ate.Expr.(ast.TableName)
	if !ok || !tn.SchemaQualifier.IsEmpty() {
		return nil
	}
	s := &selectShape{where: updateShape{db: tn.DbQualifier.String(), table: tn.Name.String()}}
	for i, se := range sel.SelectExprs {
		switch x := se.(type) {
		case *ast.StarExpr:
			if len(sel.SelectExprs) != 1 || i != 0 || !x.TableName.IsEmpty() {
				return nil
			}
		case *ast.AliasedExpr:
			if !x.As.IsEmpty() {
				return nil
			}
			col, ok := plainColumn(x.Expr)
			if !ok {
				return nil
			}
			s.cols = append(s.cols, col)
		default:
			return nil
		}
	}
	seen := argOrder{}
	if !s.where.addConds(seen, sel.Where.Expr) {
		return nil
	}
	if (len(sel.OrderBy) > 0 || sel.Limit != nil) && !s.parseOrderLimit(seen, sel) {
		return nil
	}
	s.where.nargs = len(seen)
	for n := 1; n <= s.where.nargs; n++ {
		if !seen[n] {
			return nil
		}
	}
	return s
}

// fastSelectResult is what execSelect did: handled false means nothing
// observable was done and the statement must go through go-mysql-server.
type fastSelectResult struct {
	handled  bool
	names    []string
	rows     []gsql.Row
	err      error // the statement failed before reading: Query returns it
	nextErr  error // the read failed: Next returns it
	closeErr error // the commit failed: Close returns it
}

// execSelect runs an eligible SELECT shape with args on the session of ctx.
func (e *Engine) execSelect(ctx *gsql.Context, sess *Session, s *selectShape, args []driver.NamedValue) fastSelectResult {
	var none fastSelectResult
	if !positional(args, s.where.nargs) || !ownTxn(ctx, false) {
		return none
	}
	if v, err := ctx.GetSessionVariable(ctx, "sql_select_limit"); err != nil {
		return none
	} else if n, ok := asInt64(v); !ok || n < 1 {
		return none // the planner would add a LIMIT that can cut a 1-row answer
	}
	if s.order != nil {
		if isDefault, _ := gsql.HasDefaultValue(ctx, ctx.Session, "sql_select_limit"); !isDefault {
			return none // the planner would add its own LIMIT
		}
	}
	ti := e.statementTable(ctx, s.where.db, s.where.table)
	if ti == nil || ti.primary == nil {
		return none
	}
	sch := ti.schema.Schema
	n := len(s.cols)
	if s.cols == nil {
		n = len(sch)
	}
	ords := make([]int, 0, n)
	names := make([]string, 0, n)
	if s.cols == nil {
		for i, c := range sch {
			ords = append(ords, i)
			names = append(names, c.Name)
		}
	} else {
		for _, name := range s.cols {
			ord := sch.IndexOfColName(name)
			if ord < 0 {
				return none
			}
			ords = append(ords, ord)
			names = append(names, name) // the engine names a result column as written
		}
	}
	if ti.enumOrSet {
		for _, o := range ords {
			if isEnumOrSet(sch[o].Type) {
				return none // shown as strings by the engine's result schema (driver.go, rows.Next)
			}
		}
	}
	for _, col := range sch {
		if col.Virtual {
			return none // computed by the engine's projection, not stored
		}
	}
	numPrevWarnings := len(ctx.Session.Warnings())
	var pu preparedUpdate
	var pr preparedRange
	var ok bool
	if s.order != nil {
		pr, ok = prepareRange(ctx, s, ti, args)
	} else {
		pu, ok = prepareUpdate(ctx, &s.where, ti, args)
	}
	if !ok {
		return none
	}
	keepBindingWarnings(ctx, numPrevWarnings)

	// go-mysql-server's steps for this plan: validate the session, begin
	// the transaction, read the range, filter, project, commit an
	// autocommit statement when its iterator closes.
	if err := beginStatement(ctx, sess); err != nil {
		e.countSelect(ctx)
		return fastSelectResult{handled: true, err: err}
	}
	autoCommit, err := plan.IsSessionAutocommit(ctx)
	if err != nil {
		e.countSelect(ctx)
		return fastSelectResult{handled: true, err: err}
	}
	var out []gsql.Row
	if s.order != nil {
		var disagree bool
		out, disagree, err = e.readRange(ctx, ti, &pr, ords)
		if disagree {
			return none // the engine's comparison disagrees with the key span: let it answer
		}
		e.countSelect(ctx)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			out = nil
		}
	} else {
		out, err = e.selectPoint(ctx, ti, &pu, ords)
		if err == errDisagree {
			return none // the engine's comparison disagrees with the key seek: let it answer
		}
	}
	// TrackedRowIter.Close and TransactionCommittingIter.Close: the
	// statement's counters, then an autocommit statement commits, after a
	// failed read too.
	ctx.SetLastQueryInfoInt(gsql.RowCount, -1)
	ctx.SetLastQueryInfoInt(gsql.FoundRows, int64(len(out)))
	commitErr := commitAutocommit(ctx, sess, autoCommit)
	// A read error reaches the engine's caller from the first Next, a
	// commit error from Close.
	return fastSelectResult{handled: true, names: names, rows: out, nextErr: err, closeErr: commitErr}
}

func (e *Engine) countSelect(ctx *gsql.Context) {
	e.fastSelects.Add(1)
	gsql.IncrementStatusVariable(ctx, "Questions", 1)
	gsql.IncrementStatusVariable(ctx, "Com_select", 1)
}

// fastRows are the rows of a statement the fast path finished: its
// transaction work is done, Close has nothing left to end.
type fastRows struct {
	names    []string
	rows     []gsql.Row
	pos      int
	nextErr  error
	closeErr error
}

func (r *fastRows) Columns() []string { return r.names }

func (r *fastRows) Close() error {
	err := r.closeErr
	r.rows, r.closeErr = nil, nil
	return err
}

func (r *fastRows) Next(dest []driver.Value) error {
	if r.nextErr != nil {
		return r.nextErr
	}
	if r.pos >= len(r.rows) {
		return io.EOF
	}
	row := r.rows[r.pos]
	r.pos++
	for i := range dest {
		if i < len(row) {
			dest[i] = driverValue(row[i])
		}
	}
	return nil
}

// errDisagree: the engine's own key comparison rejects a row the key seek
// found; the statement goes to the engine.
var errDisagree = errors.New("boltsql: key seek and comparison disagree")

// selectPoint reads and filters the one row of a point select.
func (e *Engine) selectPoint(ctx *gsql.Context, ti *tableInfo, pu *preparedUpdate, ords []int) ([]gsql.Row, error) {
	// The row's columns read: the projection's and the WHERE clause's.
	need := make([]bool, len(ti.schema.Schema))
	for _, ord := range ords {
		need[ord] = true
	}
	for _, c := range pu.cols.conds {
		if c.ord >= 0 {
			need[c.ord] = true
		}
	}
	row, found, err := e.readPoint(ctx, ti, pu.key, need)
	if err == nil && found && pu.guard != nil {
		var res interface{}
		if res, err = gsql.EvaluateCondition(ctx, pu.guard, row); err != nil || !gsql.IsTrue(res) {
			return nil, errDisagree
		}
	}
	e.countSelect(ctx)
	if err == nil && found && pu.filter != nil {
		var res interface{}
		if res, err = gsql.EvaluateCondition(ctx, pu.filter, row); err == nil && !gsql.IsTrue(res) {
			found = false
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	var out []gsql.Row
	if err == nil && found {
		proj := make(gsql.Row, len(ords))
		for i, ord := range ords {
			proj[i] = row[ord]
		}
		out = append(out, proj)
	}
	return out, err
}
