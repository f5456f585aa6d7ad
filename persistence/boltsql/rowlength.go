package boltsql

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer/analyzererrors"
	"github.com/dolthub/go-mysql-server/sql/types"
)

var _ sql.SchemaValidator = (*database)(nil)

// ValidateSchema refuses, as MySQL (InnoDB) does, a table whose row could
// exceed 65,535 bytes, counting each column as go-mysql-server's memory
// engine counts it (TEXT/BLOB 16 bytes: stored apart). This engine has no
// such limit, but a journal schema must also run on MySQL and MariaDB, and
// CREATE/ALTER TABLE should fail here where it fails there.
func (d *database) ValidateSchema(schema sql.Schema) error {
	if n := maxRowSize(schema); n > types.MaxRowLength {
		return analyzererrors.ErrInvalidRowLength.New(types.MaxRowLength, n)
	}
	return nil
}

func maxRowSize(schema sql.Schema) int64 {
	var n int64
	for _, col := range schema {
		// In the memory engine's order: a type switch takes the first
		// interface a type satisfies, and a number is a sql.NullType too.
		switch t := col.Type.(type) {
		case sql.NumberType:
			n += 8
		case sql.StringType:
			if types.IsTextBlob(t) {
				n += 16
			} else {
				n += t.MaxByteLength()
			}
		case types.BitType, sql.DatetimeType:
			n += 8
		case sql.DecimalType:
			n += int64(t.MaximumScale())
		case sql.EnumType:
			n += 2
		case types.JsonType:
			n += 20
		case sql.NullType:
			n++
		case types.TimeType:
			n += 16
		case sql.YearType:
			n += 8
		default: // spatial values, SET: stored apart or small
			n += 16
		}
	}
	return n
}
