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
	tx, err := txnOf(ctx)
	if err != nil {
		return err
	}
	if _, err := tx.writeTx(ctx); err != nil {
		return err
	}
	ti := t.eng.lookupTable(t.ti.db, t.ti.def.Name)
	if ti == nil {
		return sql.ErrTableNotFound.New(t.ti.def.Name)
	}
	nd := ti.def
	nd.Columns = append([]columnDef{}, ti.def.Columns...)
	for i := range nd.Columns {
		nd.Columns[i].Type = typeString(ti.schema.Schema[i].Type)
	}
	nd.Collation = collation.Name()
	nti, err := compile(ti.db, nd)
	if err != nil {
		return err
	}
	return t.saveDefChange(tx, ti, nti)
}

// ModifyStoredCollation would convert every column to the collation,
// re-encoding strings and keys: refused, as go-mysql-server's memory engine
// refuses it (v0.20.0 never calls it: CONVERT TO CHARACTER SET changes the
// default only).
func (t *Table) ModifyStoredCollation(ctx *sql.Context, collation sql.CollationID) error {
	return sql.ErrUnsupportedFeature.New("ALTER TABLE … CONVERT TO CHARACTER SET")
}
