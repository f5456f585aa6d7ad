package boltsql

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Writers that read the head on a snapshot, append after it and retry on a
// duplicate key must converge: a group commit may not stay open while
// conflicting transactions keep arriving, or its commits never become
// visible and the retries spin forever.
func TestConflictingRetriersConverge(t *testing.T) {
	e, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	db := e.DB()
	if _, err := db.Exec(`CREATE TABLE ev (s VARCHAR(20) NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (s, seq))`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				for {
					if err := ctx.Err(); err != nil {
						errs <- err
						return
					}
					var head int64
					if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ev WHERE s = 'a'`).Scan(&head); err != nil {
						continue
					}
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						continue
					}
					if _, err := tx.ExecContext(ctx, `INSERT INTO ev VALUES ('a', ?)`, head+1); err != nil {
						_ = tx.Rollback()
						continue
					}
					if tx.Commit() == nil {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("retrying writers did not converge: %v", err)
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ev`).Scan(&n); err != nil || n != writers*each {
		t.Fatalf("%d rows, %v; want %d", n, err, writers*each)
	}
}
