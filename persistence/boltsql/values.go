package boltsql

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// Row layout: uvarint column count, then per value a tag byte naming the Go
// type the engine handed us and its payload. Decoding yields the same Go
// type, so a stored row reads back exactly as it was written.
const (
	tagNull byte = iota
	tagInt8
	tagInt16
	tagInt32
	tagInt64
	tagUint8
	tagUint16
	tagUint32
	tagUint64
	tagFloat32
	tagFloat64
	tagString
	tagBytes
	tagTime
	tagDecimal
	tagJSON // JSON as text (files written before tagJSONTree): numbers read back as float64
	tagInt
	tagJSONTree // JSON as a tree of tagged values: a DECIMAL inside stays a DECIMAL
	tagTrue     // inside a JSON tree
	tagFalse
	tagArray    // uvarint count, values
	tagObject   // uvarint count, (uvarint key length, key, value) sorted by key
	tagTimespan // TIME: varint microseconds
	tagSpatial  // a geometry: uvarint length, go-mysql-server's EWKB (SRID + WKB)
)

var errCorruptRow = errors.New("corrupt row encoding")

func encodeRow(dst []byte, row sql.Row) ([]byte, error) {
	if dst == nil {
		dst = make([]byte, 0, encodedSizeHint(row))
	}
	dst = binary.AppendUvarint(dst, uint64(len(row)))
	for i, v := range row {
		var err error
		dst, err = appendValue(dst, v)
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i, err)
		}
	}
	return dst, nil
}

// encodedSizeHint is an upper bound of encodeRow's output for rows of
// fixed-size values, strings and bytes (others may grow the buffer): one
// allocation per row instead of one per doubling.
func encodedSizeHint(row sql.Row) int {
	n := binary.MaxVarintLen64
	for _, v := range row {
		n += 1 + binary.MaxVarintLen64
		switch x := v.(type) {
		case string:
			n += len(x)
		case []byte:
			n += len(x)
		case time.Time:
			n += binary.MaxVarintLen64
		}
	}
	return n
}

func appendValue(dst []byte, v interface{}) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, tagNull), nil
	case int8:
		return append(dst, tagInt8, byte(x)), nil
	case int16:
		return binary.AppendVarint(append(dst, tagInt16), int64(x)), nil
	case int32:
		return binary.AppendVarint(append(dst, tagInt32), int64(x)), nil
	case int64:
		return binary.AppendVarint(append(dst, tagInt64), x), nil
	case int:
		return binary.AppendVarint(append(dst, tagInt), int64(x)), nil
	case uint8:
		return append(dst, tagUint8, x), nil
	case uint16:
		return binary.AppendUvarint(append(dst, tagUint16), uint64(x)), nil
	case uint32:
		return binary.AppendUvarint(append(dst, tagUint32), uint64(x)), nil
	case uint64:
		return binary.AppendUvarint(append(dst, tagUint64), x), nil
	case float32:
		return binary.BigEndian.AppendUint32(append(dst, tagFloat32), math.Float32bits(x)), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(dst, tagFloat64), math.Float64bits(x)), nil
	case string:
		dst = binary.AppendUvarint(append(dst, tagString), uint64(len(x)))
		return append(dst, x...), nil
	case []byte:
		dst = binary.AppendUvarint(append(dst, tagBytes), uint64(len(x)))
		return append(dst, x...), nil
	case time.Time:
		dst = binary.AppendVarint(append(dst, tagTime), x.Unix())
		return binary.AppendUvarint(dst, uint64(x.Nanosecond())), nil
	case types.Timespan:
		return binary.AppendVarint(append(dst, tagTimespan), int64(x)), nil
	case types.GeometryValue:
		b := x.Serialize()
		dst = binary.AppendUvarint(append(dst, tagSpatial), uint64(len(b)))
		return append(dst, b...), nil
	case decimal.Decimal:
		// With its scale: String() drops trailing zeros, and a
		// DECIMAL(18,16) value 2.5633000000000370 read back as
		// 2.563300000000037.
		s := x.String()
		if e := x.Exponent(); e < 0 {
			s = x.StringFixed(-e)
		}
		dst = binary.AppendUvarint(append(dst, tagDecimal), uint64(len(s)))
		return append(dst, s...), nil
	case sql.JSONWrapper:
		val, err := x.ToInterface()
		if err != nil {
			return nil, err
		}
		return appendJSONValue(append(dst, tagJSONTree), val, 0)
	}
	return nil, fmt.Errorf("values of Go type %T cannot be stored", v)
}

// maxJSONDepth bounds the nesting of a stored JSON document (MySQL's limit
// is 100), so a hostile document cannot exhaust the stack.
const maxJSONDepth = 1000

// appendJSONValue encodes one value of a JSON document's tree with the tags
// of row values, so each number keeps its Go type (go-mysql-server gives
// JSON built from SQL values DECIMALs and integers; as JSON text they came
// back as strings and floats).
func appendJSONValue(dst []byte, v interface{}, depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("JSON document nested deeper than %d", maxJSONDepth)
	}
	switch x := v.(type) {
	case bool:
		if x {
			return append(dst, tagTrue), nil
		}
		return append(dst, tagFalse), nil
	case []interface{}:
		dst = binary.AppendUvarint(append(dst, tagArray), uint64(len(x)))
		for _, e := range x {
			var err error
			if dst, err = appendJSONValue(dst, e, depth+1); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case map[string]interface{}:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = binary.AppendUvarint(append(dst, tagObject), uint64(len(x)))
		for _, k := range keys {
			dst = binary.AppendUvarint(dst, uint64(len(k)))
			dst = append(dst, k...)
			var err error
			if dst, err = appendJSONValue(dst, x[k], depth+1); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case json.Number:
		return appendValue(dst, string(x))
	case sql.JSONWrapper:
		val, err := x.ToInterface()
		if err != nil {
			return nil, err
		}
		return appendJSONValue(dst, val, depth+1)
	}
	return appendValue(dst, v)
}

// decodeJSONValue decodes one value appendJSONValue wrote.
func decodeJSONValue(b []byte, depth int) (interface{}, []byte, error) {
	if len(b) == 0 || depth > maxJSONDepth {
		return nil, nil, errCorruptRow
	}
	tag := b[0]
	b = b[1:]
	switch tag {
	case tagTrue:
		return true, b, nil
	case tagFalse:
		return false, b, nil
	case tagArray, tagObject:
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return nil, nil, errCorruptRow
		}
		b = b[k:]
		if tag == tagArray {
			arr := make([]interface{}, n)
			for i := range arr {
				var err error
				if arr[i], b, err = decodeJSONValue(b, depth+1); err != nil {
					return nil, nil, err
				}
			}
			return arr, b, nil
		}
		obj := make(map[string]interface{}, n)
		for i := uint64(0); i < n; i++ {
			kl, k := binary.Uvarint(b)
			if k <= 0 || kl > uint64(len(b)-k) {
				return nil, nil, errCorruptRow
			}
			key := string(b[k : k+int(kl)])
			b = b[k+int(kl):]
			var err error
			if obj[key], b, err = decodeJSONValue(b, depth+1); err != nil {
				return nil, nil, err
			}
		}
		return obj, b, nil
	case tagJSONTree, tagJSON:
		return nil, nil, errCorruptRow // documents do not nest as documents
	}
	return decodeValue(tag, b)
}

// skipJSONValue steps over one value appendJSONValue wrote.
func skipJSONValue(b []byte, depth int) ([]byte, error) {
	_, rest, err := decodeJSONValue(b, depth)
	return rest, err
}

func decodeRow(b []byte) (sql.Row, error) {
	return decodeRowInto(nil, b, nil)
}

// decodeRowInto decodes b into dst's storage when it is large enough (for
// callers that copy the values out before the next row), decoding only the
// columns need marks (all when need is nil); the others read as nil.
func decodeRowInto(dst sql.Row, b []byte, need []bool) (sql.Row, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errCorruptRow
	}
	b = b[k:]
	var row sql.Row
	if uint64(cap(dst)) >= n {
		row = dst[:n]
	} else {
		row = make(sql.Row, n)
	}
	for i := range row {
		if len(b) == 0 {
			return nil, errCorruptRow
		}
		tag := b[0]
		b = b[1:]
		var err error
		if need != nil && (i >= len(need) || !need[i]) {
			row[i] = nil
			b, err = skipValue(tag, b)
		} else {
			row[i], b, err = decodeValue(tag, b)
		}
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i, err)
		}
	}
	return row, nil
}

// skipValue steps over one encoded value without decoding it.
func skipValue(tag byte, b []byte) ([]byte, error) {
	fixed := func(n int) ([]byte, error) {
		if len(b) < n {
			return nil, errCorruptRow
		}
		return b[n:], nil
	}
	varint := func() error {
		_, k := binary.Uvarint(b) // a varint's length is its uvarint's
		if k <= 0 {
			return errCorruptRow
		}
		b = b[k:]
		return nil
	}
	switch tag {
	case tagNull:
		return b, nil
	case tagInt8, tagUint8:
		return fixed(1)
	case tagFloat32:
		return fixed(4)
	case tagFloat64:
		return fixed(8)
	case tagInt16, tagInt32, tagInt64, tagInt, tagUint16, tagUint32, tagUint64, tagTimespan:
		err := varint()
		return b, err
	case tagTime:
		if err := varint(); err != nil {
			return nil, err
		}
		err := varint()
		return b, err
	case tagJSONTree:
		return skipJSONValue(b, 0)
	case tagString, tagBytes, tagDecimal, tagJSON, tagSpatial:
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, errCorruptRow
		}
		return b[k+int(n):], nil
	}
	return nil, fmt.Errorf("%w: unknown tag %d", errCorruptRow, tag)
}

func decodeValue(tag byte, b []byte) (interface{}, []byte, error) {
	varint := func() (int64, error) {
		v, k := binary.Varint(b)
		if k <= 0 {
			return 0, errCorruptRow
		}
		b = b[k:]
		return v, nil
	}
	uvarint := func() (uint64, error) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, errCorruptRow
		}
		b = b[k:]
		return v, nil
	}
	bytesOf := func() ([]byte, error) {
		n, err := uvarint()
		if err != nil || n > uint64(len(b)) {
			return nil, errCorruptRow
		}
		out := b[:n]
		b = b[n:]
		return out, nil
	}
	switch tag {
	case tagNull:
		return nil, b, nil
	case tagInt8:
		if len(b) < 1 {
			return nil, nil, errCorruptRow
		}
		return int8(b[0]), b[1:], nil
	case tagUint8:
		if len(b) < 1 {
			return nil, nil, errCorruptRow
		}
		return b[0], b[1:], nil
	case tagInt16, tagInt32, tagInt64, tagInt:
		v, err := varint()
		if err != nil {
			return nil, nil, err
		}
		switch tag {
		case tagInt16:
			return int16(v), b, nil
		case tagInt32:
			return int32(v), b, nil
		case tagInt:
			return int(v), b, nil
		}
		return v, b, nil
	case tagUint16, tagUint32, tagUint64:
		v, err := uvarint()
		if err != nil {
			return nil, nil, err
		}
		switch tag {
		case tagUint16:
			return uint16(v), b, nil
		case tagUint32:
			return uint32(v), b, nil
		}
		return v, b, nil
	case tagFloat32:
		if len(b) < 4 {
			return nil, nil, errCorruptRow
		}
		return math.Float32frombits(binary.BigEndian.Uint32(b)), b[4:], nil
	case tagFloat64:
		if len(b) < 8 {
			return nil, nil, errCorruptRow
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), b[8:], nil
	case tagString:
		s, err := bytesOf()
		if err != nil {
			return nil, nil, err
		}
		return string(s), b, nil
	case tagBytes:
		s, err := bytesOf()
		if err != nil {
			return nil, nil, err
		}
		return append([]byte{}, s...), b, nil // bbolt memory is valid only inside its transaction
	case tagTime:
		sec, err := varint()
		if err != nil {
			return nil, nil, err
		}
		nsec, err := uvarint()
		if err != nil {
			return nil, nil, err
		}
		return time.Unix(sec, int64(nsec)).UTC(), b, nil
	case tagDecimal:
		s, err := bytesOf()
		if err != nil {
			return nil, nil, err
		}
		d, err := decimal.NewFromString(string(s))
		if err != nil {
			return nil, nil, err
		}
		return d, b, nil
	case tagJSON:
		s, err := bytesOf()
		if err != nil {
			return nil, nil, err
		}
		var val interface{}
		if err := json.Unmarshal(s, &val); err != nil {
			return nil, nil, err
		}
		return types.JSONDocument{Val: val}, b, nil
	case tagTimespan:
		v, err := varint()
		if err != nil {
			return nil, nil, err
		}
		return types.Timespan(v), b, nil
	case tagSpatial:
		s, err := bytesOf()
		if err != nil {
			return nil, nil, err
		}
		g, _, err := types.GeometryType{}.Convert(context.Background(), append([]byte(nil), s...))
		if err != nil {
			return nil, nil, fmt.Errorf("%w: geometry: %v", errCorruptRow, err)
		}
		return g, b, nil
	case tagJSONTree:
		val, rest, err := decodeJSONValue(b, 0)
		if err != nil {
			return nil, nil, err
		}
		return types.JSONDocument{Val: val}, rest, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown tag %d", errCorruptRow, tag)
}
