package boltsql

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// ALTER TABLE … ADD PRIMARY KEY / DROP PRIMARY KEY
// (sql.PrimaryKeyAlterableTable). Either is a rewrite like a column change
// (alter.go): the rows move to new buckets keyed by the new primary key, or
// by fresh hidden row ids when the key goes, in the statement's write
// transaction, so a duplicate or NULL key fails the statement and leaves
// the table as it was, and a crash before COMMIT leaves the old table.

var _ sql.PrimaryKeyAlterableTable = (*Table)(nil)

// CreatePrimaryKey makes columns the primary key of a table that has none:
// they become NOT NULL, and a NULL or repeated key in the stored rows fails
// the statement.
func (t *Table) CreatePrimaryKey(ctx *sql.Context, columns []sql.IndexColumn) error {
	return t.alter(ctx, func(ti *tableInfo, nd *tableDef) (func(*sql.Context, sql.Row) (sql.Row, error), error) {
		if len(nd.PK) > 0 {
			return nil, sql.ErrMultiplePrimaryKeysDefined.New()
		}
		pk := make([]int, len(columns))
		for i, c := range columns {
			ord := columnIndex(nd.Columns, c.Name)
			if ord < 0 {
				return nil, sql.ErrKeyColumnDoesNotExist.New(c.Name)
			}
			col := ti.schema.Schema[ord]
			if c.Length > 0 && types.IsText(col.Type) {
				return nil, sql.ErrUnsupportedIndexPrefix.New(col.Name)
			}
			if col.Virtual {
				return nil, sql.ErrVirtualColumnPrimaryKey.New()
			}
			pk[i] = ord
			nd.Columns[ord].Nullable = false
		}
		nd.PK = pk
		return func(_ *sql.Context, row sql.Row) (sql.Row, error) {
			for _, ord := range pk {
				if row[ord] == nil {
					return nil, sql.ErrInsertIntoNonNullableProvidedNull.New(nd.Columns[ord].Name)
				}
			}
			return row, nil
		}, nil
	})
}

// DropPrimaryKey removes the primary key: rows are kept under hidden row
// ids, the key's columns stay NOT NULL. As in MySQL, an AUTO_INCREMENT key
// column must keep an index that starts with it, and a foreign key that
// needs the key's index keeps it.
func (t *Table) DropPrimaryKey(ctx *sql.Context) error {
	ti := t.eng.lookupTable(t.ti.db, t.ti.def.Name)
	if ti == nil {
		return sql.ErrTableNotFound.New(t.ti.def.Name)
	}
	if ti.hiddenPK() {
		return sql.ErrCantDropFieldOrKey.New("PRIMARY")
	}
	cur := &Table{eng: t.eng, ti: ti}
	if err := sql.ValidatePrimaryKeyDrop(ctx, cur, ti.schema); err != nil {
		return err
	}
	if err := cur.checkForeignKeysKeepAnIndex(ctx); err != nil {
		return err
	}
	return t.alter(ctx, func(ti *tableInfo, nd *tableDef) (func(*sql.Context, sql.Row) (sql.Row, error), error) {
		nd.PK = nil
		return func(_ *sql.Context, row sql.Row) (sql.Row, error) { return row, nil }, nil
	})
}

// checkForeignKeysKeepAnIndex refuses to drop the primary key when a
// foreign key this table declares names one of its columns (go-mysql-server's
// memory engine's rule), or one referencing this table finds no other index
// on its parent columns.
func (t *Table) checkForeignKeysKeepAnIndex(ctx *sql.Context) error {
	declared, err := t.GetDeclaredForeignKeys(ctx)
	if err != nil {
		return err
	}
	for _, fk := range declared {
		for _, c := range append(append([]string{}, fk.Columns...), fk.ParentColumns...) {
			for _, ord := range t.ti.def.PK {
				if strings.EqualFold(c, t.ti.def.Columns[ord].Name) {
					return sql.ErrCantDropIndex.New("PRIMARY", fk.Name)
				}
			}
		}
	}
	referenced, err := t.GetReferencedForeignKeys(ctx)
	if err != nil {
		return err
	}
	for _, fk := range referenced {
		if _, ok, err := plan.FindFKIndexWithPrefix(ctx, t, fk.ParentColumns, false, "PRIMARY"); err != nil {
			return err
		} else if !ok {
			return sql.ErrCantDropIndex.New("PRIMARY", fk.Name)
		}
	}
	return nil
}
