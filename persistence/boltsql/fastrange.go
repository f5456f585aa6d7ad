package boltsql

import (
	"bytes"
	"database/sql/driver"
	"slices"
	"strconv"
	"strings"

	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// The primary-key range fast path, the ordered sibling of the point select.
// The journal replays and pages by key range:
//
//	SELECT cols|* FROM t WHERE pk1 = v [AND pk2 = v ...]
//	    [AND pkN {>|>=|<|<=} v [AND pkN {<|<=|>|>=} v]] [AND col <op> v ...]
//	    ORDER BY pkJ, ..., pkLast [LIMIT n|?]
//
// where the equalities fix a leading run of the key, the optional bounds
// constrain the key column right after it, and ORDER BY names the key
// columns in key order, ascending, from any fixed column (or the bounded
// one) to the key's last column: the rows then come out in the byte order
// of the (order-preserving) keys, which is the order the engine returns
// after eliminating its Sort. The span is read with a bbolt cursor through
// the statement's transaction, every row is checked against the key
// predicates with go-mysql-server's own comparisons (a disagreement hands
// the statement to the engine before anything is returned), the other
// predicates filter, and the read stops at LIMIT.
//
// Not taken, besides what the point path refuses: DESC, ORDER BY columns
// that are not the key's trailing columns in order, OFFSET, bounds on a
// non-integer key column or on a column after the bounded one, `<=>`/IS
// NULL on key columns, a sql_select_limit other than its default, LIMIT
// values that are not non-negative integers.

// parseOrderLimit parses ORDER BY and LIMIT of a ranged select shape into s;
// false means the statement is not eligible.
func (s *selectShape) parseOrderLimit(seen argOrder, sel *ast.Select) bool {
	for _, o := range sel.OrderBy {
		if o == nil || o.Direction != ast.AscScr {
			return false
		}
		col, ok := plainColumn(o.Expr)
		if !ok {
			return false
		}
		s.order = append(s.order, col)
	}
	if sel.Limit != nil {
		if sel.Limit.Offset != nil || sel.Limit.Rowcount == nil {
			return false
		}
		v, ok := seen.value(sel.Limit.Rowcount)
		if !ok || (v.arg == 0 && (v.lit == nil || v.lit.Type != ast.IntVal)) {
			return false
		}
		s.limit = &v
	}
	// Without ORDER BY the engine's row order is its plan's business.
	return len(s.order) > 0
}

// preparedRange is a ranged select shape bound to a table and arguments.
type preparedRange struct {
	lo, hi []byte          // the half-open key span; hi nil is unbounded
	empty  bool            // the bounds admit no key
	fixed  gsql.Expression // the key prefix's equalities, nil when none
	guard  gsql.Expression // the bounds on the next key column, nil when none
	filter gsql.Expression // the other conjuncts, nil when none
	limit  int64           // -1 when none
	need   []bool          // columns guard and filter read
}

// prepareRange builds the span, expressions and limit of a ranged select;
// ok false means the statement must go through go-mysql-server.
func prepareRange(ctx *gsql.Context, s *selectShape, ti *tableInfo, args []driver.NamedValue) (pr preparedRange, ok bool) {
	defer func() {
		if recover() != nil { // planbuilder reports conversion errors by panicking
			pr, ok = preparedRange{}, false
		}
	}()
	sch := ti.schema.Schema
	pk := ti.primary.cols
	bd := binder{ctx: ctx, args: args}
	literal := bd.literal
	cols := s.where.columnsFor(ti)

	eq := make([]interface{}, len(pk))
	eqSet := make([]bool, len(pk))
	type bound struct {
		set    bool
		strict bool
		v      interface{}
	}
	var lower, upper bound
	rangeAt := -1
	var eqGuards, guards, filters []gsql.Expression
	pr.need = make([]bool, len(sch))
	for ci, c := range s.where.conds {
		cc := cols.conds[ci]
		ord, gf := cc.ord, cc.gf
		if ord < 0 {
			return preparedRange{}, false
		}
		col := sch[ord]
		i, isPK := cc.pkPos, cc.pkPos >= 0
		if c.op == ast.IsNullStr || c.op == ast.IsNotNullStr {
			if isPK {
				return preparedRange{}, false
			}
			var ex gsql.Expression = expression.NewIsNull(gf)
			if c.op == ast.IsNotNullStr {
				ex = expression.NewNot(ex)
			}
			filters = append(filters, ex)
			pr.need[ord] = true
			continue
		}
		lit, ok := literal(c.val)
		if !ok {
			return preparedRange{}, false
		}
		elit, expanded, err := expandComparisonLiteral(ctx, gf, lit)
		if err != nil {
			return preparedRange{}, false
		}
		// `v op col` is `col op' v`.
		op := c.op
		if c.valLeft {
			switch op {
			case ast.LessThanStr:
				op = ast.GreaterThanStr
			case ast.LessEqualStr:
				op = ast.GreaterEqualStr
			case ast.GreaterThanStr:
				op = ast.LessThanStr
			case ast.GreaterEqualStr:
				op = ast.LessEqualStr
			}
		}
		var left, right gsql.Expression = gf, elit
		if c.valLeft {
			left, right = right, left
		}
		ex, ok := comparison(c.op, left, right, false)
		if !ok {
			return preparedRange{}, false
		}
		if !isPK {
			if cc.indexed && !expanded && lit.Value() != nil {
				return preparedRange{}, false
			}
			filters = append(filters, ex)
			pr.need[ord] = true
			continue
		}
		v, ok := pointKeyValue(ctx, col, elit, lit)
		if !ok {
			return preparedRange{}, false
		}
		switch op {
		case ast.EqualStr:
			if eqSet[i] {
				return preparedRange{}, false
			}
			eq[i], eqSet[i] = v, true
			if !keyImpliesEqual(col, lit) {
				eqGuards = append(eqGuards, ex)
			}
			continue
		default:
			if !types.IsInteger(col.Type) || (rangeAt >= 0 && rangeAt != i) {
				return preparedRange{}, false
			}
			rangeAt = i
			bd := &upper
			if op == ast.GreaterThanStr || op == ast.GreaterEqualStr {
				bd = &lower
			}
			if bd.set {
				return preparedRange{}, false
			}
			*bd = bound{set: true, strict: op == ast.GreaterThanStr || op == ast.LessThanStr, v: v}
			pr.need[ord] = true
		}
		guards = append(guards, ex)
	}
	fixed := 0
	for fixed < len(pk) && eqSet[fixed] {
		fixed++
	}
	for i := fixed; i < len(pk); i++ {
		if eqSet[i] {
			return preparedRange{}, false // an equality after a gap: not a prefix
		}
	}
	if rangeAt >= 0 && rangeAt != fixed {
		return preparedRange{}, false
	}
	// ORDER BY: the key's columns from start to its last one, start at
	// most the first unfixed column.
	start := -1
	for n, name := range s.order {
		ord := sch.IndexOfColName(name)
		i := slices.Index(pk, ord)
		if ord < 0 || i < 0 || (n == 0 && i > fixed) || (n > 0 && i != start+n) {
			return preparedRange{}, false
		}
		if n == 0 {
			start = i
		}
	}
	if start < 0 || start+len(s.order) != len(pk) {
		return preparedRange{}, false
	}

	pr.limit = -1
	if s.limit != nil {
		var n int64
		if s.limit.arg > 0 {
			v, isInt := args[s.limit.arg-1].Value.(int64)
			if !isInt {
				return preparedRange{}, false
			}
			n = v
		} else {
			v, err := strconv.ParseInt(string(s.limit.lit.Val), 10, 64)
			if err != nil {
				return preparedRange{}, false
			}
			n = v
		}
		if n < 0 {
			return preparedRange{}, false
		}
		pr.limit = n
	}

	var prefix []byte
	for i := 0; i < fixed; i++ {
		var err error
		if prefix, err = appendKeyValue(prefix, ti.primary.kinds[i], eq[i]); err != nil {
			return preparedRange{}, false
		}
	}
	pr.lo = prefix
	pr.hi = prefixEnd(prefix)
	if lower.set {
		k, err := appendKeyValue(append([]byte(nil), prefix...), ti.primary.kinds[fixed], lower.v)
		if err != nil {
			return preparedRange{}, false
		}
		pr.lo = k
		if lower.strict {
			if pr.lo = prefixEnd(k); pr.lo == nil {
				pr.empty = true
			}
		}
	}
	if upper.set {
		k, err := appendKeyValue(append([]byte(nil), prefix...), ti.primary.kinds[fixed], upper.v)
		if err != nil {
			return preparedRange{}, false
		}
		pr.hi = k
		if !upper.strict {
			if pr.hi = prefixEnd(k); pr.hi == nil {
				pr.hi = prefixEnd(prefix)
			}
		}
	}
	if pr.hi != nil && bytes.Compare(pr.lo, pr.hi) >= 0 {
		pr.empty = true
	}
	if len(eqGuards) > 0 {
		pr.fixed = expression.JoinAnd(eqGuards...)
	}
	if len(guards) > 0 {
		pr.guard = expression.JoinAnd(guards...)
	}
	if len(filters) > 0 {
		pr.filter = expression.JoinAnd(filters...)
	}
	return pr, true
}

// readRange reads the rows of pr's span in key order through the
// statement's transaction, filtered and cut at the limit. disagree true
// means a row in the span failed the engine's own key comparison: the
// statement must go to the engine.
func (e *Engine) readRange(ctx *gsql.Context, ti *tableInfo, pr *preparedRange, ords []int) (out []gsql.Row, disagree bool, err error) {
	if pr.empty || pr.limit == 0 {
		return nil, false, nil
	}
	data, err := readData(ctx, ti)
	if data == nil {
		return nil, false, err // no bucket: the table's storage is gone, the scan finds nothing
	}
	// Every key in the span starts with the same encoded prefix, and the
	// encoding is injective, so every row holds the same values in the
	// prefix's columns: their equalities are checked on the first row only,
	// and after it only the columns the bounds, filter and projection read
	// are decoded, into one reused row. Projected values are fresh (decoded)
	// and go into one slab.
	need := append([]bool(nil), pr.need...)
	for _, ord := range ords {
		need[ord] = true
	}
	var row gsql.Row
	var slab []interface{}
	first := true
	c := data.Cursor()
	for k, v := c.Seek(pr.lo); k != nil && (pr.hi == nil || bytes.Compare(k, pr.hi) < 0); k, v = c.Next() {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		e.keysRead.Add(1)
		if first {
			row, err = decodeRowInto(row, v, nil)
		} else {
			row, err = decodeRowInto(row, v, need)
		}
		if err != nil {
			return nil, false, err
		}
		if first && pr.fixed != nil {
			res, err := gsql.EvaluateCondition(ctx, pr.fixed, row)
			if err != nil || !gsql.IsTrue(res) {
				return nil, true, nil
			}
		}
		first = false
		if pr.guard != nil {
			res, err := gsql.EvaluateCondition(ctx, pr.guard, row)
			if err != nil || !gsql.IsTrue(res) {
				return nil, true, nil
			}
		}
		if pr.filter != nil {
			res, err := gsql.EvaluateCondition(ctx, pr.filter, row)
			if err != nil {
				return nil, false, err
			}
			if !gsql.IsTrue(res) {
				continue
			}
		}
		if len(slab) < len(ords) {
			n := slabRows(pr.limit, len(out))
			slab = make([]interface{}, len(ords)*n)
			out = slices.Grow(out, n) // the result grows with the slabs, not by doubling from 1
		}
		proj := gsql.Row(slab[:len(ords):len(ords)])
		slab = slab[len(ords):]
		for i, ord := range ords {
			proj[i] = row[ord]
		}
		out = append(out, proj)
		if pr.limit > 0 && int64(len(out)) >= pr.limit {
			break
		}
	}
	return out, false, nil
}

// slabRows is how many projected rows the next slab holds: up to the
// limit, else doubling with the rows read so far.
func slabRows(limit int64, have int) int {
	n := have
	if n < 8 {
		n = 8
	}
	if limit > 0 && limit-int64(have) < int64(n) {
		n = int(limit - int64(have))
	}
	return n
}

var _ = strings.EqualFold
