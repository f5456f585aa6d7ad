package boltsql

import (
	"database/sql/driver"
	"strconv"
	"strings"

	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// The insert fast path. go-mysql-server parses, binds, analyzes and builds
// an iterator tree for every statement; for a single-row autocommit INSERT
// that is most of the engine's CPU (profiled: parse+bind+analyze+build ~60%
// of the statement outside bbolt), which caps concurrent writers at the rate
// one core can plan statements. The journal's writes are nearly all plain
// `INSERT INTO t (cols) VALUES (?, ...), ...`, so those run here instead:
// the statement's shape is parsed once per text (cached), and each
// execution repeats exactly the steps go-mysql-server v0.20.0 takes for
// that shape (planbuilder.buildInsert → analyzer.resolveInsertRows →
// rowexec.insertIter/TableEditorIter/accumulatorIter/
// TransactionCommittingIter), calling the same conversion and error
// functions, against the same editor and transaction code.
//
// Only shapes where those steps are value-independent and side-effect-free
// before the first write are taken: every column given exactly once (no
// defaults to evaluate), no AUTO_INCREMENT column, no IGNORE / REPLACE /
// ON DUPLICATE KEY / RETURNING / WITH / hints, values that are bind
// parameters or plain literals, a table of this engine, and no READ ONLY
// transaction. Anything else, and anything unexpected while preparing the
// row values, goes to go-mysql-server untouched (nothing has been changed by
// then), so errors for malformed statements stay go-mysql-server's.
//
// The cache holds syntax only (table and column names, where each value
// comes from); the table is looked up in the catalog on every execution, so
// DDL (ALTER/DROP/CREATE TABLE) can never make a cached shape stale: a
// changed table either still matches the shape or the statement falls back.

// insertShape is the parsed form of an eligible INSERT.
type insertShape struct {
	db     string   // qualifier as written; "" means the current database
	table  string   // as written
	cols   []string // as written; nil means all columns in table order
	tuples [][]insertVal
	nargs  int
}

// insertVal is where one value comes from: bind parameter arg (1-based), or
// the literal lit, or NULL (arg 0, lit nil).
type insertVal struct {
	arg int
	lit *ast.SQLVal
}

// insertShapeFor returns the cached or newly parsed shape of query, nil when
// the statement must go through go-mysql-server.
func (e *Engine) insertShapeFor(ctx *gsql.Context, query string) *insertShape {
	return shapeOf(ctx, &e.shapes, e.sqle.Parser, query, parseInsertShape)
}

func parseInsertShape(ctx *gsql.Context, p gsql.Parser, query string) *insertShape {
	stmt, next, err := p.ParseOneWithOptions(ctx, query, gsql.LoadSqlMode(ctx).ParserOptions())
	if err != nil || (next != 0 && next < len(query)) {
		return nil
	}
	ins, ok := stmt.(*ast.Insert)
	if !ok || ins.Action != ast.InsertStr || ins.Ignore != "" || len(ins.Comments) > 0 || ins.With != nil ||
		len(ins.Partitions) > 0 || len(ins.Returning) > 0 || len(ins.OnDup) > 0 ||
		!ins.Table.SchemaQualifier.IsEmpty() {
		return nil
	}
	rows, ok := ins.Rows.(*ast.AliasedValues)
	if !ok || !rows.As.IsEmpty() || len(rows.Columns) > 0 || len(rows.Values) == 0 {
		return nil
	}
	s := &insertShape{db: ins.Table.DbQualifier.String(), table: ins.Table.Name.String()}
	if len(ins.Columns) > 0 {
		s.cols = make([]string, len(ins.Columns))
		for i, c := range ins.Columns {
			s.cols[i] = c.String()
		}
	}
	seen := map[int]bool{}
	for _, tuple := range rows.Values {
		if len(tuple) == 0 {
			return nil
		}
		vals := make([]insertVal, len(tuple))
		for j, ex := range tuple {
			switch v := ex.(type) {
			case *ast.NullVal:
			case *ast.SQLVal:
				switch v.Type {
				case ast.ValArg:
					// `?` arrives as :v1, :v2, … in order; named parameters fall back.
					n, err := strconv.Atoi(strings.TrimPrefix(string(v.Val), ":v"))
					if err != nil || n < 1 || seen[n] || !strings.HasPrefix(string(v.Val), ":v") {
						return nil
					}
					seen[n] = true
					vals[j].arg = n
				case ast.StrVal, ast.IntVal:
					vals[j].lit = v
				default:
					return nil
				}
			default:
				return nil
			}
		}
		s.tuples = append(s.tuples, vals)
	}
	s.nargs = len(seen)
	for n := 1; n <= s.nargs; n++ {
		if !seen[n] {
			return nil
		}
	}
	return s
}

// fastInsertResult is what execInsert did: handled false means nothing was
// done and the statement must go through go-mysql-server.
type fastInsertResult struct {
	handled  bool
	affected int64
	err      error
}

// execInsert runs an eligible INSERT shape with args on the session of ctx.
func (e *Engine) execInsert(ctx *gsql.Context, sess *Session, s *insertShape, args []driver.NamedValue) fastInsertResult {
	var none fastInsertResult
	if !positional(args, s.nargs) || !ownTxn(ctx, true) {
		return none
	}
	ti := e.statementTable(ctx, s.db, s.table)
	if ti == nil || ti.autoIncCol >= 0 || ti.hiddenPK() || ti.generated || len(ti.def.Checks) > 0 || e.triggers.Load() > 0 || e.hasForeignKeys(ti) {
		return none
	}
	sch := ti.schema.Schema
	pos, ok := columnPositions(sch, s.cols)
	if !ok {
		return none
	}
	rows, ok := shapeRows(ctx, s, sch, pos, args)
	if !ok {
		return none
	}

	// From here on the statement is ours: the steps and their order are
	// go-mysql-server's for this shape (see the comment at the top).
	e.fastInserts.Add(1)
	gsql.IncrementStatusVariable(ctx, "Questions", 1)
	// The engine counts Com_insert twice for an INSERT with bind parameters
	// (it binds the statement once to prepare it and again to run it); once
	// is MySQL's count.
	gsql.IncrementStatusVariable(ctx, "Com_insert", 1)
	if err := beginStatement(ctx, sess); err != nil {
		return fastInsertResult{handled: true, err: err}
	}
	ctx.ClearWarnings()
	autoCommit, err := plan.IsSessionAutocommit(ctx)
	if err != nil {
		return fastInsertResult{handled: true, err: err}
	}
	ed := e.fastEditor(ctx, ti)
	ed.markStatement()
	var n int64
	for _, row := range rows {
		if err = insertRow(ctx, ed, sch, row); err != nil {
			break
		}
		n++
	}
	err = endEdit(ctx, ed, err)
	if err == nil {
		ctx.SetLastQueryInfoInt(gsql.RowCount, n)
	}
	commitErr := commitAutocommit(ctx, sess, autoCommit)
	if err == nil {
		err = commitErr
	}
	if err != nil {
		return fastInsertResult{handled: true, err: err}
	}
	return fastInsertResult{handled: true, affected: n}
}

// columnPositions maps each value position to its schema column; every
// column must be given exactly once.
func columnPositions(sch gsql.Schema, cols []string) ([]int, bool) {
	pos := make([]int, len(sch))
	if cols == nil {
		for i := range pos {
			pos[i] = i
		}
		return pos, true
	}
	if len(cols) != len(sch) {
		return nil, false
	}
	var used uint64
	for i, c := range cols {
		ord := sch.IndexOfColName(c)
		if ord < 0 || ord >= 64 || used&(1<<ord) != 0 {
			return nil, false
		}
		used |= 1 << ord
		pos[i] = ord
	}
	return pos, true
}

// shapeRows evaluates the values the way the planner does: a bind parameter
// becomes the AST literal database/sql's value maps to, and each literal is
// converted by planbuilder's own ConvertVal; the row is in schema order.
func shapeRows(ctx *gsql.Context, s *insertShape, sch gsql.Schema, pos []int, args []driver.NamedValue) (rows []gsql.Row, ok bool) {
	defer func() {
		if recover() != nil { // planbuilder reports conversion errors by panicking
			rows, ok = nil, false
		}
	}()
	bd := binder{ctx: ctx, args: args}
	rows = make([]gsql.Row, len(s.tuples))
	for i, tuple := range s.tuples {
		if len(tuple) != len(sch) {
			return nil, false
		}
		row := make(gsql.Row, len(sch))
		for j, v := range tuple {
			if b, isBytes := bd.bytesArg(v); isBytes && binaryFits(sch[pos[j]].Type, len(b)) {
				// The value the chain would give (argValue's string, then
				// convertString's bytes of it, never nil), copied once
				// instead of twice; insertRow keeps it as it is.
				row[pos[j]] = append(make([]byte, 0, len(b)), b...)
				continue
			}
			val, ok := bd.value(v)
			if !ok {
				return nil, false
			}
			row[pos[j]] = normalizeNegativeZero(val)
		}
		rows[i] = row
	}
	return rows, true
}

// normalizeNegativeZero is rowexec.normalizeNegativeZeros, which
// rowexec.ProjectRow applies to every value plan.Values yields: a float -0
// reaches the column conversion as +0 (so an INSERT stores 0 where an
// UPDATE, whose SET values skip ProjectRow, stores -0). Only float values
// are touched; a string "-0" still converts to -0.
func normalizeNegativeZero(v interface{}) interface{} {
	switch x := v.(type) {
	case float64:
		if x == 0 {
			return float64(0)
		}
	case float32:
		if x == 0 {
			return float32(0)
		}
	}
	return v
}

// insertRow is rowexec.insertIter.Next for a plain INSERT: nullability,
// conversion to the column types, then the table editor; errors wrapped the
// same way.
func insertRow(ctx *gsql.Context, ed *editor, sch gsql.Schema, row gsql.Row) error {
	for i, col := range sch {
		if !col.Nullable && row[i] == nil {
			return gsql.NewWrappedInsertError(row, gsql.ErrInsertIntoNonNullableProvidedNull.New(col.Name))
		}
	}
	origRow := make(gsql.Row, len(row))
	copy(origRow, row)
	for i, col := range sch {
		if row[i] == nil {
			continue
		}
		if b, isBytes := row[i].([]byte); isBytes && binaryFits(col.Type, len(b)) {
			continue // shapeRows' copy of a []byte argument: Convert would return equal bytes
		}
		if v, ok := convertString(col.Type, row[i]); ok {
			row[i] = v
			continue
		}
		converted, inRange, err := col.Type.Convert(ctx, row[i])
		if err == nil && !inRange {
			err = gsql.ErrValueOutOfRange.New(row[i], col.Type)
		}
		if err != nil {
			if types.ErrLengthBeyondLimit.Is(err) {
				err = types.ErrLengthBeyondLimit.New(row[i], col.Name)
			} else if gsql.ErrNotMatchingSRID.Is(err) {
				err = gsql.ErrNotMatchingSRIDWithColName.New(col.Name, err)
			}
			return gsql.NewWrappedInsertError(origRow, err)
		}
		row[i] = converted
	}
	if err := ed.Insert(ctx, row); err != nil {
		return gsql.NewWrappedInsertError(row, err)
	}
	return nil
}
