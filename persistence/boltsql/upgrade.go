package boltsql

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	bolt "go.etcd.io/bbolt"
)

// Format 2 keys strings under a collation that does not order them as
// their bytes (utf8mb4_0900_ai_ci, latin1_bin …) by their characters' sort
// weights; format 1 keyed every string by its bytes (it refused such
// columns in keys unless their collation was a _bin one, or the definition
// was written before columns named their collation). Opening a format 1
// file re-keys each table that has such a key column, in the open's write
// transaction: a crash leaves the format 1 file as it was.

// rekeyCollated re-keys the tables of a format 1 file whose primary key or
// an index has a collated string column.
func rekeyCollated(tx *bolt.Tx) error {
	return tx.Bucket(bucketSchema).ForEach(func(k, v []byte) error {
		db, _, _ := strings.Cut(string(k), "\x00")
		def, err := unmarshalDef(v)
		if err != nil {
			return fmt.Errorf("schema of %q: %w", k, err)
		}
		ti, err := compile(db, def)
		if err != nil {
			return err
		}
		if !hasCollatedKey(ti) {
			return nil
		}
		if err := rekeyTable(tx, ti); err != nil {
			return fmt.Errorf("upgrade table %s.%s to collated keys: %w", db, def.Name, err)
		}
		return nil
	})
}

func hasCollatedKey(ti *tableInfo) bool {
	for _, k := range ti.pkKinds {
		if k.base() == keyCollated {
			return true
		}
	}
	for _, ix := range ti.indexes {
		for _, k := range ix.kinds {
			if k.base() == keyCollated {
				return true
			}
		}
	}
	return false
}

// rekeyTable rewrites ti's rows under their new primary keys (through a
// scratch bucket: a bucket cannot be renamed) and rebuilds its indexes.
// Rows equal under the collation that a key told apart before cannot both
// stay: the upgrade fails, naming them.
func rekeyTable(tx *bolt.Tx, ti *tableInfo) error {
	data := tx.Bucket(ti.dataBucket)
	if data == nil {
		return fmt.Errorf("storage missing")
	}
	if ti.primary != nil {
		scratch := append(append([]byte(nil), ti.dataBucket...), ".rekey"...)
		tmp, err := tx.CreateBucket(scratch)
		if err != nil {
			return err
		}
		if err := data.ForEach(func(_, v []byte) error {
			row, err := decodeRow(v)
			if err != nil {
				return err
			}
			pk, _, err := keyOf(nil, row, ti.primary.cols, ti.primary.kinds, nil)
			if err != nil {
				return err
			}
			if tmp.Get(pk) != nil {
				return fmt.Errorf("two rows have the primary key %s under its collation", keyString(row, ti.primary.cols))
			}
			return tmp.Put(pk, v)
		}); err != nil {
			return err
		}
		seq := data.Sequence()
		if err := tx.DeleteBucket(ti.dataBucket); err != nil {
			return err
		}
		if data, err = tx.CreateBucket(ti.dataBucket); err != nil {
			return err
		}
		if err := data.SetSequence(seq); err != nil {
			return err
		}
		if err := tmp.ForEach(data.Put); err != nil {
			return err
		}
		if err := tx.DeleteBucket(scratch); err != nil {
			return err
		}
	}
	for _, ix := range ti.indexes {
		if err := tx.DeleteBucket(ix.bucket); err != nil && err != bolt.ErrBucketNotFound {
			return err
		}
		b, err := tx.CreateBucket(ix.bucket)
		if err != nil {
			return err
		}
		if err := data.ForEach(func(pk, v []byte) error {
			row, err := decodeRow(v)
			if err != nil {
				return err
			}
			if dup, err := indexRow(b, ix, row, pk); err != nil {
				return err
			} else if dup {
				return sql.NewUniqueKeyErr(fmt.Sprintf("%s (index %s, under its collation)", keyString(row, ix.cols), ix.def.Name), false, row)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}
