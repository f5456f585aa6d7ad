package journal

import (
	"context"
	"testing"

	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// BenchmarkEngineFloor measures single statements on the embedded engine
// (no fsync), the floor under every journal figure above.
func BenchmarkEngineFloor(b *testing.B) {
	e, err := boltsql.Open(b.TempDir(), boltsql.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	db := e.DB()
	ctx := context.Background()
	if _, err := db.Exec(`CREATE TABLE t (id VARBINARY(255) NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (id))`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO t VALUES ('a', 0)`); err != nil {
		b.Fatal(err)
	}
	b.Run("select-1", func(b *testing.B) {
		for range b.N {
			var n int
			if err := db.QueryRow(`SELECT 1`).Scan(&n); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("point-select", func(b *testing.B) {
		for range b.N {
			var n int64
			if err := db.QueryRow(`SELECT n FROM t WHERE id = ?`, "a").Scan(&n); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("begin-commit", func(b *testing.B) {
		for range b.N {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tx-update", func(b *testing.B) {
		for range b.N {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Exec(`UPDATE t SET n = n + 1 WHERE id = ?`, "a"); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
