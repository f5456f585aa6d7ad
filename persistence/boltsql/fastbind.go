package boltsql

import (
	"database/sql/driver"
	"math"
	"sync/atomic"
	"time"
	"unicode/utf8"

	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Binding without the vitess round trip. go-mysql-server binds a `?` by
// building a vitess bind variable from the Go value, a vitess value from
// that, an AST literal from the value, and finally planbuilder.ConvertVal's
// expression.Literal; each step copies the bytes. For the Go types a
// database/sql caller passes (CheckNamedValue narrows them to these),
// argValue gives the literal's value and type directly, as the chain would
// (toBinding + ConvertVal); anything else takes the chain.

// argValue returns the value and type of the literal go-mysql-server binds
// for a bind parameter v; ok false means the caller must take the chain.
// A nil value with ok is NULL.
func argValue(ctx *gsql.Context, v driver.Value) (val interface{}, typ gsql.Type, ok bool) {
	switch x := v.(type) {
	case nil:
		return nil, types.Null, true
	case string:
		return x, longText(ctx), true
	case []byte:
		return string(x), longText(ctx), true
	case time.Time:
		// toBinding's format; the literal is a string, as for a string argument.
		return x.UTC().Format("2006-01-02 15:04:05.999999"), longText(ctx), true
	case bool:
		if x {
			return int8(1), types.Int8, true
		}
		return int8(0), types.Int8, true
	case int64:
		v, t := intLiteral(x)
		return v, t, true
	case uint64:
		if x <= math.MaxInt64 {
			v, t := intLiteral(int64(x))
			return v, t, true
		}
		return x, types.Uint64, true
	case float64:
		// The chain formats it and parses it back: exact for finite values,
		// -0 included (an INSERT stores 0 for it because plan.Values
		// normalizes it, which shapeRows repeats; see normalizeNegativeZero).
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, nil, false
		}
		return x, types.Float64, true
	}
	return nil, nil, false
}

// argLiteral is argValue as the expression.Literal ConvertVal would build.
func argLiteral(ctx *gsql.Context, v driver.Value) (*expression.Literal, bool) {
	val, typ, ok := argValue(ctx, v)
	if !ok {
		return nil, false
	}
	return expression.NewLiteral(val, typ), true
}

// intLiteral is planbuilder's convertInt for a decimal integer: the
// smallest of int8, uint8, int16, uint16, int32, uint32, int64 that holds it,
// tried in that order.
func intLiteral(x int64) (interface{}, gsql.Type) {
	switch {
	case x >= math.MinInt8 && x <= math.MaxInt8:
		return int8(x), types.Int8
	case x >= 0 && x <= math.MaxUint8:
		return uint8(x), types.Uint8
	case x >= math.MinInt16 && x <= math.MaxInt16:
		return int16(x), types.Int16
	case x >= 0 && x <= math.MaxUint16:
		return uint16(x), types.Uint16
	case x >= math.MinInt32 && x <= math.MaxInt32:
		return int32(x), types.Int32
	case x >= 0 && x <= math.MaxUint32:
		return uint32(x), types.Uint32
	}
	return x, types.Int64
}

// longTextOf caches types.CreateLongText for the last collation asked for
// (a session's collation rarely changes; building the type allocates).
var longTextOf atomic.Pointer[longTextEntry]

type longTextEntry struct {
	coll gsql.CollationID
	typ  gsql.Type
}

func longText(ctx *gsql.Context) gsql.Type {
	coll := ctx.GetCollation()
	if e := longTextOf.Load(); e != nil && e.coll == coll {
		return e.typ
	}
	e := &longTextEntry{coll: coll, typ: types.CreateLongText(coll)}
	longTextOf.Store(e)
	return e.typ
}

// convertString is StringType.Convert for a string value in the cases whose
// answer is known without it: a string that fits the column and (for a
// character column) is valid UTF-8 is returned as it is (Convert returns
// an equal copy), and for VARBINARY/BLOB as its bytes. ok false: call Convert.
func convertString(typ gsql.Type, v interface{}) (interface{}, bool) {
	s, isStr := v.(string)
	st, isStrType := typ.(types.StringType)
	if !isStr || !isStrType {
		return nil, false
	}
	switch st.Type() {
	case sqltypes.VarBinary, sqltypes.Blob:
		if !binaryFits(typ, len(s)) {
			return nil, false
		}
		return []byte(s), true
	case sqltypes.Text:
		if int64(len(s)) > st.MaxByteLength() || !utf8.ValidString(s) {
			return nil, false
		}
		return s, true
	case sqltypes.VarChar, sqltypes.Char:
		if int64(len(s)) > st.MaxCharacterLength() || !utf8.ValidString(s) {
			return nil, false
		}
		return s, true
	}
	return nil, false
}

// binaryFits says whether n bytes are stored as they are in typ, a
// VARBINARY or BLOB column (convertString's test for those).
func binaryFits(typ gsql.Type, n int) bool {
	st, ok := typ.(types.StringType)
	if !ok {
		return false
	}
	switch st.Type() {
	case sqltypes.VarBinary, sqltypes.Blob:
		return int64(n) <= st.MaxCharacterLength()
	}
	return false
}

// binder builds the literals of a shape's values the way the planner
// does: a bind parameter by argValue (or the vitess chain for other
// types), a literal of the statement text by planbuilder.ConvertVal, which
// reports errors by panicking (callers recover).
type binder struct {
	ctx  *gsql.Context
	args []driver.NamedValue
	b    *planbuilder.Builder // made at the first literal of the text
}

// value is the value of v's literal: what the literal evaluates to.
func (bd *binder) value(v insertVal) (interface{}, bool) {
	if v.arg > 0 {
		if val, _, ok := argValue(bd.ctx, bd.args[v.arg-1].Value); ok {
			return val, true
		}
	}
	l, ok := bd.literal(v)
	if !ok {
		return nil, false
	}
	return l.Value(), true
}

// bytesArg is v's value when it is a []byte bind parameter.
func (bd *binder) bytesArg(v insertVal) ([]byte, bool) {
	if v.arg <= 0 {
		return nil, false
	}
	b, ok := bd.args[v.arg-1].Value.([]byte)
	return b, ok
}

func (bd *binder) literal(v insertVal) (*expression.Literal, bool) {
	lit := v.lit
	if v.arg > 0 {
		if l, ok := argLiteral(bd.ctx, bd.args[v.arg-1].Value); ok {
			return l, true
		}
		ex, err := toBinding(bd.args[v.arg-1].Value)
		if err != nil {
			return nil, false
		}
		switch x := ex.(type) {
		case *ast.NullVal:
			lit = nil
		case *ast.SQLVal:
			lit = x
		default:
			return nil, false
		}
	}
	if lit == nil {
		return expression.NewLiteral(nil, types.Null), true
	}
	if bd.b == nil {
		bd.b = planbuilder.New(bd.ctx, nil, nil, nil)
	}
	l, isLit := bd.b.ConvertVal(lit).(*expression.Literal)
	return l, isLit
}
