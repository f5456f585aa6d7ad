package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

func TestS58_EventsReplayThenTailWithoutGapOrDuplicateWhileCommitsRace(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "before the tail")
	const after = int64(2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type got struct {
		seq int64
		err error
	}
	events := make(chan got, 1024)
	tailCtx, stopTail := context.WithCancel(ctx)
	defer stopTail()
	go func() {
		defer close(events)
		for env, err := range h.journal.Events(tailCtx, id, after) {
			events <- got{env.Seq, err}
			if err != nil {
				return
			}
		}
	}()
	// Commits race the hand-over from replay to tail.
	for i := 0; i < 6; i++ {
		h.prompt(id, "", fmt.Sprintf("racing %d", i), "", true)
	}
	h.waitIdle(id)
	final, err := h.journal.Session(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	last := after
	for last < final.LastSeq {
		select {
		case g, ok := <-events:
			if !ok || g.err != nil {
				t.Fatalf("tail ended at %d: %v", last, g.err)
			}
			if g.seq != last+1 {
				t.Fatalf("event seq %d after %d: a gap or a duplicate", g.seq, last)
			}
			last = g.seq
		case <-ctx.Done():
			t.Fatalf("tail stuck at %d, the stream ends at %d", last, final.LastSeq)
		}
	}
	stopTail()
	for g := range events {
		if g.err == nil && g.seq <= last {
			t.Fatalf("duplicate seq %d after the end", g.seq)
		}
	}
	h.checkReplay()
}

func TestS59_HistoryPagingIsExclusiveAndExact(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	for i := 0; i < 5; i++ {
		h.ask(id, fmt.Sprintf("q%d", i))
	}
	all, err := h.journal.ModelHistory(h.ctx(), id)
	if err != nil {
		t.Fatal(err)
	}
	var paged []messages.Message
	cursor := persistence.Cursor{}
	for {
		page, err := h.journal.Messages(h.ctx(), id, cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page.Messages...)
		more := len(paged) < len(all)
		if page.More != more {
			t.Fatalf("page after %+v says more=%v with %d of %d read", cursor, page.More, len(paged), len(all))
		}
		if !page.More {
			break
		}
		cursor = page.Next
	}
	if len(paged) != len(all) {
		t.Fatalf("paging read %d messages, history has %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i].ID != all[i].ID {
			t.Fatalf("message %d: paged %s, history %s (skipped or repeated)", i, paged[i].ID, all[i].ID)
		}
	}
	h.checkReplay()
}
