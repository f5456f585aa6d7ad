package boltsql

import (
	"bytes"
	"database/sql/driver"
	"strconv"
	"strings"
	"sync/atomic"

	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// The point-update fast path, the UPDATE sibling of fastinsert.go. The
// journal's appends change single rows by primary key (the stream head's
// advance, with its expected seq and epoch in the WHERE clause, and the
// projection rows); through go-mysql-server each of them is parsed, bound,
// analyzed and built into an iterator tree. Here an
//
//	UPDATE t SET col = v [, col = v ...]
//	WHERE pk1 = v [AND pk2 = v ...] [AND col <op> v ...]
//
// whose WHERE fixes every primary-key column by equality (v: a bind
// parameter, a string/number literal or NULL; op: = < <= > >= <=>, or
// `col IS [NOT] NULL`) is parsed once per text and then run as the engine
// would run its plan, Update(UpdateSource(Filter(IndexedTableAccess on
// PRIMARY))): the same literal conversions (planbuilder.ConvertVal and the
// comparison literal expansion of planbuilder.typeExpandComparisonLiteral),
// the key the index range builder would seek (the column type's Convert),
// the leftover predicates and the SET assignments as go-mysql-server's own
// expressions (Equals/LessThan/…, SetField, with its conversion errors),
// then rowexec's updateIter/accumulatorIter steps: a row whose new values
// equal the old ones (Row.Equals) is matched but not changed and not
// written; a changed row is checked for NULLs in NOT NULL columns and
// handed to the table editor (secondary index maintenance and unique
// checks are the editor's, as for every UPDATE); rows affected are the
// changed rows (the matched ones for a CLIENT_FOUND_ROWS client); ROW_COUNT
// and FOUND_ROWS are set as the accumulator sets them.
//
// Not taken (go-mysql-server runs it, nothing has been done yet): any other
// statement shape (IGNORE, ORDER BY, LIMIT, joins, aliases, qualified
// columns, expressions, DEFAULT, subqueries), a SET of a primary-key column,
// a table with ON UPDATE or generated columns, a primary-key value that is
// not of the key column's own kind (an integer for an integer column, a
// string for a binary-collated string column) or does not convert exactly,
// a predicate on an indexed column whose literal the planner would not have
// converted to the column type (the engine might answer it from that
// index's range instead of comparing), READ ONLY transactions, and a found
// row the primary-key equality does not hold for by the engine's own
// comparison (then the engine answers, in the same transaction, before
// anything is written).

// updateShape is the parsed form of an eligible UPDATE.
type updateShape struct {
	db    string // qualifier as written; "" means the current database
	table string
	sets  []updateSet
	conds []updateCond
	nargs int

	cols atomic.Pointer[shapeColumns] // the columns named, for the table definition last seen
}

// shapeColumns are a shape's columns resolved against one table definition
// (a DDL statement makes a new tableInfo, so a cached entry never outlives
// the definition it was built for). GetField expressions hold no state and
// are shared by every execution.
type shapeColumns struct {
	ti    *tableInfo
	sets  []shapeColumn // per updateShape.sets
	conds []shapeColumn // per updateShape.conds
}

type shapeColumn struct {
	ord     int // -1: the table has no such column
	gf      *expression.GetField
	pkPos   int  // position in the primary key, -1 when not in it
	indexed bool // in a secondary index
}

// columnsFor returns the shape's columns resolved against ti.
func (s *updateShape) columnsFor(ti *tableInfo) *shapeColumns {
	if c := s.cols.Load(); c != nil && c.ti == ti {
		return c
	}
	sch := ti.schema.Schema
	indexed := map[int]bool{}
	for _, ix := range ti.indexes {
		for _, c := range ix.cols {
			indexed[c] = true
		}
	}
	pkPos := map[int]int{}
	if ti.primary != nil {
		for i, ord := range ti.primary.cols {
			pkPos[ord] = i
		}
	}
	resolve := func(name string) shapeColumn {
		ord := sch.IndexOfColName(name)
		if ord < 0 {
			return shapeColumn{ord: -1, pkPos: -1}
		}
		c := sch[ord]
		sc := shapeColumn{ord: ord, pkPos: -1, indexed: indexed[ord],
			gf: expression.NewGetFieldWithTable(ord, 1, c.Type, c.DatabaseSource, c.Source, c.Name, c.Nullable)}
		if i, ok := pkPos[ord]; ok {
			sc.pkPos = i
		}
		return sc
	}
	c := &shapeColumns{ti: ti, sets: make([]shapeColumn, len(s.sets)), conds: make([]shapeColumn, len(s.conds))}
	for i, st := range s.sets {
		c.sets[i] = resolve(st.col)
	}
	for i, cd := range s.conds {
		c.conds[i] = resolve(cd.col)
	}
	s.cols.Store(c)
	return c
}

type updateSet struct {
	col string
	val insertVal
}

// updateCond is one conjunct of the WHERE clause.
type updateCond struct {
	col     string
	op      string // a comparison operator, ast.IsNullStr or ast.IsNotNullStr
	val     insertVal
	valLeft bool // written `v op col`
}

// updateShapeFor returns the cached or newly parsed shape of query, nil when
// the statement must go through go-mysql-server.
func (e *Engine) updateShapeFor(ctx *gsql.Context, query string) *updateShape {
	return shapeOf(ctx, &e.updShapes, e.sqle.Parser, query, parseUpdateShape)
}

// argOrder numbers `?` parameters: they arrive as :v1, :v2, … in text
// order; named parameters are not taken.
type argOrder map[int]bool

func (seen argOrder) value(ex ast.Expr) (insertVal, bool) {
	switch v := ex.(type) {
	case *ast.NullVal:
		return insertVal{}, true
	case *ast.SQLVal:
		switch v.Type {
		case ast.ValArg:
			n, err := strconv.Atoi(strings.TrimPrefix(string(v.Val), ":v"))
			if err != nil || n < 1 || seen[n] || !strings.HasPrefix(string(v.Val), ":v") {
				return insertVal{}, false
			}
			seen[n] = true
			return insertVal{arg: n}, true
		case ast.StrVal, ast.IntVal, ast.FloatVal:
			return insertVal{lit: v}, true
		}
	}
	return insertVal{}, false
}

func plainColumn(ex ast.Expr) (string, bool) {
	c, ok := ex.(*ast.ColName)
	if !ok || !c.Qualifier.IsEmpty() || c.StoredProcVal != nil {
		return "", false
	}
	return c.Name.String(), true
}

func parseUpdateShape(ctx *gsql.Context, p gsql.Parser, query string) *updateShape {
	stmt, next, err := p.ParseOneWithOptions(ctx, query, gsql.LoadSqlMode(ctx).ParserOptions())
	if err != nil || (next != 0 && next < len(query)) {
		return nil
	}
	u, ok := stmt.(*ast.Update)
	if !ok || u.Ignore != "" || len(u.Comments) > 0 || u.With != nil || len(u.OrderBy) > 0 || u.Limit != nil ||
		len(u.Returning) > 0 || len(u.TableExprs) != 1 || len(u.Exprs) == 0 || u.Where == nil || u.Where.Type != ast.WhereStr {
		return nil
	}
	ate, ok := u.TableExprs[0].(*ast.AliasedTableExpr)
	if !ok || len(ate.Partitions) > 0 || !ate.As.IsEmpty() || ate.Hints != nil || ate.AsOf != nil || ate.Lateral {
		return nil
	}
	tn, ok := ate.Expr.(ast.TableName)
	if !ok || !tn.SchemaQualifier.IsEmpty() {
		return nil
	}
	s := &updateShape{db: tn.DbQualifier.String(), table: tn.Name.String()}
	seen := argOrder{}
	for _, a := range u.Exprs {
		if a.Name == nil || !a.Name.Qualifier.IsEmpty() || a.Name.StoredProcVal != nil {
			return nil
		}
		v, ok := seen.value(a.Expr)
		if !ok {
			return nil
		}
		s.sets = append(s.sets, updateSet{col: a.Name.Name.String(), val: v})
	}
	if !s.addConds(seen, u.Where.Expr) {
		return nil
	}
	s.nargs = len(seen)
	for n := 1; n <= s.nargs; n++ {
		if !seen[n] {
			return nil
		}
	}
	return s
}

// addConds appends the conjuncts of ex in the order the planner builds them.
func (s *updateShape) addConds(seen argOrder, ex ast.Expr) bool {
	switch x := ex.(type) {
	case *ast.AndExpr:
		return s.addConds(seen, x.Left) && s.addConds(seen, x.Right)
	case *ast.IsExpr:
		op := strings.ToLower(x.Operator)
		col, ok := plainColumn(x.Expr)
		if !ok || (op != ast.IsNullStr && op != ast.IsNotNullStr) {
			return false
		}
		s.conds = append(s.conds, updateCond{col: col, op: op})
		return true
	case *ast.ComparisonExpr:
		op := strings.ToLower(x.Operator)
		switch op {
		case ast.EqualStr, ast.LessThanStr, ast.LessEqualStr, ast.GreaterThanStr, ast.GreaterEqualStr, ast.NullSafeEqualStr:
		default:
			return false
		}
		if x.Escape != nil {
			return false
		}
		c := updateCond{op: op}
		var ok bool
		var valEx ast.Expr
		if c.col, ok = plainColumn(x.Left); ok {
			valEx = x.Right
		} else if c.col, ok = plainColumn(x.Right); ok {
			valEx, c.valLeft = x.Left, true
		} else {
			return false
		}
		if c.val, ok = seen.value(valEx); !ok {
			return false
		}
		s.conds = append(s.conds, c)
		return true
	}
	return false
}

// preparedUpdate is an update shape bound to a table and arguments.
type preparedUpdate struct {
	key    []byte            // the primary key the statement's range seeks
	guard  gsql.Expression   // the primary-key equalities (dropped by the engine as the range expresses them); nil when the key implies them
	filter gsql.Expression   // the other conjuncts, nil when none
	sets   []gsql.Expression // SetField, in statement order
	cols   *shapeColumns     // the shape's columns in the table
}

// prepareUpdate builds the expressions and key the engine's plan would hold;
// ok false means the statement must go through go-mysql-server.
func prepareUpdate(ctx *gsql.Context, s *updateShape, ti *tableInfo, args []driver.NamedValue) (pu preparedUpdate, ok bool) {
	defer func() {
		if recover() != nil { // planbuilder reports conversion errors by panicking
			pu, ok = preparedUpdate{}, false
		}
	}()
	sch := ti.schema.Schema
	bd := binder{ctx: ctx, args: args}
	literal := bd.literal
	cols := s.columnsFor(ti)
	pu.cols = cols

	pu.sets = make([]gsql.Expression, 0, len(s.sets))
	for i, st := range s.sets {
		gf, ord := cols.sets[i].gf, cols.sets[i].ord
		if gf == nil || sch[ord].PrimaryKey {
			return preparedUpdate{}, false
		}
		lit, ok := literal(st.val)
		if !ok {
			return preparedUpdate{}, false
		}
		pu.sets = append(pu.sets, expression.NewSetField(gf, lit))
	}

	pkVals := make(gsql.Row, len(sch))
	pkSet := make([]bool, len(sch))
	var guards, filters []gsql.Expression
	for i, c := range s.conds {
		gf, ord := cols.conds[i].gf, cols.conds[i].ord
		if gf == nil {
			return preparedUpdate{}, false
		}
		isPK := sch[ord].PrimaryKey
		if c.op == ast.IsNullStr || c.op == ast.IsNotNullStr {
			if isPK {
				return preparedUpdate{}, false
			}
			var ex gsql.Expression = expression.NewIsNull(gf)
			if c.op == ast.IsNotNullStr {
				ex = expression.NewNot(ex)
			}
			filters = append(filters, ex)
			continue
		}
		lit, ok := literal(c.val)
		if !ok {
			return preparedUpdate{}, false
		}
		elit, expanded, err := expandComparisonLiteral(ctx, gf, lit)
		if err != nil {
			return preparedUpdate{}, false
		}
		var left, right gsql.Expression = gf, elit
		if c.valLeft {
			left, right = right, left
		}
		ex, ok := comparison(c.op, left, right, true)
		if !ok {
			return preparedUpdate{}, false
		}
		if !isPK {
			if cols.conds[i].indexed && !expanded && lit.Value() != nil {
				return preparedUpdate{}, false
			}
			filters = append(filters, ex)
			continue
		}
		if c.op != ast.EqualStr || pkSet[ord] {
			return preparedUpdate{}, false
		}
		v, ok := pointKeyValue(ctx, sch[ord], elit, lit)
		if !ok {
			return preparedUpdate{}, false
		}
		pkVals[ord], pkSet[ord] = v, true
		if !keyImpliesEqual(sch[ord], lit) {
			guards = append(guards, ex)
		}
	}
	for _, ord := range ti.primary.cols {
		if !pkSet[ord] {
			return preparedUpdate{}, false
		}
	}
	key, _, err := keyOf(make([]byte, 0, 64), pkVals, ti.primary.cols, ti.primary.kinds, nil)
	if err != nil {
		return preparedUpdate{}, false
	}
	pu.key = key
	if len(guards) > 0 {
		pu.guard = expression.JoinAnd(guards...)
	}
	if len(filters) > 0 {
		pu.filter = expression.JoinAnd(filters...)
	}
	return pu, true
}

// keyImpliesEqual reports whether a row found under the key built from
// `col = lit` (pointKeyValue) needs no check with the engine's comparison:
// for a VARBINARY or BLOB column and a string or bytes literal the engine
// compares both sides as bytes (castLeftAndRight's ConvertToBinary, or the
// column type's own Compare when the literal was expanded to it), and the
// key holds exactly the literal's bytes, as does the row stored under it.
// Evaluating that comparison costs a dozen allocations per statement.
func keyImpliesEqual(col *gsql.Column, lit *expression.Literal) bool {
	switch col.Type.Type() {
	case sqltypes.VarBinary, sqltypes.Blob:
	default:
		return false // BINARY(n) pads; character columns compare by collation
	}
	switch lit.Value().(type) {
	case string, []byte:
		return types.IsText(lit.Type()) || types.IsBinaryType(lit.Type())
	}
	return false
}

// expandComparisonLiteral is planbuilder.typeExpandComparisonLiteral for
// `col op literal`: a literal of the column's own type family that fits the
// column is converted to the column type at plan time.
func expandComparisonLiteral(ctx *gsql.Context, gf *expression.GetField, lit *expression.Literal) (*expression.Literal, bool, error) {
	lt, rt := gf.Type(), lit.Type()
	if types.IsSigned(lt) && types.IsSigned(rt) ||
		types.IsUnsigned(lt) && types.IsUnsigned(rt) ||
		types.IsFloat(lt) && types.IsFloat(rt) ||
		types.IsDecimal(lt) && types.IsDecimal(rt) ||
		types.IsText(lt) && types.IsText(rt) {
		if lt.MaxTextResponseByteLength(ctx) >= rt.MaxTextResponseByteLength(ctx) {
			val, _, err := lt.Convert(ctx, lit.Value())
			if err != nil && !expression.ErrNilOperand.Is(err) {
				return nil, false, err
			}
			return expression.NewLiteral(val, lt), true, nil
		}
	}
	return lit, false, nil
}

// pointKeyValue is the key value the engine's range builder would seek for
// `pk = lit` (sql.MySQLIndexBuilder.Equals: the column type's Convert), when
// that seek and the engine's comparison cannot disagree: an integer for an
// integer column, a string for a string column that compares bytes without
// padding, converted exactly. The value is only ever encoded into a key.
func pointKeyValue(ctx *gsql.Context, col *gsql.Column, expanded *expression.Literal, orig *expression.Literal) (interface{}, bool) {
	v := expanded.Value()
	if v == nil {
		return nil, false
	}
	ot := orig.Type()
	switch {
	case types.IsInteger(col.Type):
		if !types.IsInteger(ot) {
			return nil, false
		}
	case types.IsText(col.Type) || types.IsBinaryType(col.Type):
		if !(types.IsText(ot) || types.IsBinaryType(ot)) {
			return nil, false
		}
		tc, ok := col.Type.(gsql.TypeWithCollation)
		if !ok {
			return nil, false
		}
		if name := tc.Collation().Name(); name != "binary" && !strings.HasSuffix(name, "_0900_bin") {
			return nil, false
		}
		if col.Type.Type() == sqltypes.Binary {
			return nil, false // BINARY(n) pads
		}
	default:
		return nil, false
	}
	if s, ok := v.(string); ok && keyImpliesEqual(col, expanded) {
		// Convert would return s's bytes when they fit; the key encodes a
		// string and its bytes alike.
		if st, ok := col.Type.(types.StringType); ok && int64(len(s)) <= st.MaxCharacterLength() {
			return s, true
		}
	}
	conv, inRange, err := col.Type.Convert(ctx, v)
	if err != nil || !inRange {
		return nil, false
	}
	return conv, true
}

// execUpdate runs an eligible UPDATE shape with args on the session of ctx.
func (e *Engine) execUpdate(ctx *gsql.Context, sess *Session, s *updateShape, args []driver.NamedValue) fastInsertResult {
	var none fastInsertResult
	if !positional(args, s.nargs) || !ownTxn(ctx, true) {
		return none
	}
	ti := e.statementTable(ctx, s.db, s.table)
	if ti == nil || ti.primary == nil || len(ti.def.Checks) > 0 || e.triggers.Load() > 0 || e.hasForeignKeys(ti) { // the engine enforces CHECKs and foreign keys and runs triggers
		return none
	}
	sch := ti.schema.Schema
	for _, col := range sch {
		if col.OnUpdate != nil || col.Generated != nil || col.Virtual {
			return none // the planner adds assignments for these
		}
	}
	// Binding keeps the warnings it raises (conversions of the literals)
	// and drops the previous statement's: QueryWithBindings around bindQuery.
	numPrevWarnings := len(ctx.Session.Warnings())
	pu, ok := prepareUpdate(ctx, s, ti, args)
	if !ok {
		return none
	}
	keepBindingWarnings(ctx, numPrevWarnings)

	// From here on the steps are go-mysql-server's for this plan: begin
	// the transaction, take the updater (the writer), read the range, filter,
	// apply SET, write changed rows, count, commit an autocommit statement.
	if err := beginStatement(ctx, sess); err != nil {
		e.countUpdate(ctx)
		return fastInsertResult{handled: true, err: err}
	}
	autoCommit, err := plan.IsSessionAutocommit(ctx)
	if err != nil {
		e.countUpdate(ctx)
		return fastInsertResult{handled: true, err: err}
	}
	ed := e.fastEditor(ctx, ti)
	ed.markStatement()
	old, found, err := e.readPoint(ctx, ti, pu.key, nil)
	if err == nil && found && pu.guard != nil {
		var res interface{}
		if res, err = gsql.EvaluateCondition(ctx, pu.guard, old); err != nil || !gsql.IsTrue(res) {
			// The engine's comparison disagrees with the key seek (or
			// failed): let it answer. Nothing has been written; the
			// transaction started here is the one it continues.
			_ = ed.Close(ctx)
			return none
		}
	}
	e.countUpdate(ctx)

	var matched, changed int64
	if err == nil && found && pu.filter != nil {
		var res interface{}
		if res, err = gsql.EvaluateCondition(ctx, pu.filter, old); err == nil && !gsql.IsTrue(res) {
			found = false
		}
	}
	if err == nil && found {
		matched = 1
		var diff bool
		if diff, err = updateRow(ctx, ed, sch, pu.sets, old); diff {
			changed = 1
		}
	}
	err = endEdit(ctx, ed, err)
	affected := changed
	if ctx.Client().Capabilities&mysql.CapabilityClientFoundRows != 0 {
		affected = matched
	}
	if err == nil {
		ctx.SetLastQueryInfoInt(gsql.FoundRows, matched)
		ctx.SetLastQueryInfoInt(gsql.RowCount, affected)
	}
	commitErr := commitAutocommit(ctx, sess, autoCommit)
	if err == nil {
		err = commitErr
	}
	if err != nil {
		return fastInsertResult{handled: true, err: err}
	}
	return fastInsertResult{handled: true, affected: affected}
}

func (e *Engine) countUpdate(ctx *gsql.Context) {
	e.fastUpdates.Add(1)
	gsql.IncrementStatusVariable(ctx, "Questions", 1)
	gsql.IncrementStatusVariable(ctx, "Com_update", 1)
}

// readPoint reads the row at key the way the statement's index scan does:
// through the statement's transaction (the write transaction once the
// updater holds the writer).
// Only the columns need marks are decoded (all when it is nil).
func (e *Engine) readPoint(ctx *gsql.Context, ti *tableInfo, key []byte, need []bool) (gsql.Row, bool, error) {
	data, err := readData(ctx, ti)
	if data == nil {
		return nil, false, err // no bucket: the table's storage is gone, the scan finds nothing
	}
	v := data.Get(key)
	if v == nil {
		return nil, false, nil
	}
	e.keysRead.Add(1)
	row, err := decodeRowInto(nil, v, need)
	if err != nil {
		return nil, false, err
	}
	return row, true, nil
}

// updateRow is updateSourceIter.Next + updateIter.Next for one row: apply
// the assignments in order, and write the row only when it changed, after
// the NOT NULL check. It reports whether the row changed.
func updateRow(ctx *gsql.Context, ed *editor, sch gsql.Schema, sets []gsql.Expression, old gsql.Row) (bool, error) {
	row := old
	for _, set := range sets {
		v, err := set.Eval(ctx, row)
		if err != nil {
			return false, err
		}
		r, ok := v.(gsql.Row)
		if !ok {
			return false, plan.ErrUpdateUnexpectedSetResult.New(v)
		}
		row = r
	}
	equal, err := rowsEqual(ctx, old, row, sch)
	if err != nil || equal {
		return false, err
	}
	for i, col := range sch {
		if !col.Nullable && row[i] == nil {
			return false, gsql.ErrInsertIntoNonNullableProvidedNull.New(col.Name)
		}
	}
	if err := ed.Update(ctx, old, row); err != nil {
		return false, err
	}
	return true, nil
}

// rowsEqual is old.Equals(ctx, row, sch) without its conversions for the
// common case: for two []byte values of a VARBINARY/BLOB column that both
// fit it, the column type's Compare converts each to an equal copy (no
// error when it fits) and compares them byte by byte under the binary
// collation, so bytes.Equal gives its answer. Any other column takes
// Compare, in the same order, so its errors come out as before.
func rowsEqual(ctx *gsql.Context, old, row gsql.Row, sch gsql.Schema) (bool, error) {
	if len(row) != len(old) || len(row) != len(sch) {
		return false, nil
	}
	for i, a := range old {
		b := row[i]
		ab, aok := a.([]byte)
		bb, bok := b.([]byte)
		if aok && bok && types.IsBinaryType(sch[i].Type) && binaryFits(sch[i].Type, len(ab)) && binaryFits(sch[i].Type, len(bb)) {
			if !bytes.Equal(ab, bb) {
				return false, nil
			}
			continue
		}
		cmp, err := sch[i].Type.Compare(ctx, a, b)
		if err != nil {
			return false, err
		}
		if cmp != 0 {
			return false, nil
		}
	}
	return true, nil
}

// comparison builds go-mysql-server's expression for a WHERE conjunct's
// operator; <=> only when nullSafe allows it. false for any other operator.
func comparison(op string, left, right gsql.Expression, nullSafe bool) (gsql.Expression, bool) {
	switch op {
	case ast.EqualStr:
		return expression.NewEquals(left, right), true
	case ast.LessThanStr:
		return expression.NewLessThan(left, right), true
	case ast.LessEqualStr:
		return expression.NewLessThanOrEqual(left, right), true
	case ast.GreaterThanStr:
		return expression.NewGreaterThan(left, right), true
	case ast.GreaterEqualStr:
		return expression.NewGreaterThanOrEqual(left, right), true
	case ast.NullSafeEqualStr:
		if nullSafe {
			return expression.NewNullSafeEquals(left, right), true
		}
	}
	return nil, false
}
