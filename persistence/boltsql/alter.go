package boltsql

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	bolt "go.etcd.io/bbolt"
	goerrors "gopkg.in/src-d/go-errors.v1"
)

// ALTER TABLE … ADD/DROP/MODIFY/CHANGE/RENAME COLUMN and ALTER COLUMN …
// SET/DROP DEFAULT (sql.AlterableTable), and RENAME TABLE
// (sql.TableRenamer). A column change rewrites the table into new buckets
// (a new table id) in the statement's write transaction and drops the old
// ones at COMMIT: a crash before the commit leaves the old table whole, a
// rollback drops the new buckets, and no reader ever sees a half-rewritten
// table. The journal's schema migrations rely on it.

var (
	_ sql.AlterableTable = (*Table)(nil)
	_ sql.TableRenamer   = (*database)(nil)
)

// columnDefOf is the persisted form of a column.
func columnDefOf(c *sql.Column) (columnDef, error) {
	cd := columnDef{Name: c.Name, Type: typeString(c.Type), Nullable: c.Nullable, AutoInc: c.AutoIncrement, Comment: c.Comment, Extra: c.Extra}
	if c.Default != nil {
		s := c.Default.String()
		cd.Default = &s
	}
	if c.OnUpdate != nil {
		s := c.OnUpdate.String()
		cd.OnUpdate = &s
	}
	if c.Generated != nil {
		s := generatedString(c.Generated)
		cd.Generated, cd.Virtual = &s, c.Virtual
	}
	return cd, nil
}

func columnIndex(cols []columnDef, name string) int {
	for i, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// insertAt is the position order asks for among cols, len(cols) for none.
func insertAt(cols []columnDef, order *sql.ColumnOrder, table string) (int, error) {
	switch {
	case order == nil:
		return len(cols), nil
	case order.First:
		return 0, nil
	}
	i := columnIndex(cols, order.AfterColumn)
	if i < 0 {
		return 0, sql.ErrTableColumnNotFound.New(table, order.AfterColumn)
	}
	return i + 1, nil
}

// AddColumn adds column at order's position; existing rows get NULL there
// (go-mysql-server then writes the column's default into them).
func (t *Table) AddColumn(ctx *sql.Context, column *sql.Column, order *sql.ColumnOrder) error {
	return t.alter(ctx, func(ti *tableInfo, nd *tableDef) (func(*sql.Context, sql.Row) (sql.Row, error), error) {
		if columnIndex(nd.Columns, column.Name) >= 0 {
			return nil, sql.ErrColumnExists.New(column.Name)
		}
		if column.PrimaryKey {
			return nil, sql.ErrUnsupportedFeature.New("adding a column to the primary key (column " + column.Name + ")")
		}
		cd, err := columnDefOf(column)
		if err != nil {
			return nil, err
		}
		pos, err := insertAt(nd.Columns, order, nd.Name)
		if err != nil {
			return nil, err
		}
		nd.Columns = append(nd.Columns[:pos:pos], append([]columnDef{cd}, nd.Columns[pos:]...)...)
		for i, o := range nd.PK {
			if o >= pos {
				nd.PK[i] = o + 1
			}
		}
		if column.Generated != nil {
			return addGenerated(ti.schema.Schema, column, pos)
		}
		if column.Default != nil {
			// go-mysql-server fills the default into the rows after this
			// returns, evaluating column.Default on the new rows: its
			// fields must be the new row's (as the memory engine does, in
			// place on the column it is given).
			d, err := fieldsOfAddedColumn(column.Default, ti.schema.Schema, column, pos)
			if err != nil {
				return nil, err
			}
			column.Default = d
		}
		return func(_ *sql.Context, row sql.Row) (sql.Row, error) {
			out := make(sql.Row, 0, len(row)+1)
			out = append(out, row[:pos]...)
			out = append(out, nil)
			return append(out, row[pos:]...), nil
		}, nil
	})
}

// DropColumn drops a column, and it from every index (an index left
// without columns goes). A primary-key column cannot be dropped.
func (t *Table) DropColumn(ctx *sql.Context, name string) error {
	return t.alter(ctx, func(ti *tableInfo, nd *tableDef) (func(*sql.Context, sql.Row) (sql.Row, error), error) {
		pos := columnIndex(nd.Columns, name)
		if pos < 0 {
			return nil, sql.ErrTableColumnNotFound.New(nd.Name, name)
		}
		for _, o := range nd.PK {
			if o == pos {
				return nil, sql.ErrUnsupportedFeature.New("dropping a primary-key column (" + name + ")")
			}
		}
		nd.Columns = append(nd.Columns[:pos:pos], nd.Columns[pos+1:]...)
		for i, o := range nd.PK {
			if o > pos {
				nd.PK[i] = o - 1
			}
		}
		var idx []indexDef
		for _, ix := range nd.Indexes {
			var cols []string
			var lens []uint16 // kept aligned with cols
			for i, c := range ix.Columns {
				if !strings.EqualFold(c, name) {
					cols = append(cols, c)
					if len(ix.Prefix) > 0 {
						lens = append(lens, ix.Prefix[i])
					}
				}
			}
			if len(cols) > 0 {
				ix.Columns, ix.Prefix = cols, lens
				idx = append(idx, ix)
			}
		}
		nd.Indexes = idx
		return func(_ *sql.Context, row sql.Row) (sql.Row, error) {
			out := make(sql.Row, 0, len(row)-1)
			out = append(out, row[:pos]...)
			return append(out, row[pos+1:]...), nil
		}, nil
	})
}

// ModifyColumn replaces a column's definition (type, name, nullability,
// default, position); stored values are converted to the new type, and a
// value that does not fit fails the statement.
func (t *Table) ModifyColumn(ctx *sql.Context, name string, column *sql.Column, order *sql.ColumnOrder) (err error) {
	defer func() {
		if err != nil {
			// go-mysql-server edits the column it read from Schema() in
			// place before it calls us (ALTER COLUMN … DROP DEFAULT): the
			// unchanged definition rebuilds the columns it spoiled.
			t.eng.restoreSchema(t.ti)
		}
	}()
	return t.alter(ctx, func(ti *tableInfo, nd *tableDef) (func(*sql.Context, sql.Row) (sql.Row, error), error) {
		from := columnIndex(nd.Columns, name)
		if from < 0 {
			return nil, sql.ErrTableColumnNotFound.New(nd.Name, name)
		}
		if !strings.EqualFold(name, column.Name) && columnIndex(nd.Columns, column.Name) >= 0 {
			return nil, sql.ErrColumnExists.New(column.Name)
		}
		cd, err := columnDefOf(column)
		if err != nil {
			return nil, err
		}
		isPK := false
		for _, o := range nd.PK {
			isPK = isPK || o == from
		}
		if isPK && cd.Nullable {
			cd.Nullable = false // MySQL: primary-key columns are NOT NULL
		}
		// The permutation: old ordinal -> new ordinal.
		rest := append(append([]columnDef{}, nd.Columns[:from]...), nd.Columns[from+1:]...)
		to := from
		if order != nil {
			if to, err = insertAt(rest, order, nd.Name); err != nil {
				return nil, err
			}
		}
		perm := make([]int, len(nd.Columns))
		for old := range nd.Columns {
			switch {
			case old == from:
				perm[old] = to
			default:
				r := old
				if old > from {
					r--
				}
				if r >= to {
					r++
				}
				perm[old] = r
			}
		}
		nd.Columns = append(rest[:to:to], append([]columnDef{cd}, rest[to:]...)...)
		for i, o := range nd.PK {
			nd.PK[i] = perm[o]
		}
		for i := range nd.Indexes {
			cols := append([]string{}, nd.Indexes[i].Columns...)
			for j, c := range cols {
				if strings.EqualFold(c, name) {
					cols[j] = column.Name
				}
			}
			nd.Indexes[i].Columns = cols
		}
		typ, nullable, colName := column.Type, cd.Nullable, column.Name
		oldEnum, _ := ti.schema.Schema[from].Type.(sql.EnumType)
		newEnum, _ := typ.(sql.EnumType)
		return func(ctx *sql.Context, row sql.Row) (sql.Row, error) {
			out := make(sql.Row, len(row))
			for old, v := range row {
				out[perm[old]] = v
			}
			v := row[from]
			if idx, ok := v.(uint16); ok && oldEnum != nil && newEnum != nil {
				// An ENUM value is stored as its index: it keeps its
				// string, not its number (0, the error value, stays).
				if idx != 0 {
					s, _ := oldEnum.At(int(idx))
					n := newEnum.IndexOf(s)
					if n < 0 {
						return nil, types.ErrDataTruncatedForColumn.New(colName)
					}
					out[to] = uint16(n)
				}
				return out, nil
			}
			if v == nil {
				if !nullable {
					return nil, sql.ErrInsertIntoNonNullableProvidedNull.New(colName)
				}
				return out, nil
			}
			nv, inRange, err := typ.Convert(ctx, v)
			var kindErr *goerrors.Error
			switch {
			case sql.ErrNotMatchingSRID.Is(err):
				return nil, sql.ErrNotMatchingSRIDWithColName.New(colName, err)
			case errors.As(err, &kindErr):
				return nil, err // go-mysql-server's kinds are matched unwrapped
			case err != nil:
				return nil, fmt.Errorf("column %s: %w", colName, err)
			}
			if inRange == sql.OutOfRange {
				return nil, sql.ErrValueOutOfRange.New(v, typ)
			}
			out[to] = nv
			return out, nil
		}, nil
	})
}

// restoreSchema replaces ti in the catalog by a fresh compile of its own
// definition (the same table, columns not shared with anyone).
func (e *Engine) restoreSchema(ti *tableInfo) {
	fresh, err := compile(ti.db, ti.def)
	if err != nil {
		return
	}
	e.catMu.Lock()
	defer e.catMu.Unlock()
	if d := e.dbs[strings.ToLower(ti.db)]; d != nil && d.tables[strings.ToLower(ti.def.Name)] == ti {
		d.tables[strings.ToLower(ti.def.Name)] = fresh
	}
}

// alter rewrites the table into new buckets with the definition change
// makes, each row passed through the transform it returns.
func (t *Table) alter(ctx *sql.Context, change func(ti *tableInfo, nd *tableDef) (func(*sql.Context, sql.Row) (sql.Row, error), error)) error {
	tx, err := txnOf(ctx)
	if err != nil {
		return err
	}
	wtx, err := tx.writeTx(ctx)
	if err != nil {
		return err
	}
	ti := t.eng.lookupTable(t.ti.db, t.ti.def.Name)
	if ti == nil {
		return sql.ErrTableNotFound.New(t.ti.def.Name)
	}
	nd := ti.def
	nd.Columns = append([]columnDef{}, ti.def.Columns...)
	nd.PK = append([]int{}, ti.def.PK...)
	nd.Indexes = append([]indexDef{}, ti.def.Indexes...)
	transform, err := change(ti, &nd)
	if err != nil {
		return err
	}
	id, err := wtx.Bucket(bucketMeta).NextSequence()
	if err != nil {
		return err
	}
	nd.ID = id
	nti, err := compile(ti.db, nd)
	if err != nil {
		return err
	}
	if err := tx.copyRows(ctx, wtx, ti, nti, transform); err != nil {
		return err
	}
	// The AUTO_INCREMENT counter moves to the new id.
	if v := wtx.Bucket(bucketAutoInc).Get(u64key(ti.def.ID)); v != nil {
		if err := tx.put(wtx.Bucket(bucketAutoInc), bucketAutoInc, u64key(nti.def.ID), append([]byte(nil), v...)); err != nil {
			return err
		}
		if err := tx.del(wtx.Bucket(bucketAutoInc), bucketAutoInc, u64key(ti.def.ID)); err != nil {
			return err
		}
	}
	if err := tx.startAutoIncrement(wtx, ti, nti); err != nil {
		return err
	}
	if err := tx.saveDef(nti); err != nil {
		return err
	}
	old := [][]byte{ti.dataBucket}
	for _, ix := range ti.indexes {
		old = append(old, ix.bucket)
	}
	tx.dropAtCommit(old...)
	t.eng.swapTable(tx, ti.db, ti.def.Name, nti)
	t.ti = nti
	return nil
}

// startAutoIncrement starts the counter of a column the change made
// AUTO_INCREMENT (MODIFY … AUTO_INCREMENT) past the largest value it holds,
// as MySQL does: it would have started at 1 and collided with the rows.
func (t *txn) startAutoIncrement(wtx *bolt.Tx, ti, nti *tableInfo) error {
	if nti.autoIncCol < 0 || ti.autoIncCol >= 0 && strings.EqualFold(ti.def.Columns[ti.autoIncCol].Name, nti.def.Columns[nti.autoIncCol].Name) {
		return nil
	}
	next := uint64(1)
	c := wtx.Bucket(nti.dataBucket).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		row, err := decodeRow(v)
		if err != nil {
			return fmt.Errorf("table %s: %w", nti.def.Name, err)
		}
		if n, ok := autoIncOf(row[nti.autoIncCol]); ok && row[nti.autoIncCol] != nil && n >= next {
			next = n + 1
		}
	}
	return t.setAutoInc(wtx, nti, next)
}

// copyRows writes every row of ti, transformed, into nti's new buckets.
// They are created in this transaction, so undo drops them whole: the
// rows themselves need no undo records.
func (t *txn) copyRows(ctx *sql.Context, wtx *bolt.Tx, ti, nti *tableInfo, transform func(*sql.Context, sql.Row) (sql.Row, error)) error {
	data, err := t.createBucket(nti.dataBucket)
	if err != nil {
		return err
	}
	idx := make([]*bolt.Bucket, len(nti.indexes))
	for i, ix := range nti.indexes {
		if idx[i], err = t.createBucket(ix.bucket); err != nil {
			return err
		}
	}
	t.dirty = true
	src := wtx.Bucket(ti.dataBucket)
	if src == nil {
		return fmt.Errorf("table %s: storage missing", ti.def.Name)
	}
	if err := data.SetSequence(src.Sequence()); err != nil { // hidden row ids go on
		return err
	}
	c := src.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		row, err := decodeRow(v)
		if err != nil {
			return fmt.Errorf("table %s: %w", ti.def.Name, err)
		}
		if row, err = transform(ctx, row); err != nil {
			return err
		}
		var pk []byte
		if nti.hiddenPK() && ti.hiddenPK() {
			pk = append([]byte(nil), k...) // the hidden row id stays
		} else if nti.hiddenPK() { // DROP PRIMARY KEY: rows get hidden row ids
			id, err := data.NextSequence()
			if err != nil {
				return err
			}
			pk = u64key(id)
		} else if pk, _, err = keyOf(nil, row, nti.primary.cols, nti.primary.kinds, nil); err != nil {
			return fmt.Errorf("table %s primary key: %w", nti.def.Name, err)
		}
		if data.Get(pk) != nil {
			return sql.NewUniqueKeyErr(keyString(row, nti.primary.cols), true, row)
		}
		val, err := encodeRow(nil, row)
		if err != nil {
			return fmt.Errorf("table %s: %w", nti.def.Name, err)
		}
		if err := data.Put(pk, val); err != nil {
			return err
		}
		for i, ix := range nti.indexes {
			if dup, err := indexRow(idx[i], ix, row, pk); err != nil {
				return fmt.Errorf("table %s index %s: %w", nti.def.Name, ix.def.Name, err)
			} else if dup {
				return sql.NewUniqueKeyErr(keyString(row, ix.cols), false, row)
			}
		}
	}
	return nil
}

// dropAtCommit deletes buckets when the transaction commits; undoing the
// statement that asked forgets the request.
func (t *txn) dropAtCommit(names ...[]byte) {
	n := len(t.drops)
	t.drops = append(t.drops, names...)
	t.onUndo(func() { t.drops = t.drops[:n] })
}

// RenameTable implements RENAME TABLE and ALTER TABLE … RENAME: the
// definition moves to the new name; rows and indexes stay where they are.
func (d *database) RenameTable(ctx *sql.Context, oldName, newName string) error {
	tx, err := txnOf(ctx)
	if err != nil {
		return err
	}
	wtx, err := tx.writeTx(ctx)
	if err != nil {
		return err
	}
	ti := d.eng.lookupTable(d.name, oldName)
	if ti == nil {
		return sql.ErrTableNotFound.New(oldName)
	}
	if !strings.EqualFold(oldName, newName) && d.eng.lookupTable(d.name, newName) != nil {
		return sql.ErrTableAlreadyExists.New(newName)
	}
	nd := ti.def
	nd.Name = newName
	nti, err := compile(ti.db, nd)
	if err != nil {
		return err
	}
	if err := tx.del(wtx.Bucket(bucketSchema), bucketSchema, schemaKey(d.name, oldName)); err != nil {
		return err
	}
	if err := tx.saveDef(nti); err != nil {
		return err
	}
	d.eng.swapTable(tx, d.name, oldName, nil)
	d.eng.swapTable(tx, d.name, newName, nti)
	return nil
}
