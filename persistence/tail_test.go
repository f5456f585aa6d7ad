package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// Eight writers race on one session (optimistic appends, retried on
// conflict) while four tailers start at different moments, one of them on a
// second Journal that only has the poll to wake it: each tailer must see
// seqs 1..N exactly once, in order.
func TestReplayThenTailSeesEveryEventOnceInOrderUnderRacingWriters(t *testing.T) {
	eachBackendCfg(t, persistence.Config{PollInterval: 20 * time.Millisecond}, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		other := openJournal(t, persistence.Config{DB: j.DB(), PollInterval: 20 * time.Millisecond})
		const writers, perWriter = 8, 40
		total := int64(1 + writers*perWriter)
		mustAppend(t, j, "s1", 0, 0, created("/p"))

		tail := func(j *persistence.Journal, after int64, out chan<- error) {
			want := after + 1
			for e, err := range j.Events(ctx, "s1", after) {
				if err != nil {
					out <- err
					return
				}
				if e.Seq != want {
					out <- fmt.Errorf("tailer after %d: got seq %d, want %d", after, e.Seq, want)
					return
				}
				if want == total {
					out <- nil
					return
				}
				want++
			}
		}
		results := make(chan error, 4)
		go tail(j, 0, results)     // subscribed before any write
		go tail(other, 0, results) // another process: poll only
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				<-start
				last := int64(0) // a stale guess: the conflict error says where the head is
				for i := 0; i < perWriter; {
					n, err := j.Append(ctx, "s1", last, 0, messages.AgentSwitched{Agent: fmt.Sprintf("w%d-%d", w, i)})
					var ce *persistence.ConflictError
					if errors.As(err, &ce) {
						last = ce.Last
						continue
					} else if err != nil {
						t.Error(err)
						return
					}
					last = n
					i++
				}
			}(w)
		}
		close(start)
		// Two tailers join mid-stream, from a cursor read while writes race.
		for k := 0; k < 2; k++ {
			s, err := j.Session(ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			go tail(j, s.LastSeq/2, results)
		}
		wg.Wait()
		for k := 0; k < 4; k++ {
			select {
			case err := <-results:
				if err != nil {
					t.Fatal(err)
				}
			case <-ctx.Done():
				t.Fatal("tailers did not finish")
			}
		}
		if n := int64(len(readAll(t, j, "s1"))); n != total {
			t.Fatalf("%d events stored, want %d", n, total)
		}
	})
}

func TestTailEndsWithContextError(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		mustAppend(t, j, "s1", 0, 0, created("/p"))
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		var got []int64
		var last error
		for e, err := range j.Events(ctx, "s1", 0) {
			if err != nil {
				last = err
				break
			}
			got = append(got, e.Seq)
			cancel()
		}
		if len(got) != 1 || !errors.Is(last, context.Canceled) {
			t.Fatalf("got %v, err %v", got, last)
		}
	})
}

// A stored row that does not decode stops replay with an error naming the
// session, seq and type; nothing after it is delivered.
func TestBadRowsStopReplayWithSessionSeqAndType(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		mustAppend(t, j, "s1", 0, 0, created("/p"), messages.Idle{}, messages.Idle{}, messages.Idle{})
		if _, err := j.DB().ExecContext(ctx, `UPDATE events SET payload = ? WHERE session_id = ? AND seq = ?`, []byte{0xc1, 0xc1}, "s1", 2); err != nil {
			t.Fatal(err)
		}
		if _, err := j.DB().ExecContext(ctx, `UPDATE events SET type = ? WHERE session_id = ? AND seq = ?`, "session.bogus", "s1", 3); err != nil {
			t.Fatal(err)
		}
		// The rows were rewritten behind the writer's back, which the journal
		// never does: the writer's cache of its own commits still has them as
		// written. A second journal (another process) reads the database.
		j = openJournal(t, persistence.Config{DB: j.DB()})
		evs, err := j.ReadEvents(ctx, "s1", 0, 100)
		var de *persistence.DecodeError
		if !errors.As(err, &de) || de.SessionID != "s1" || de.Seq != 2 || de.Type.Name != "session.idle" || !errors.Is(err, messages.ErrUndecodable) {
			t.Fatalf("err = %v", err)
		}
		if !strings.Contains(err.Error(), "session s1 seq 2 type session.idle.v1") || len(evs) != 1 {
			t.Fatalf("err %q, %d events before it", err, len(evs))
		}
		_, err = j.ReadEvents(ctx, "s1", 2, 100)
		if !errors.As(err, &de) || de.Seq != 3 || de.Type.Name != "session.bogus" || !errors.Is(err, messages.ErrUnknownType) {
			t.Fatalf("err = %v", err)
		}
		var seen []int64
		var tailErr error
		for e, err := range j.Events(ctx, "s1", 0) {
			if err != nil {
				tailErr = err
				break
			}
			seen = append(seen, e.Seq)
		}
		if len(seen) != 1 || !errors.As(tailErr, &de) || de.Seq != 2 {
			t.Fatalf("tail saw %v then %v", seen, tailErr)
		}
		if _, err := j.Verify(ctx); !errors.As(err, &de) {
			t.Fatalf("verify err = %v", err)
		}
	})
}

// A tailer that falls behind by more than it may buffer re-reads the
// database and still sees every seq once, in order.
func TestSlowTailerThatOverflowsCatchesUpFromTheDatabase(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"))
		next, stop := iterPull(j.Events(ctx, "s1", 0))
		defer stop()
		if e, err := next(); err != nil || e.Seq != 1 {
			t.Fatalf("first = %v, %v", e.Seq, err)
		}
		batch := make([]messages.Event, 100)
		for i := range batch {
			batch[i] = messages.Idle{}
		}
		for range 50 { // 5,000 events committed while the tailer is not reading
			last = mustAppend(t, j, "s1", last, 0, batch...)
		}
		for want := int64(2); want <= last; want++ {
			e, err := next()
			if err != nil || e.Seq != want {
				t.Fatalf("got seq %d (%v), want %d", e.Seq, err, want)
			}
		}
	})
}

// iterPull adapts an event sequence to next/stop calls.
func iterPull(seq iter.Seq2[messages.Envelope, error]) (func() (messages.Envelope, error), func()) {
	next, stop := iter.Pull2(seq)
	return func() (messages.Envelope, error) {
		e, err, ok := next()
		if !ok {
			return messages.Envelope{}, errors.New("stream ended")
		}
		return e, err
	}, stop
}

// EventBatches hands over what is available at once: the replay as one
// page, then each commit's events together.
func TestEventBatchesGroupReplayAndCommits(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"), messages.Idle{}, messages.Idle{})
		next, stop := iter.Pull2(j.EventBatches(ctx, "s1", 1))
		defer stop()
		batchSeqs := func() []int64 {
			t.Helper()
			batch, err, ok := next()
			if err != nil || !ok {
				t.Fatalf("batch: %v, open %v", err, ok)
			}
			var seqs []int64
			for _, e := range batch {
				seqs = append(seqs, e.Seq)
			}
			return seqs
		}
		if got := batchSeqs(); fmt.Sprint(got) != "[2 3]" {
			t.Fatalf("replay batch %v, want [2 3]", got)
		}
		mustAppend(t, j, "s1", last, 0, messages.Idle{}, messages.Idle{}, messages.Idle{})
		if got := batchSeqs(); fmt.Sprint(got) != "[4 5 6]" {
			t.Fatalf("commit batch %v, want [4 5 6]", got)
		}
	})
}
