package boltsql

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	bolt "go.etcd.io/bbolt"
)

var errNoTxn = errors.New("boltsql: statement has no transaction")

// editor applies a statement's row changes to the write transaction. The
// undo log mark taken at StatementBegin lets DiscardChanges roll back just
// this statement, inside a larger transaction.
type editor struct {
	t      *Table
	tx     *txn
	err    error // taking the writer failed; reported by the first edit
	mark   int
	nested bool // its statement runs inside another (nestedTxn): the snapshot is that one's
}

var (
	_ sql.TableEditor         = (*editor)(nil)
	_ sql.AutoIncrementSetter = (*editor)(nil)
)

func (t *Table) editor(ctx *sql.Context) *editor {
	e := &editor{}
	t.initEditor(ctx, e)
	return e
}

// tableEditor is a fast path's Table and its editor in one allocation.
type tableEditor struct {
	tbl Table
	ed  editor
}

// fastEditor is ti's editor for a fast-path statement.
func (eng *Engine) fastEditor(ctx *sql.Context, ti *tableInfo) *editor {
	te := &tableEditor{tbl: Table{eng: eng, ti: ti}}
	te.tbl.initEditor(ctx, &te.ed)
	return &te.ed
}

func (t *Table) initEditor(ctx *sql.Context, e *editor) {
	e.t = t
	e.tx, e.nested, e.err = statementTxn(ctx)
	if e.err == nil {
		// Take the writer now, before the statement's read cursors open,
		// so the rows it reads are the rows it changes.
		_, e.err = e.tx.writeTx(ctx)
	}
	if e.err == nil && t.eng.lookupTable(t.ti.db, t.ti.def.Name) != t.ti {
		// The statement resolved the table before it had the writer, and a
		// DDL statement changed it in between (or its uncommitted change was
		// rolled back): writing with the old definition would skip a new
		// index, or write to one that no longer exists. MySQL's answer.
		e.err = mysql.NewSQLError(1412, "HY000", "Table definition has changed, please retry transaction (table %s)", t.ti.def.Name)
	}
}

func (t *Table) Inserter(ctx *sql.Context) sql.RowInserter { return t.editor(ctx) }
func (t *Table) Updater(ctx *sql.Context) sql.RowUpdater   { return t.editor(ctx) }
func (t *Table) Deleter(ctx *sql.Context) sql.RowDeleter   { return t.editor(ctx) }
func (t *Table) Replacer(ctx *sql.Context) sql.RowReplacer { return t.editor(ctx) }
func (t *Table) AutoIncrementSetter(ctx *sql.Context) sql.AutoIncrementSetter {
	return t.editor(ctx)
}

// StatementBegin starts a statement go-mysql-server runs: its reads see
// the rows as they were when it began (see txn.snapshot).
func (e *editor) StatementBegin(ctx *sql.Context) {
	if e.err == nil {
		e.mark = e.tx.mark()
		if !e.nested {
			e.tx.beginSnapshot()
		}
	}
}

// markStatement is StatementBegin for the fast paths, which read each row
// they change once, themselves, before changing it: no snapshot to keep.
func (e *editor) markStatement() {
	if e.err == nil {
		e.mark = e.tx.mark()
	}
}

func (e *editor) DiscardChanges(ctx *sql.Context, errorEncountered error) error {
	if e.err != nil {
		return nil
	}
	if !e.nested {
		e.tx.endSnapshot()
	}
	return e.tx.discardSince(e.mark)
}

func (e *editor) StatementComplete(ctx *sql.Context) error {
	if e.err == nil && !e.nested {
		e.tx.endSnapshot()
	}
	return nil
}
func (e *editor) Close(ctx *sql.Context) error { return nil }

func (e *editor) buckets() (*bolt.Tx, *bolt.Bucket, error) {
	if e.err != nil {
		return nil, nil, e.err
	}
	wtx := e.tx.wtx
	if wtx == nil {
		return nil, nil, errTxnDone
	}
	data := wtx.Bucket(e.t.ti.dataBucket)
	if data == nil {
		return nil, nil, fmt.Errorf("table %s: storage missing", e.t.ti.def.Name)
	}
	return wtx, data, nil
}

func (e *editor) Insert(ctx *sql.Context, row sql.Row) error {
	wtx, data, err := e.buckets()
	if err != nil {
		return err
	}
	ti := e.t.ti
	if len(row) != len(ti.schema.Schema) {
		return fmt.Errorf("table %s: row has %d values, table has %d columns", ti.def.Name, len(row), len(ti.schema.Schema))
	}
	var pk []byte
	if ti.hiddenPK() {
		// A table without a primary key: rows are keyed by a hidden row id,
		// the bucket's sequence (a rolled-back insert leaves a gap).
		id, err := data.NextSequence()
		if err != nil {
			return err
		}
		pk = u64key(id)
	} else {
		pk, _, err = keyOf(nil, row, ti.primary.cols, ti.primary.kinds, nil)
		if err != nil {
			return fmt.Errorf("table %s primary key: %w", ti.def.Name, err)
		}
		if ex := data.Get(pk); ex != nil {
			existing, _ := decodeRow(ex)
			return sql.NewUniqueKeyErr(keyString(row, ti.primary.cols), true, existing)
		}
	}
	ikeys := make([][]byte, len(ti.indexes))
	for i, ix := range ti.indexes {
		k, hasNull, err := keyOf(keyBuf(row, ix.cols, len(pk)), row, ix.cols, ix.kinds, ix.lens)
		if err != nil {
			return fmt.Errorf("table %s index %s: %w", ti.def.Name, ix.def.Name, err)
		}
		if ix.def.Unique && !hasNull {
			if existing, found, err := e.uniqueHolder(wtx, data, ix, k, nil); err != nil {
				return err
			} else if found {
				return sql.NewUniqueKeyErr(keyString(row, ix.cols), false, existing)
			}
		}
		ikeys[i] = append(k, pk...)
	}
	val, err := encodeRow(nil, row)
	if err != nil {
		return fmt.Errorf("table %s: %w", ti.def.Name, err)
	}
	if err := e.tx.putNew(data, ti.dataBucket, pk, val); err != nil { // absent: checked above
		return err
	}
	for i, ix := range ti.indexes {
		if err := e.tx.put(wtx.Bucket(ix.bucket), ix.bucket, ikeys[i], pk); err != nil {
			return err
		}
	}
	if ti.autoIncCol >= 0 && row[ti.autoIncCol] != nil {
		if v, ok := autoIncOf(row[ti.autoIncCol]); ok {
			cur, err := e.tx.autoIncValue(wtx, ti)
			if err != nil {
				return err
			}
			if v >= cur {
				return e.tx.setAutoInc(wtx, ti, v+1)
			}
		}
	}
	return nil
}

// rowKey is the key row is stored under: its primary key, or for a table
// without one the hidden row id of the first stored row equal to it (the
// engine hands back rows as it read them, so equal rows encode to equal
// bytes; which of several identical rows changes does not matter).
func (e *editor) rowKey(data *bolt.Bucket, row sql.Row) ([]byte, error) {
	ti := e.t.ti
	if !ti.hiddenPK() {
		pk, _, err := keyOf(nil, row, ti.primary.cols, ti.primary.kinds, nil)
		return pk, err
	}
	want, err := encodeRow(nil, row)
	if err != nil {
		return nil, err
	}
	c := data.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if bytes.Equal(v, want) {
			return append([]byte(nil), k...), nil
		}
	}
	return nil, sql.ErrDeleteRowNotFound.New()
}

// uniqueHolder finds the row holding index key prefix k, ignoring the row
// whose primary key is self.
func (e *editor) uniqueHolder(wtx *bolt.Tx, data *bolt.Bucket, ix *indexInfo, k, self []byte) (sql.Row, bool, error) {
	c := wtx.Bucket(ix.bucket).Cursor()
	for ik, pk := c.Seek(k); ik != nil && bytes.HasPrefix(ik, k); ik, pk = c.Next() {
		if self != nil && bytes.Equal(pk, self) {
			continue
		}
		existing, err := decodeRow(data.Get(pk))
		return existing, true, err
	}
	return nil, false, nil
}

func (e *editor) Update(ctx *sql.Context, old, new sql.Row) error {
	wtx, data, err := e.buckets()
	if err != nil {
		return err
	}
	ti := e.t.ti
	oldPK, err := e.rowKey(data, old)
	if err != nil {
		return err
	}
	newPK := oldPK // a hidden row id stays
	if !ti.hiddenPK() {
		if newPK, _, err = keyOf(nil, new, ti.primary.cols, ti.primary.kinds, nil); err != nil {
			return err
		}
	}
	pkChanged := !bytes.Equal(oldPK, newPK)
	if pkChanged {
		if ex := data.Get(newPK); ex != nil {
			existing, _ := decodeRow(ex)
			return sql.NewUniqueKeyErr(keyString(new, ti.primary.cols), true, existing)
		}
	}
	type change struct{ oldKey, newKey []byte }
	changes := make([]change, len(ti.indexes))
	for i, ix := range ti.indexes {
		ok, _, err := keyOf(keyBuf(old, ix.cols, len(oldPK)), old, ix.cols, ix.kinds, ix.lens)
		if err != nil {
			return err
		}
		nk, hasNull, err := keyOf(keyBuf(new, ix.cols, len(newPK)), new, ix.cols, ix.kinds, ix.lens)
		if err != nil {
			return err
		}
		if ix.def.Unique && !hasNull && !bytes.Equal(ok, nk) {
			if existing, found, err := e.uniqueHolder(wtx, data, ix, nk, oldPK); err != nil {
				return err
			} else if found {
				return sql.NewUniqueKeyErr(keyString(new, ix.cols), false, existing)
			}
		}
		changes[i] = change{append(ok, oldPK...), append(nk, newPK...)}
	}
	val, err := encodeRow(nil, new)
	if err != nil {
		return fmt.Errorf("table %s: %w", ti.def.Name, err)
	}
	if pkChanged {
		if err := e.tx.del(data, ti.dataBucket, oldPK); err != nil {
			return err
		}
	}
	if err := e.tx.put(data, ti.dataBucket, newPK, val); err != nil {
		return err
	}
	for i, ix := range ti.indexes {
		ch := changes[i]
		if bytes.Equal(ch.oldKey, ch.newKey) {
			continue
		}
		b := wtx.Bucket(ix.bucket)
		if err := e.tx.del(b, ix.bucket, ch.oldKey); err != nil {
			return err
		}
		if err := e.tx.put(b, ix.bucket, ch.newKey, newPK); err != nil {
			return err
		}
	}
	return nil
}

func (e *editor) Delete(ctx *sql.Context, row sql.Row) error {
	wtx, data, err := e.buckets()
	if err != nil {
		return err
	}
	ti := e.t.ti
	pk, err := e.rowKey(data, row)
	if err != nil {
		return err
	}
	if data.Get(pk) == nil {
		return sql.ErrDeleteRowNotFound.New()
	}
	if err := e.tx.del(data, ti.dataBucket, pk); err != nil {
		return err
	}
	for _, ix := range ti.indexes {
		k, _, err := keyOf(keyBuf(row, ix.cols, len(pk)), row, ix.cols, ix.kinds, ix.lens)
		if err != nil {
			return err
		}
		if err := e.tx.del(wtx.Bucket(ix.bucket), ix.bucket, append(k, pk...)); err != nil {
			return err
		}
	}
	return nil
}

// AUTO_INCREMENT: the next value lives in the autoinc bucket under the
// table id and moves with the transaction (a rolled-back insert returns it).

// autoIncOf is an AUTO_INCREMENT column's value as the counter counts it:
// integers, and FLOAT/DOUBLE values rounded as go-mysql-server converts
// them (the counter of a FLOAT or DOUBLE key never advanced before).
func autoIncOf(v interface{}) (uint64, bool) {
	switch f := v.(type) {
	case float64:
		if f >= 0 && f < math.MaxUint64 {
			return uint64(math.Round(f)), true
		}
		return 0, false
	case float32:
		return autoIncOf(float64(f))
	}
	return asUint64(v)
}

func u64key(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func (t *txn) autoIncValue(tx *bolt.Tx, ti *tableInfo) (uint64, error) {
	b := tx.Bucket(bucketAutoInc)
	if b == nil {
		return 1, nil
	}
	v := b.Get(u64key(ti.def.ID))
	if len(v) != 8 {
		return 1, nil
	}
	return binary.BigEndian.Uint64(v), nil
}

func (t *txn) setAutoInc(tx *bolt.Tx, ti *tableInfo, next uint64) error {
	return t.put(tx.Bucket(bucketAutoInc), bucketAutoInc, u64key(ti.def.ID), u64key(next))
}

func (t *Table) PeekNextAutoIncrementValue(ctx *sql.Context) (uint64, error) {
	tx, err := txnOf(ctx)
	if err != nil {
		return 0, err
	}
	btx, err := tx.readTx(ctx)
	if err != nil {
		return 0, err
	}
	return tx.autoIncValue(btx, t.ti)
}

func (t *Table) GetNextAutoIncrementValue(ctx *sql.Context, insertVal interface{}) (uint64, error) {
	tx, err := txnOf(ctx)
	if err != nil {
		return 0, err
	}
	wtx, err := tx.writeTx(ctx)
	if err != nil {
		return 0, err
	}
	cur, err := tx.autoIncValue(wtx, t.ti)
	if err != nil {
		return 0, err
	}
	if v, ok := autoIncOf(insertVal); ok && insertVal != nil && v > cur {
		return v, nil
	}
	return cur, nil
}

func (e *editor) SetAutoIncrementValue(ctx *sql.Context, v uint64) error {
	wtx, _, err := e.buckets()
	if err != nil {
		return err
	}
	return e.tx.setAutoInc(wtx, e.t.ti, v)
}

func (e *editor) AcquireAutoIncrementLock(ctx *sql.Context) (func(), error) {
	return func() {}, nil // the writer turn already serializes inserts
}

// Index DDL.

func (t *Table) CreateIndex(ctx *sql.Context, def sql.IndexDef) error {
	if def.IsPrimary() {
		return nil // the primary key is the row key, declared by the schema
	}
	if def.IsFullText() {
		return sql.ErrUnsupportedFeature.New("FULLTEXT indexes")
	}
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
	for _, ix := range ti.def.Indexes { // VECTOR ones too
		if strings.EqualFold(ix.Name, def.Name) {
			return sql.ErrDuplicateKey.New(def.Name)
		}
	}
	nd := ti.def
	idef := indexDef{ID: nd.NextIdx, Name: def.Name, Unique: def.IsUnique(), Comment: def.Comment,
		Vector: def.IsVector(), Spatial: def.IsSpatial()}
	for i, c := range def.Columns {
		idef.Columns = append(idef.Columns, c.Name)
		if c.Length > 0 {
			if c.Length > math.MaxUint16 {
				return sql.ErrKeyTooLong.New()
			}
			if idef.Prefix == nil {
				idef.Prefix = make([]uint16, len(def.Columns))
			}
			idef.Prefix[i] = uint16(c.Length)
		}
	}
	nd.Indexes = append(append([]indexDef{}, ti.def.Indexes...), idef)
	nd.NextIdx++
	nti, err := compile(ti.db, nd)
	if err != nil {
		return err
	}
	if idef.unkeyed() {
		return t.saveDefChange(tx, ti, nti) // no keys to write
	}
	ix := nti.indexes[len(nti.indexes)-1]
	b, err := tx.createBucket(ix.bucket)
	if err != nil {
		return err
	}
	data := wtx.Bucket(nti.dataBucket)
	c := data.Cursor()
	for pk, v := c.First(); pk != nil; pk, v = c.Next() {
		row, err := decodeRow(v)
		if err != nil {
			return err
		}
		if dup, err := indexRow(b, ix, row, pk); err != nil {
			return err
		} else if dup {
			return sql.NewUniqueKeyErr(keyString(row, ix.cols), false, row)
		}
	}
	return t.saveDefChange(tx, ti, nti)
}

// saveDefChange writes nti, ti with a changed definition that moves no row
// (an index added without keys, a new default collation), and puts it in
// the catalog.
func (t *Table) saveDefChange(tx *txn, ti, nti *tableInfo) error {
	if err := tx.saveDef(nti); err != nil {
		return err
	}
	t.eng.swapTable(tx, ti.db, ti.def.Name, nti)
	t.ti = nti
	return nil
}

// indexRow writes row's key in ix to b, for rows keyed in bulk (a new
// index, a rewrite, an upgrade's re-keying). dup reports that the index is
// unique and already holds the key: nothing is written then, and the caller
// names the duplicate its own way.
func indexRow(b *bolt.Bucket, ix *indexInfo, row sql.Row, pk []byte) (dup bool, err error) {
	k, hasNull, err := keyOf(keyBuf(row, ix.cols, len(pk)), row, ix.cols, ix.kinds, ix.lens)
	if err != nil {
		return false, err
	}
	if ix.def.Unique && !hasNull {
		if ik, _ := b.Cursor().Seek(k); ik != nil && bytes.HasPrefix(ik, k) {
			return true, nil
		}
	}
	return false, b.Put(append(k, pk...), append([]byte(nil), pk...))
}

func (t *Table) DropIndex(ctx *sql.Context, name string) error {
	return t.alterIndexes(ctx, name, func(tx *txn, nd *tableDef, i int) {
		tx.dropAtCommit(indexBucketName(nd.ID, nd.Indexes[i].ID))
		nd.Indexes = append(nd.Indexes[:i:i], nd.Indexes[i+1:]...)
	})
}

func (t *Table) RenameIndex(ctx *sql.Context, from, to string) error {
	return t.alterIndexes(ctx, from, func(tx *txn, nd *tableDef, i int) {
		nd.Indexes[i].Name = to
	})
}

func (t *Table) alterIndexes(ctx *sql.Context, name string, change func(*txn, *tableDef, int)) error {
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
	nd.Indexes = append([]indexDef{}, ti.def.Indexes...)
	for i := range nd.Indexes {
		if strings.EqualFold(nd.Indexes[i].Name, name) {
			change(tx, &nd, i)
			nti, err := compile(ti.db, nd)
			if err != nil {
				return err
			}
			if err := tx.saveDef(nti); err != nil {
				return err
			}
			t.eng.swapTable(tx, ti.db, ti.def.Name, nti)
			t.ti = nti
			return nil
		}
	}
	return sql.ErrIndexNotFound.New(name)
}
