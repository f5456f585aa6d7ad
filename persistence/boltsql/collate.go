package boltsql

import (
	"github.com/dolthub/go-mysql-server/sql"
)

var _ sql.CollationAlterableTable = (*Table)(nil)

// ModifyDefaultCollation is ALTER TABLE … COLLATE: the table's default
// collation, which columns added later get; the existing columns keep
// theirs, as in MySQL, so no row or key changes. Each column's stored type
// is written again with its collation named, so one stored before types
// named it does not take the new default.
func (t *Table) ModifyDefaultCollation(ctx *sql.Context, collation sql.CollationID) error {
	return t.alterDef(ctx, func(ti *tableInfo, nd *tableDef) error {
		nd.Columns = append([]columnDef{}, ti.def.Columns...)
		for i := range nd.Columns {
			nd.Columns[i].Type = typeString(ti.schema.Schema[i].Type)
		}
		nd.Collation = collation.Name()
		return nil
	})
}

// ModifyStoredCollation would convert every column to the collation,
// re-encoding strings and keys: refused, as go-mysql-server's memory engine
// refuses it (v0.20.0 never calls it: CONVERT TO CHARACTER SET changes the
// default only).
func (t *Table) ModifyStoredCollation(ctx *sql.Context, collation sql.CollationID) error {
	return sql.ErrUnsupportedFeature.New("ALTER TABLE … CONVERT TO CHARACTER SET")
}
