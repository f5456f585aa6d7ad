package boltsql

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// keyKind is how a column's values are laid out in an order-preserving
// key: a base kind in the low byte, and for keyCollated the collation
// above it (see collatedKind).
type keyKind uint32

const (
	keyNone   keyKind = iota // the column cannot be part of a key
	keySigned                // all signed integer types, BOOL
	keyUnsigned
	keyFloat
	keyBytes // BINARY/VARBINARY/BLOB
	keyTime
	keyText     // strings whose collation orders them as their bytes do: their bytes, as keyBytes
	keyCollated // other strings: their characters' sort weights under the collation
	keyDecimal  // DECIMAL: sign, exponent and digits (see appendDecimal)
)

// collatedKind is keyCollated for strings under collation c.
func collatedKind(c sql.CollationID) keyKind { return keyCollated | keyKind(c)<<8 }

// base is the kind without its collation.
func (k keyKind) base() keyKind { return k & 0xFF }

// collation is a keyCollated kind's collation.
func (k keyKind) collation() sql.CollationID { return sql.CollationID(k >> 8) }

// byteOrderCollation reports whether strings under c compare as their
// UTF-8 bytes do (go-mysql-server weighs each character by its code
// point; TestByteOrderCollationsWeighByCodePoint checks it): their keys
// are their bytes. Not utf8mb3_bin: it weighs every character beyond the
// BMP alike.
func byteOrderCollation(c sql.CollationID) bool {
	switch c {
	case sql.Collation_binary, sql.Collation_utf8mb4_0900_bin, sql.Collation_utf8mb4_bin,
		sql.Collation_utf16_bin, sql.Collation_utf32_bin:
		return true
	}
	return false
}

// keyKindOf returns how values of typ are encoded in keys, or an error naming
// why the type cannot be a key column.
func keyKindOf(col string, typ sql.Type) (keyKind, error) {
	switch {
	case types.IsSigned(typ) || types.IsYear(typ):
		return keySigned, nil
	case types.IsUnsigned(typ):
		return keyUnsigned, nil
	case types.IsFloat(typ):
		return keyFloat, nil
	case types.IsTime(typ):
		return keyTime, nil
	case types.IsDecimal(typ):
		return keyDecimal, nil
	case types.IsBinaryType(typ):
		return keyBytes, nil
	case types.IsText(typ):
		tc, ok := typ.(sql.TypeWithCollation)
		if !ok {
			return keyText, nil
		}
		c := tc.Collation()
		switch name := c.Name(); {
		case byteOrderCollation(c):
			return keyText, nil
		case c.Sorter() != nil:
			return collatedKind(c), nil
		case name == "binary" || strings.HasSuffix(name, "_bin"):
			// No weights in go-mysql-server (it cannot compare such
			// strings either): their bytes, as before weights were keyed.
			return keyText, nil
		default:
			return keyNone, fmt.Errorf("column %s: collation %s cannot be used in a key (go-mysql-server has no sort order for it)", col, name)
		}
	}
	return keyNone, fmt.Errorf("column %s: type %s cannot be used in a primary key or index", col, typ.String())
}

// Key layout: per column, 0x00 for NULL, or 0x01 followed by the value:
// integers as 8 big-endian bytes (signed ones with the sign bit flipped),
// floats as their IEEE bits arranged to sort, times as flipped seconds plus
// nanoseconds, byte strings with 0x00 escaped as 0x00 0xFF and terminated
// by 0x00 0x01, and collated strings as their weights (see appendWeights).
// Every encoding is self-delimiting, so a key built from a
// prefix of the columns is a byte prefix of the full key, and byte order is
// value order: ranges on leading columns become byte ranges.
const (
	keyNull    = 0x00
	keyNotNull = 0x01
)

func appendKeyValue(dst []byte, kind keyKind, v interface{}) ([]byte, error) {
	if v == nil {
		return append(dst, keyNull), nil
	}
	dst = append(dst, keyNotNull)
	switch kind.base() {
	case keySigned:
		i, ok := asInt64(v)
		if !ok {
			return nil, fmt.Errorf("key value %v (%T) is not an integer", v, v)
		}
		return binary.BigEndian.AppendUint64(dst, uint64(i)^(1<<63)), nil
	case keyUnsigned:
		u, ok := asUint64(v)
		if !ok {
			return nil, fmt.Errorf("key value %v (%T) is not an unsigned integer", v, v)
		}
		return binary.BigEndian.AppendUint64(dst, u), nil
	case keyFloat:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		default:
			i, ok := asInt64(v)
			if !ok {
				return nil, fmt.Errorf("key value %v (%T) is not a number", v, v)
			}
			f = float64(i)
		}
		bits := math.Float64bits(f)
		if bits&(1<<63) != 0 {
			bits = ^bits
		} else {
			bits |= 1 << 63
		}
		return binary.BigEndian.AppendUint64(dst, bits), nil
	case keyTime:
		t, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("key value %v (%T) is not a time", v, v)
		}
		t = t.UTC()
		dst = binary.BigEndian.AppendUint64(dst, uint64(t.Unix())^(1<<63))
		return binary.BigEndian.AppendUint32(dst, uint32(t.Nanosecond())), nil
	case keyBytes, keyText:
		switch x := v.(type) {
		case string:
			return appendEscaped(dst, x), nil
		case []byte:
			return appendEscaped(dst, x), nil
		}
		return nil, fmt.Errorf("key value %v (%T) is not a string", v, v)
	case keyDecimal:
		d, err := asDecimal(v)
		if err != nil {
			return nil, err
		}
		return appendDecimal(dst, d), nil
	case keyCollated:
		switch x := v.(type) {
		case string:
			return appendWeights(dst, kind.collation(), x), nil
		case []byte:
			return appendWeights(dst, kind.collation(), string(x)), nil
		}
		return nil, fmt.Errorf("key value %v (%T) is not a string", v, v)
	}
	return nil, fmt.Errorf("key value %v (%T): column kind %d cannot be encoded", v, v, kind)
}

func asDecimal(v interface{}) (decimal.Decimal, error) {
	switch x := v.(type) {
	case decimal.Decimal:
		return x, nil
	case decimal.NullDecimal:
		if x.Valid {
			return x.Decimal, nil
		}
	case float64:
		return decimal.NewFromFloat(x), nil
	case float32:
		return decimal.NewFromFloat32(x), nil
	case string:
		return decimal.NewFromString(x)
	default:
		if i, ok := asInt64(v); ok {
			return decimal.NewFromInt(i), nil
		}
		if u, ok := asUint64(v); ok {
			return decimal.NewFromBigInt(new(big.Int).SetUint64(u), 0), nil
		}
	}
	return decimal.Decimal{}, fmt.Errorf("key value %v (%T) is not a decimal", v, v)
}

// appendDecimal appends d so that keys order as the values do and equal
// values (1.5, 1.50) have one key: a sign byte (0x00 negative, 0x01 zero,
// 0x02 positive), then for d = ±0.d1d2…dn × 10^e (d1 and dn not 0) the
// exponent e as 4 bytes and the digits one byte each (d+1), ended by 0x00
// (a string of digits before its extensions). A negative number has its
// exponent and digits complemented and ends with 0xFF, so a larger
// magnitude sorts first.
func appendDecimal(dst []byte, d decimal.Decimal) []byte {
	coef := d.Coefficient() // a copy
	neg := coef.Sign() < 0
	switch {
	case coef.Sign() == 0:
		return append(dst, 0x01)
	case neg:
		dst = append(dst, 0x00)
		coef.Neg(coef)
	default:
		dst = append(dst, 0x02)
	}
	digits := coef.Text(10)
	e := int64(d.Exponent()) + int64(len(digits))
	digits = strings.TrimRight(digits, "0")
	if neg {
		dst = binary.BigEndian.AppendUint32(dst, uint32(1<<31-e))
		for i := 0; i < len(digits); i++ {
			dst = append(dst, 10-(digits[i]-'0'))
		}
		return append(dst, 0xFF)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(1<<31+e))
	for i := 0; i < len(digits); i++ {
		dst = append(dst, digits[i]-'0'+1)
	}
	return append(dst, 0x00)
}

// appendWeights appends s as its characters' sort weights under c, each
// 0x01 and four bytes, then 0x00. Keys then order and compare as
// go-mysql-server's StringType.Compare does (weight by weight, a string
// before its extensions), so under a case-insensitive collation 'abc' and
// 'ABC' are one key: a lookup of either finds both, and a unique index
// holds one of them.
func appendWeights(dst []byte, c sql.CollationID, s string) []byte {
	enc := c.CharacterSet().Encoder()
	weight := c.Sorter()
	for len(s) > 0 {
		r, n := enc.NextRune(s)
		if n <= 0 {
			break
		}
		dst = append(dst, 0x01)
		dst = binary.BigEndian.AppendUint32(dst, uint32(weight(r))^(1<<31))
		s = s[n:]
	}
	return append(dst, 0x00)
}

// cutToPrefix cuts a value of a prefix index column to its first n
// characters, or n bytes for a binary column, as MySQL keys such a column.
func cutToPrefix(kind keyKind, v interface{}, n uint16) interface{} {
	switch x := v.(type) {
	case string:
		if kind.base() == keyBytes {
			if len(x) > int(n) {
				return x[:n]
			}
			return x
		}
		return x[:runePrefixLen(x, n)]
	case []byte: // not expected for a text column; cut as its string
		if kind.base() == keyBytes {
			if len(x) > int(n) {
				return x[:n]
			}
			return x
		}
		return x[:runePrefixLen(string(x), n)]
	}
	return v
}

// runePrefixLen is the byte length of the first n characters of s.
func runePrefixLen(s string, n uint16) int {
	count := 0
	for i := range s {
		if count == int(n) {
			return i
		}
		count++
	}
	return len(s)
}

// appendEscaped appends b with 0x00 escaped as 0x00 0xFF and the 0x00 0x01
// terminator; a string is read in place (no []byte copy).
func appendEscaped[T string | []byte](dst []byte, b T) []byte {
	start := 0
	for i := 0; i < len(b); i++ {
		if b[i] == 0 {
			dst = append(dst, b[start:i+1]...)
			dst = append(dst, 0xFF)
			start = i + 1
		}
	}
	dst = append(dst, b[start:]...)
	return append(dst, 0x00, 0x01)
}

func asInt64(v interface{}) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case int:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func asUint64(v interface{}) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case uint32:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint8:
		return uint64(x), true
	case uint:
		return uint64(x), true
	}
	if i, ok := asInt64(v); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

// prefixEnd returns the smallest key greater than every key that starts with
// p, or nil when there is none (p is all 0xFF).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// keySpan is the half-open byte interval [lo, hi) of keys to read; hi nil
// means unbounded above. inexact spans may hold keys outside their range
// (it constrains columns after a non-equality column): their rows are
// checked against the range before they are returned.
type keySpan struct {
	lo, hi  []byte
	inexact bool
}

// unconstrained reports whether a column range admits every value and NULL.
func unconstrained(ce sql.MySQLRangeColumnExpr) bool {
	_, lowAll := ce.LowerBound.(sql.BelowNull)
	_, upAll := ce.UpperBound.(sql.AboveAll)
	return lowAll && upAll
}

// spanOfRange converts one range over an index's columns into a byte span.
// The equality prefix becomes a byte prefix and the first non-equality column
// bounds the span; the span is marked inexact when the range also
// constrains columns after that one, or a column of a prefix index (lens[i]
// > 0: its keys hold the column's first characters only, so the bounds are
// cut to them and made inclusive, and the span holds every row whose cut
// value falls in them).
func spanOfRange(kinds []keyKind, lens []uint16, rng sql.MySQLRange) (keySpan, bool, error) {
	var prefix []byte
	var err error
	inexact := false
	for i, ce := range rng {
		if i >= len(kinds) {
			// A primary-key column of an extended index (a foreign key's
			// lookup): the keys hold it in their primary-key suffix, not
			// here; the rows are checked against it.
			if !unconstrained(ce) {
				inexact = true
			}
			continue
		}
		if i < len(lens) && lens[i] > 0 {
			ce = widenToPrefix(ce, kinds[i], lens[i])
			inexact = true
		}
		if nullCut(ce.LowerBound) || nullCut(ce.UpperBound) {
			return keySpan{}, true, nil // "= NULL": no row
		}
		lowerKey, lowerIsKey := ce.LowerBound.(sql.Below)
		upperKey, upperIsKey := ce.UpperBound.(sql.Above)
		if lowerIsKey && upperIsKey {
			if cmp, cerr := ce.Typ.Compare(context.Background(), lowerKey.Key, upperKey.Key); cerr == nil && cmp == 0 {
				prefix, err = appendKeyValue(prefix, kinds[i], lowerKey.Key)
				if err != nil {
					return keySpan{}, false, err
				}
				continue
			}
		}
		// An IS NULL point: [BelowNull, AboveNull].
		if _, ok := ce.LowerBound.(sql.BelowNull); ok {
			if _, ok := ce.UpperBound.(sql.AboveNull); ok {
				prefix = append(prefix, keyNull)
				continue
			}
		}
		var span keySpan
		switch lb := ce.LowerBound.(type) {
		case sql.BelowNull:
			span.lo = append(append([]byte(nil), prefix...), keyNull)
		case sql.AboveNull:
			span.lo = append(append([]byte(nil), prefix...), keyNotNull)
		case sql.Below:
			span.lo, err = appendKeyValue(append([]byte(nil), prefix...), kinds[i], lb.Key)
		case sql.Above:
			var k []byte
			k, err = appendKeyValue(append([]byte(nil), prefix...), kinds[i], lb.Key)
			span.lo = prefixEnd(k)
			if span.lo == nil {
				return keySpan{}, true, nil
			}
		case sql.AboveAll:
			return keySpan{}, true, nil
		default:
			return keySpan{}, false, fmt.Errorf("unsupported lower bound %T", lb)
		}
		if err != nil {
			return keySpan{}, false, err
		}
		switch ub := ce.UpperBound.(type) {
		case sql.AboveAll:
			span.hi = prefixEnd(prefix)
		case sql.AboveNull:
			span.hi = append(append([]byte(nil), prefix...), keyNotNull)
		case sql.BelowNull:
			return keySpan{}, true, nil
		case sql.Above:
			var k []byte
			k, err = appendKeyValue(append([]byte(nil), prefix...), kinds[i], ub.Key)
			span.hi = prefixEnd(k)
		case sql.Below:
			span.hi, err = appendKeyValue(append([]byte(nil), prefix...), kinds[i], ub.Key)
		default:
			return keySpan{}, false, fmt.Errorf("unsupported upper bound %T", ub)
		}
		if err != nil {
			return keySpan{}, false, err
		}
		if span.hi != nil && bytes.Compare(span.lo, span.hi) >= 0 {
			return keySpan{}, true, nil
		}
		span.inexact = inexact
		for _, rest := range rng[i+1:] {
			if !unconstrained(rest) {
				span.inexact = true
			}
		}
		return span, false, nil
	}
	return keySpan{lo: prefix, hi: prefixEnd(prefix), inexact: inexact}, false, nil
}

// nullCut reports a bound at a NULL key, which go-mysql-server builds for
// a comparison with NULL (a lookup join's NULL key): no value is in it.
func nullCut(c sql.MySQLRangeCut) bool {
	switch b := c.(type) {
	case sql.Below:
		return b.Key == nil
	case sql.Above:
		return b.Key == nil
	}
	return false
}

// widenToPrefix is a column range over a prefix index column: both bounds
// cut to n characters and inclusive. Cutting keeps order (a value below
// another has a cut value at most the other's), so every row in the range
// is in the widened one.
func widenToPrefix(ce sql.MySQLRangeColumnExpr, kind keyKind, n uint16) sql.MySQLRangeColumnExpr {
	switch lb := ce.LowerBound.(type) {
	case sql.Below:
		ce.LowerBound = sql.Below{Key: cutToPrefix(kind, lb.Key, n)}
	case sql.Above:
		ce.LowerBound = sql.Below{Key: cutToPrefix(kind, lb.Key, n)}
	}
	switch ub := ce.UpperBound.(type) {
	case sql.Above:
		ce.UpperBound = sql.Above{Key: cutToPrefix(kind, ub.Key, n)}
	case sql.Below:
		ce.UpperBound = sql.Above{Key: cutToPrefix(kind, ub.Key, n)}
	}
	return ce
}

// mergeSpans joins overlapping spans, in place, of spans sorted by their
// lower bound (ranges over a prefix index overlap once cut: 'abcd' and
// 'abcz' over c(3) both read the keys of 'abc'), so no key is read twice.
// A merged span is inexact and keeps the ranges of its parts.
func mergeSpans(spans []keySpan, ranges [][]sql.MySQLRange) ([]keySpan, [][]sql.MySQLRange) {
	if len(spans) < 2 {
		return spans, ranges
	}
	out := 0
	for i := 1; i < len(spans); i++ {
		cur := &spans[out]
		if cur.hi == nil || bytes.Compare(spans[i].lo, cur.hi) < 0 {
			if cur.hi != nil && (spans[i].hi == nil || bytes.Compare(spans[i].hi, cur.hi) > 0) {
				cur.hi = spans[i].hi
			}
			cur.inexact = true
			ranges[out] = append(ranges[out], ranges[i]...)
			continue
		}
		out++
		spans[out], ranges[out] = spans[i], ranges[i]
	}
	return spans[:out+1], ranges[:out+1]
}
