package boltsql

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	bolt "go.etcd.io/bbolt"
)

// Row counts (sql.StatisticsTable). Each table's count is a key of the
// rowcount bucket, brought up to date when a transaction commits, from its
// undo log: a key of a rows bucket that exists now and did not before adds
// one, the other way round takes one (statement rollbacks and savepoints
// have already trimmed the log, so it says what the transaction changed).
// A rows bucket the transaction created (CREATE TABLE, an ALTER that
// rewrote the rows) is counted whole. Reading a count is one Get.
//
// Before, tables had no count: information_schema.tables and SHOW TABLE
// STATUS said 0 rows, and after ANALYZE TABLE go-mysql-server's statistics
// (built with the count as the distinct count) made a self-join on an
// indexed column divide by zero while planning.

var bucketRowCount = []byte("rowcount") // table id -> rows (8 bytes, big endian)

var _ sql.StatisticsTable = (*Table)(nil)

// RowCount is the table's committed row count: the transaction's own
// uncommitted changes are not in it, so it is not exact (an exact count
// would let go-mysql-server answer COUNT(*) from it).
func (t *Table) RowCount(ctx *sql.Context) (uint64, bool, error) {
	var n uint64
	err := t.eng.bolt.View(func(tx *bolt.Tx) error {
		n = storedRowCount(tx, t.ti.def.ID)
		return nil
	})
	return n, false, err
}

// DataLength is an estimate from the column types, the one go-mysql-server's
// memory engine gives (SHOW TABLE STATUS and information_schema.tables
// print it; nothing plans with it): the file's real use per table would
// need a walk of its pages.
func (t *Table) DataLength(ctx *sql.Context) (uint64, error) {
	n, _, err := t.RowCount(ctx)
	if err != nil {
		return 0, err
	}
	var perRow uint64
	for _, col := range t.ti.schema.Schema {
		switch ct := col.Type.(type) { // the memory engine's order: some types match several cases
		case sql.NumberType:
			perRow += 8
		case sql.StringType:
			perRow += uint64(ct.MaxByteLength())
		case types.BitType:
			perRow++
		case sql.DatetimeType:
			perRow += 8
		case sql.DecimalType:
			perRow += uint64(ct.MaximumScale())
		case sql.EnumType:
			perRow += 2
		case types.JsonType:
			perRow += 20
		case sql.NullType:
			perRow++
		case types.TimeType:
			perRow += 16
		case sql.YearType:
			perRow += 8
		}
	}
	return perRow * n, nil
}

func storedRowCount(tx *bolt.Tx, id uint64) uint64 {
	b := tx.Bucket(bucketRowCount)
	if b == nil {
		return 0
	}
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], id)
	if v := b.Get(k[:]); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// dataBucketID is the table id of a rows bucket name ("d<id>"), or false.
func dataBucketID(name []byte) (uint64, bool) {
	if len(name) < 2 || name[0] != 'd' || name[1] < '0' || name[1] > '9' {
		return 0, false
	}
	id, err := strconv.ParseUint(string(name[1:]), 10, 64)
	return id, err == nil
}

// initRowCounts creates the rowcount bucket in a file written before it
// existed, counting each table's rows once.
func initRowCounts(tx *bolt.Tx) error {
	if tx.Bucket(bucketRowCount) != nil {
		return nil
	}
	rc, err := tx.CreateBucket(bucketRowCount)
	if err != nil {
		return err
	}
	return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if id, ok := dataBucketID(name); ok {
			return rc.Put(u64key(id), u64key(uint64(b.Stats().KeyN)))
		}
		return nil
	})
}

// applyRowCounts brings the counts of the tables t wrote up to date in its
// write transaction, just before it commits. A journal commit writes a row
// or a few: the tables and keys are kept in small arrays on the stack (no
// maps) and duplicates found by scanning them, with a map for large logs;
// a commit that changes no count (an UPDATE) writes nothing.
func (t *txn) applyRowCounts() error {
	type change struct {
		id      uint64
		delta   int64
		created bool
	}
	var changesBuf [4]change
	changes := changesBuf[:0]
	var firstsBuf [8]int // undo log positions of the first record of each key
	firsts := firstsBuf[:0]
	var seen map[string]struct{} // instead of firsts past smallLog keys
	const smallLog = 32
	for i := range t.undo {
		r := &t.undo[i]
		if r.catalog != nil {
			continue
		}
		id, ok := dataBucketID(r.bucket)
		if !ok {
			continue
		}
		ci := -1
		for j := range changes {
			if changes[j].id == id {
				ci = j
				break
			}
		}
		if ci < 0 {
			changes = append(changes, change{id: id})
			ci = len(changes) - 1
		}
		if r.dropBucket {
			changes[ci].created = true
			continue
		}
		// Only the first record of a key holds its value before the transaction.
		if seen != nil {
			k := string(r.bucket) + "\x00" + string(r.key)
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
		} else {
			dup := false
			for _, f := range firsts {
				if bytes.Equal(t.undo[f].key, r.key) && bytes.Equal(t.undo[f].bucket, r.bucket) {
					dup = true
					break
				}
			}
			if dup {
				continue
			}
			if firsts = append(firsts, i); len(firsts) > smallLog {
				seen = make(map[string]struct{}, 2*len(firsts))
				for _, f := range firsts {
					seen[string(t.undo[f].bucket)+"\x00"+string(t.undo[f].key)] = struct{}{}
				}
			}
		}
		if b := t.wtx.Bucket(r.bucket); b != nil {
			if b.Get(r.key) != nil {
				changes[ci].delta++
			}
			if r.prev != nil {
				changes[ci].delta--
			}
		}
	}
	var rc *bolt.Bucket
	for _, name := range t.drops {
		if id, ok := dataBucketID(name); ok {
			if rc == nil {
				if rc = t.wtx.Bucket(bucketRowCount); rc == nil {
					return nil
				}
			}
			if err := rc.Delete(u64key(id)); err != nil {
				return err
			}
		}
	}
	for _, c := range changes {
		if c.delta == 0 && !c.created {
			continue // an UPDATE: nothing to write
		}
		b := t.wtx.Bucket(dataBucketName(c.id))
		if b == nil {
			continue // dropped
		}
		if rc == nil {
			if rc = t.wtx.Bucket(bucketRowCount); rc == nil {
				return nil
			}
		}
		var n int64
		if c.created {
			// A cursor, not Stats: Stats reads the pages, and in a write
			// transaction the new rows are not in pages yet.
			cur := b.Cursor()
			for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
				n++
			}
		} else if n = int64(storedRowCount(t.wtx, c.id)) + c.delta; n < 0 {
			n = 0
		}
		kv := make([]byte, 16) // key and value in one allocation
		binary.BigEndian.PutUint64(kv[:8], c.id)
		binary.BigEndian.PutUint64(kv[8:], uint64(n))
		if err := rc.Put(kv[:8], kv[8:]); err != nil {
			return err
		}
	}
	return nil
}
