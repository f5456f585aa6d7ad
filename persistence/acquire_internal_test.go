package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
)

// An Acquire racing the old owner's append must hand out the head (and
// sessions row) the epoch bump really follows: either the append lands
// before the new epoch and the new owner sees it, or it is held off and
// fenced. On MariaDB a plain SELECT in the transaction read a snapshot, so
// an append committed between the read and the bump was missed.
func TestAcquireSeesAnAppendThatRacesIt(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			db := b.db(t)
			open := func() *Journal {
				j, err := Open(ctx, Config{DB: db})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { j.Close() })
				return j
			}
			old, next := open(), open()
			own, err := old.Acquire(ctx, "s", "old")
			if err != nil {
				t.Fatal(err)
			}
			head, err := old.Append(ctx, "s", 0, own.Epoch, messages.SessionCreated{Location: "/p"})
			if err != nil {
				t.Fatal(err)
			}
			var raced error
			next.afterAcquireRead = func() {
				next.afterAcquireRead = nil
				// Bounded: held off by the acquiring transaction, it gives up.
				actx, acancel := context.WithTimeout(ctx, 2*time.Second)
				defer acancel()
				_, raced = old.Append(actx, "s", head, own.Epoch, messages.Idle{})
			}
			got, sess, found, err := next.acquire(ctx, "s", "next", true)
			if err != nil {
				t.Fatal(err)
			}
			var last, epoch int64
			if err := db.QueryRowContext(ctx, next.n.q(qStream), "s").Scan(&last, &epoch); err != nil {
				t.Fatal(err)
			}
			if got.LastSeq != last || !found || sess.LastSeq != last || got.Epoch != epoch {
				t.Fatalf("acquire handed out head %d (row %d, found %v) at epoch %d; the stream is at %d, epoch %d (racing append: %v)",
					got.LastSeq, sess.LastSeq, found, got.Epoch, last, epoch, raced)
			}
			if raced == nil && last != head+1 {
				t.Fatalf("the racing append succeeded but the head is %d, want %d", last, head+1)
			}
		})
	}
}
