package boltsql

import (
	"github.com/dolthub/go-mysql-server/sql"
	bolt "go.etcd.io/bbolt"
)

// TRUNCATE TABLE (sql.TruncateableTable): every row and index entry goes,
// through the undo log (so a failing statement or ROLLBACK TO a savepoint
// brings them back), and AUTO_INCREMENT starts again at 1, as in MySQL.
// go-mysql-server refuses it first for a table a foreign key references.
// Before, TRUNCATE was refused ("table doesn't support TRUNCATE").

var _ sql.TruncateableTable = (*Table)(nil)

func (t *Table) Truncate(ctx *sql.Context) (int, error) {
	tx, err := txnOf(ctx)
	if err != nil {
		return 0, err
	}
	wtx, err := tx.writeTx(ctx)
	if err != nil {
		return 0, err
	}
	ti := t.current()
	n, err := clearBucket(tx, wtx, ti.dataBucket)
	if err != nil {
		return 0, err
	}
	for _, ix := range ti.indexes {
		if _, err := clearBucket(tx, wtx, ix.bucket); err != nil {
			return 0, err
		}
	}
	if b := wtx.Bucket(bucketAutoInc); b != nil {
		if err := tx.del(b, bucketAutoInc, u64key(ti.def.ID)); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// clearBucket deletes every key of bucket name, logged for undo, and
// returns how many there were.
func clearBucket(tx *txn, wtx *bolt.Tx, name []byte) (int, error) {
	b := wtx.Bucket(name)
	if b == nil {
		return 0, nil
	}
	var keys [][]byte
	if err := b.ForEach(func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	}); err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := tx.del(b, name, k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}
