package boltsql

import (
	"bytes"
	"fmt"
	"io"
	"sort"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	bolt "go.etcd.io/bbolt"
)

// Table is a go-mysql-server table stored in bbolt: rows in a bucket keyed
// by the encoded primary key, each secondary index in its own bucket keyed
// by the encoded index columns followed by the primary key.
type Table struct {
	eng *Engine
	ti  *tableInfo // replaced in place by this table's own index DDL
}

var (
	_ sql.Table                 = (*Table)(nil)
	_ sql.PrimaryKeyTable       = (*Table)(nil)
	_ sql.IndexAddressableTable = (*Table)(nil)
	_ sql.IndexAlterableTable   = (*Table)(nil)
	_ sql.InsertableTable       = (*Table)(nil)
	_ sql.UpdatableTable        = (*Table)(nil)
	_ sql.DeletableTable        = (*Table)(nil)
	_ sql.ReplaceableTable      = (*Table)(nil)
	_ sql.AutoIncrementTable    = (*Table)(nil)
	_ sql.CommentedTable        = (*Table)(nil)
	_ sql.TemporaryTable        = (*Table)(nil)
)

// IsTemporary is false: no table here is. go-mysql-server's read-only
// transaction check type-asserts every written table to sql.TemporaryTable
// and calls IsTemporary on the nil result when it is not one (a nil
// dereference: INSERT/UPDATE/DELETE in START TRANSACTION READ ONLY crashed
// the process instead of failing with the read-only error).
func (t *Table) IsTemporary() bool { return false }

func (t *Table) Name() string                           { return t.ti.def.Name }
func (t *Table) String() string                         { return t.ti.def.Name }
func (t *Table) Schema() sql.Schema                     { return t.ti.schema.Schema }
func (t *Table) PrimaryKeySchema() sql.PrimaryKeySchema { return t.ti.schema }
func (t *Table) Comment() string                        { return t.ti.def.Comment }

func (t *Table) Collation() sql.CollationID {
	if t.ti.def.Collation != "" {
		if c, err := sql.ParseCollation("", t.ti.def.Collation, false); err == nil {
			return c
		}
	}
	return sql.Collation_Default
}

// partition carries the lookup (nil for a full scan): lookup joins call
// LookupPartitions repeatedly on one IndexedTable.
type partition struct {
	lookup *sql.IndexLookup
	live   bool // read past the statement's snapshot (foreign key lookups)
}

func (p *partition) Key() []byte { return []byte("boltsql") }

func (t *Table) Partitions(ctx *sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(&partition{}), nil
}

func (t *Table) PartitionRows(ctx *sql.Context, p sql.Partition) (sql.RowIter, error) {
	part, ok := p.(*partition)
	if !ok {
		return nil, fmt.Errorf("boltsql: foreign partition %T", p)
	}
	it := &rowIter{tbl: t, ti: t.ti, batch: 8, live: part.live}
	if part.lookup == nil || part.lookup.Index == nil {
		it.spans, it.checks = []keySpan{{}}, []sql.Expression{nil}
		return it, nil
	}
	ix, ok := part.lookup.Index.(*Index)
	if !ok {
		return nil, fmt.Errorf("boltsql: foreign index %T", part.lookup.Index)
	}
	it.ix = ix.ix
	it.reverse = part.lookup.IsReverse
	// IsEmptyRange is not trusted: go-mysql-server v0.20.0's lookup join
	// sets it for every NULL key, also of a null-safe condition (l.a <=>
	// r.a) whose range (IS NULL) does hold rows; spanOfRange finds the
	// empty ranges (= NULL among them) itself.
	ranges, ok := part.lookup.Ranges.(sql.MySQLRangeCollection)
	if !ok {
		return nil, fmt.Errorf("boltsql: unsupported range collection %T", part.lookup.Ranges)
	}
	// Per span, the ranges it reads; with one range (a point or a single
	// range, the common case) that range, without allocating.
	var spanRanges [][]sql.MySQLRange
	if len(ranges) > 1 {
		spanRanges = make([][]sql.MySQLRange, 0, len(ranges))
	}
	for k, r := range ranges {
		span, empty, err := spanOfRange(ix.ix.kinds, ix.ix.lens, r)
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", ix.ix.def.Name, err)
		}
		if empty {
			continue
		}
		it.spans = append(it.spans, span)
		if spanRanges != nil {
			spanRanges = append(spanRanges, ranges[k:k+1:k+1]) // capped: a merge appends to a copy
		}
	}
	if len(it.spans) > 1 {
		sort.Sort(spanOrder{it.spans, spanRanges})
		it.spans, spanRanges = mergeSpans(it.spans, spanRanges)
	}
	for i, span := range it.spans {
		var check sql.Expression
		if span.inexact {
			rs := []sql.MySQLRange(ranges)
			if spanRanges != nil {
				rs = spanRanges[i]
			}
			var err error
			if check, err = expression.NewRangeFilterExpr(ix.ix.fields, rs); err != nil {
				return nil, fmt.Errorf("index %s: %w", ix.ix.def.Name, err)
			}
		}
		it.checks = append(it.checks, check)
	}
	if it.reverse {
		for i, j := 0, len(it.spans)-1; i < j; i, j = i+1, j-1 {
			it.spans[i], it.spans[j] = it.spans[j], it.spans[i]
			it.checks[i], it.checks[j] = it.checks[j], it.checks[i]
		}
	}
	return it, nil
}

// IndexedAccess implements sql.IndexAddressable.
func (t *Table) IndexedAccess(ctx *sql.Context, lookup sql.IndexLookup) sql.IndexedTable {
	return &IndexedTable{Table: t}
}

// PreciseMatch is true: an index scan returns exactly the rows in its
// ranges (inexact spans check each row), so the engine drops the filters
// the ranges express; re-evaluating them cost a third of a range read.
func (t *Table) PreciseMatch() bool { return true }

// spanOrder sorts spans by their lower bound, with their ranges.
type spanOrder struct {
	spans  []keySpan
	ranges [][]sql.MySQLRange
}

func (s spanOrder) Len() int { return len(s.spans) }
func (s spanOrder) Less(i, j int) bool {
	return bytes.Compare(s.spans[i].lo, s.spans[j].lo) < 0
}
func (s spanOrder) Swap(i, j int) {
	s.spans[i], s.spans[j] = s.spans[j], s.spans[i]
	s.ranges[i], s.ranges[j] = s.ranges[j], s.ranges[i]
}

func (t *Table) GetIndexes(ctx *sql.Context) ([]sql.Index, error) {
	out := make([]sql.Index, 0, len(t.ti.indexes)+1)
	if t.ti.primary != nil {
		out = append(out, &Index{ix: t.ti.primary})
	}
	for _, ix := range t.ti.indexes {
		out = append(out, &Index{ix: ix})
	}
	for _, ix := range t.ti.unkeyed {
		out = append(out, &Index{ix: ix})
	}
	// Secondary indexes by name, as go-mysql-server's memory engine lists
	// them: SHOW CREATE TABLE prints them in this order.
	sec := out[len(out)-len(t.ti.indexes)-len(t.ti.unkeyed):]
	sort.Slice(sec, func(i, j int) bool { return sec[i].ID() < sec[j].ID() })
	return out, nil
}

// IndexedTable is a Table whose partitions come from an index lookup.
type IndexedTable struct {
	*Table
}

var _ sql.IndexedTable = (*IndexedTable)(nil)

func (t *IndexedTable) LookupPartitions(ctx *sql.Context, lookup sql.IndexLookup) (sql.PartitionIter, error) {
	l := lookup
	return sql.PartitionsToPartitionIter(&partition{lookup: &l}), nil
}

// Index is a primary or secondary index as go-mysql-server sees it.
type Index struct {
	ix *indexInfo
}

var (
	_ sql.Index         = (*Index)(nil)
	_ sql.OrderedIndex  = (*Index)(nil)
	_ sql.ExtendedIndex = (*Index)(nil)
)

func (i *Index) ID() string                                        { return i.ix.def.Name }
func (i *Index) Database() string                                  { return i.ix.tbl.db }
func (i *Index) Table() string                                     { return i.ix.tbl.def.Name }
func (i *Index) Expressions() []string                             { return i.ix.exprs[:len(i.ix.cols)] }
func (i *Index) IsUnique() bool                                    { return i.ix.def.Unique }
func (i *Index) IsSpatial() bool                                   { return i.ix.def.Spatial }
func (i *Index) IsFullText() bool                                  { return false }
func (i *Index) IsVector() bool                                    { return i.ix.def.Vector }
func (i *Index) Comment() string                                   { return i.ix.def.Comment }
func (i *Index) IndexType() string                                 { return "BTREE" }
func (i *Index) IsGenerated() bool                                 { return false }
func (i *Index) ColumnExpressionTypes() []sql.ColumnExpressionType { return i.ix.typs[:len(i.ix.cols)] }

// ExtendedExpressions and ExtendedColumnExpressionTypes add the primary-key
// columns a secondary index lacks, which its keys end with: a foreign key
// may reference an index's columns followed by primary-key columns
// (sql.ExtendedIndex), and its lookups then constrain them too.
func (i *Index) ExtendedExpressions() []string { return i.ix.exprs }
func (i *Index) ExtendedColumnExpressionTypes() []sql.ColumnExpressionType {
	return i.ix.typs
}

// CanSupport is false for a VECTOR or SPATIAL index, which has no keys:
// go-mysql-server then never reads through it.
func (i *Index) CanSupport(*sql.Context, ...sql.Range) bool { return !i.ix.def.unkeyed() }

func (i *Index) CanSupportOrderBy(sql.Expression) bool { return false }

// PrefixLengths are the prefix lengths of a prefix index (0: the whole
// column), nil for an index of whole values. go-mysql-server then keeps
// its filter above a lookup (the keys say less than the values) and takes
// the index for neither ordering nor uniqueness of whole values.
func (i *Index) PrefixLengths() []uint16 { return i.ix.lens }

// Order is none for a prefix index: its keys order the rows by their
// prefixes only.
func (i *Index) Order() sql.IndexOrder {
	if i.ix.lens != nil {
		return sql.IndexOrderNone
	}
	return sql.IndexOrderAsc
}

func (i *Index) Reversible() bool { return i.ix.lens == nil }

// rowIter reads rows of one table over key spans, in key order (or reverse).
// It reads a batch of keys at a time and re-seeks after the last key it
// returned, because a bbolt cursor is invalidated when the statement writes
// to the bucket it walks (UPDATE and DELETE do).
type rowIter struct {
	tbl     *Table
	ti      *tableInfo
	ix      *indexInfo // nil: scan the rows bucket
	spans   []keySpan
	checks  []sql.Expression // per span: nil, or the range test for an inexact span
	reverse bool
	live    bool // ignore the running statement's snapshot

	span  int
	last  []byte // last key read in the current span
	buf   []sql.Row
	pos   int
	batch int
	ownTx *bolt.Tx // when the context has no transaction
	done  bool
}

func (it *rowIter) Next(ctx *sql.Context) (sql.Row, error) {
	for it.pos >= len(it.buf) {
		if it.done || it.span >= len(it.spans) {
			return nil, io.EOF
		}
		if err := it.fill(ctx); err != nil {
			return nil, err
		}
	}
	r := it.buf[it.pos]
	it.buf[it.pos] = nil
	it.pos++
	return r, nil
}

func (it *rowIter) tx(ctx *sql.Context) (*bolt.Tx, error) {
	if t, err := txnOf(ctx); err == nil {
		return t.readTx(ctx)
	}
	if it.ownTx == nil {
		tx, err := it.tbl.eng.bolt.Begin(false)
		if err != nil {
			return nil, err
		}
		it.ownTx = tx
	}
	return it.ownTx, nil
}

func (it *rowIter) fill(ctx *sql.Context) error {
	it.buf, it.pos = it.buf[:0], 0
	tx, err := it.tx(ctx)
	if err != nil {
		return err
	}
	data := tx.Bucket(it.ti.dataBucket)
	src := data
	if it.ix != nil && !it.ix.primary {
		src = tx.Bucket(it.ix.bucket)
	}
	if data == nil || src == nil {
		it.done = true // table created by a transaction this snapshot does not see
		return nil
	}
	// A data-changing statement reads the rows as they were when it began.
	// One nested in it (a procedure a trigger calls) reads them as they
	// are: the outer statement's snapshot holds what its nested ones
	// changed too.
	var dataSnap, srcSnap map[string][]byte
	if t, nested, err := statementTxn(ctx); err == nil && !it.live && !nested {
		dataSnap = t.snapshotOf(it.ti.dataBucket)
		srcSnap = dataSnap
		if src != data {
			srcSnap = t.snapshotOf(it.ix.bucket)
		}
	}
	c := src.Cursor()
	var n uint64
	defer func() { it.tbl.eng.keysRead.Add(n) }()
	for len(it.buf) < it.batch && it.span < len(it.spans) {
		sp := it.spans[it.span]
		var k, v []byte
		if !it.reverse {
			if it.last == nil {
				if sp.lo == nil {
					k, v = c.First()
				} else {
					k, v = c.Seek(sp.lo)
				}
			} else {
				k, v = c.Seek(it.last)
				if k != nil && bytes.Equal(k, it.last) {
					k, v = c.Next()
				}
			}
		} else {
			seek := sp.hi
			if it.last != nil {
				seek = it.last
			}
			if seek == nil {
				k, v = c.Last()
			} else if k, v = c.Seek(seek); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil; func() {
			if it.reverse {
				k, v = c.Prev()
			} else {
				k, v = c.Next()
			}
		}() {
			if !it.reverse && sp.hi != nil && bytes.Compare(k, sp.hi) >= 0 {
				k = nil
				break
			}
			if it.reverse && sp.lo != nil && bytes.Compare(k, sp.lo) < 0 {
				k = nil
				break
			}
			n++
			it.last = append(it.last[:0], k...)
			if srcSnap != nil {
				if prev, changed := srcSnap[string(k)]; changed {
					if prev == nil {
						continue // written by this statement
					}
					v = prev
				}
			}
			rowBytes := v
			if src != data {
				rowBytes = data.Get(v)
				if dataSnap != nil {
					if prev, changed := dataSnap[string(v)]; changed {
						rowBytes = prev
					}
				}
				if rowBytes == nil {
					return fmt.Errorf("table %s index %s: entry without row", it.ti.def.Name, it.ix.def.Name)
				}
			}
			row, err := decodeRow(rowBytes)
			if err != nil {
				return fmt.Errorf("table %s: %w", it.ti.def.Name, err)
			}
			if check := it.checks[it.span]; check != nil {
				in, err := check.Eval(ctx, row)
				if err != nil {
					return err
				}
				if b, _ := in.(bool); !b {
					continue
				}
			}
			it.buf = append(it.buf, row)
			if len(it.buf) >= it.batch {
				break
			}
		}
		if k == nil { // span exhausted
			it.span++
			it.last = nil
		}
	}
	if it.batch < 256 {
		it.batch *= 4
	}
	return nil
}

func (it *rowIter) Close(ctx *sql.Context) error {
	if it.ownTx != nil {
		_ = it.ownTx.Rollback()
		it.ownTx = nil
	}
	return nil
}
