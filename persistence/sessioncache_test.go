package persistence_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// Journal a keeps the rows its appends wrote (sessions row, epoch
// revision, pending prompts); b, on the same database, stands for another
// cluster member. Whatever b writes, a's reads and projection checks must
// see it, and what a serves from memory must equal what the database holds.
func TestCachedRowsFollowAnotherJournalsWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, a *persistence.Journal) {
		ctx := testCtx(t)
		b := openJournal(t, persistence.Config{DB: a.DB()})
		s, made, err := a.CreateSession(ctx, "s", 0, created("/p"))
		if err != nil || !made {
			t.Fatal(made, err)
		}
		want := persistence.Session{ID: "s", Location: "/p", Agent: "build", Model: model, Status: persistence.StatusIdle, CreatedSeq: 1, LastSeq: 1}
		if s != want {
			t.Fatalf("created %+v, want %+v", s, want)
		}
		sameSession := func(want persistence.Session) {
			t.Helper()
			for name, j := range map[string]*persistence.Journal{"a": a, "b": b} {
				if got, err := j.Session(ctx, "s"); err != nil || got != want {
					t.Fatalf("%s: session %+v, %v; want %+v", name, got, err, want)
				}
			}
		}
		sameSession(want)

		// b moves the session: a's cached row is stale, and so is its location.
		last := mustAppend(t, b, "s", 1, 0, messages.AgentSwitched{Agent: "plan"}, messages.Moved{From: "/p", To: "/q"})
		want.Agent, want.Location, want.LastSeq = "plan", "/q", last
		sameSession(want)
		if _, err := a.Append(ctx, "s", last, 0, messages.ContextEpochInitialized{Revision: 1, Location: "/p"}); !errors.Is(err, persistence.ErrProjection) {
			t.Fatalf("epoch for the old location: %v", err)
		}
		last = mustAppend(t, a, "s", last, 0, messages.ContextEpochInitialized{Revision: 1, Location: "/q"})
		// From a's memory now: the epoch exists, the location is /q.
		if _, err := a.Append(ctx, "s", last, 0, messages.ContextEpochInitialized{Revision: 2, Location: "/q"}); !errors.Is(err, persistence.ErrProjection) {
			t.Fatalf("second epoch: %v", err)
		}
		if _, err := a.Append(ctx, "s", last, 0, messages.ContextEpochReplaced{Revision: 1, Location: "/q"}); !errors.Is(err, persistence.ErrProjection) {
			t.Fatalf("replacement at the same revision: %v", err)
		}
		last = mustAppend(t, a, "s", last, 0, messages.ContextEpochReplaced{Revision: 3, Location: "/q"})
		// b clears it: a must not trust its own last write.
		last = mustAppend(t, b, "s", last, 0, messages.ContextEpochCleared{})
		last = mustAppend(t, a, "s", last, 0, messages.ContextEpochInitialized{Revision: 4, Location: "/q"})
		if ep, ok, err := a.Epoch(ctx, "s"); err != nil || !ok || ep.Revision != 4 {
			t.Fatalf("epoch %+v %v %v", ep, ok, err)
		}

		// Prompts: p1 admitted by a, promoted by b; a must refuse promoting it again.
		admit := func(j *persistence.Journal, id string) {
			t.Helper()
			r, err := j.AdmitPrompt(ctx, "s", last, 0, messages.PromptAdmitted{MessageID: id, Delivery: messages.Steer, Prompt: messages.Prompt{Text: "hi " + id}}, 0)
			if err != nil {
				t.Fatal(err)
			}
			last = r.LastSeq
		}
		admit(a, "p1")
		last = mustAppend(t, b, "s", last, 0, messages.PromptPromoted{MessageIDs: []string{"p1"}})
		if _, err := a.Append(ctx, "s", last, 0, messages.PromptPromoted{MessageIDs: []string{"p1"}}); !errors.Is(err, persistence.ErrProjection) {
			t.Fatalf("promoting p1 twice: %v", err)
		}
		// p2 and p3 admitted and promoted by a alone (from memory), then again.
		admit(a, "p2")
		admit(a, "p3")
		last = mustAppend(t, a, "s", last, 0, messages.PromptPromoted{MessageIDs: []string{"p3", "p2"}})
		if _, err := a.Append(ctx, "s", last, 0, messages.PromptPromoted{MessageIDs: []string{"p2"}}); !errors.Is(err, persistence.ErrProjection) {
			t.Fatalf("promoting p2 twice: %v", err)
		}
		if in, err := a.PendingInbox(ctx, "s"); err != nil || len(in) != 0 {
			t.Fatalf("inbox %+v %v", in, err)
		}
		page, err := b.Messages(ctx, "s", persistence.Cursor{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range page.Messages {
			if m.Role == messages.RoleUser {
				got = append(got, m.ID+"@"+string(m.Delivery)+":"+m.Prompt.Text)
			}
		}
		if w := []string{"p1@steer:hi p1", "p3@steer:hi p3", "p2@steer:hi p2"}; len(got) != 3 || got[0] != w[0] || got[1] != w[1] || got[2] != w[2] {
			t.Fatalf("user messages %q, want %q", got, w)
		}
		// The history bounds (history seq, epoch baseline) a serves from
		// memory match a journal that reads them all.
		c := openJournal(t, persistence.Config{DB: a.DB()})
		sameHistory := func(sid, what string, n int) {
			t.Helper()
			got, err := a.ModelHistory(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.ModelHistory(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || len(got) != n {
				t.Fatalf("%s: history (want %d)\n got %+v\nwant %+v", what, n, got, want)
			}
		}
		sameHistory("s", "after promotions", 3)
		// Session h: a's appends keep its bounds in memory; b clears the epoch.
		if _, _, err := a.CreateSession(ctx, "h", 0, created("/p")); err != nil {
			t.Fatal(err)
		}
		h := mustAppend(t, a, "h", 1, 0, messages.ContextEpochInitialized{Revision: 1, Location: "/p"})
		sameHistory("h", "epoch", 0)
		h = mustAppend(t, a, "h", h, 0, messages.ContextUpdated{MessageID: "c1", Text: "t"})
		sameHistory("h", "context update", 1)
		h = mustAppend(t, a, "h", h, 0, messages.ContextEpochReplaced{Revision: 10, Location: "/p"})
		sameHistory("h", "new baseline hides c1", 0)
		h = mustAppend(t, a, "h", h, 0, messages.ContextUpdated{MessageID: "c2", Text: "u"})
		sameHistory("h", "an update keeps the baseline", 1)
		h = mustAppend(t, b, "h", h, 0, messages.ContextEpochCleared{})
		sameHistory("h", "no epoch shows c1 and c2", 2)
		h = mustAppend(t, a, "h", h, 0, messages.ContextEpochInitialized{Revision: 11, Location: "/p"})
		sameHistory("h", "epoch again hides c1", 0)
		h = mustAppend(t, a, "h", h, 0, messages.CompactionStarted{CompactionID: "k"}, messages.CompactionEnded{CompactionID: "k", Summary: "sum"})
		sameHistory("h", "compacted", 1)
		if s, err := a.Session(ctx, "h"); err != nil || s.HistorySeq != h || s.LastSeq != h {
			t.Fatalf("session h after compaction %+v %v", s, err)
		}
		rep, err := a.Verify(ctx)
		if err != nil || !rep.Clean() {
			t.Fatalf("verify %+v %v", rep, err)
		}
	})
}

// AcquireSession returns the row as the new owner finds it, and a later
// write by another journal is still seen.
func TestAcquireSessionReadsTheRowInItsTransaction(t *testing.T) {
	eachBackend(t, func(t *testing.T, a *persistence.Journal) {
		ctx := testCtx(t)
		for want := int64(1); want <= 2; want++ {
			own, s, found, err := a.AcquireSession(ctx, "new", "n1")
			if err != nil || found || own != (persistence.Ownership{Epoch: want}) || s != (persistence.Session{}) {
				t.Fatalf("acquire %d: %+v %+v %v %v", want, own, s, found, err)
			}
		}
		if _, _, err := a.CreateSession(ctx, "s", 0, created("/p")); err != nil {
			t.Fatal(err)
		}
		last := mustAppend(t, a, "s", 1, 0, messages.AgentSwitched{Agent: "plan"})
		b := openJournal(t, persistence.Config{DB: a.DB()})
		own, s, found, err := b.AcquireSession(ctx, "s", "n2")
		want := persistence.Session{ID: "s", Location: "/p", Agent: "plan", Model: model, Status: persistence.StatusIdle, CreatedSeq: 1, LastSeq: last}
		if err != nil || !found || s != want || own != (persistence.Ownership{Epoch: 1, LastSeq: last}) {
			t.Fatalf("acquire: %+v %+v %v %v", own, s, found, err)
		}
		if got, err := b.Session(ctx, "s"); err != nil || got != want {
			t.Fatalf("session %+v %v", got, err)
		}
		if _, err := a.Append(ctx, "s", last, 0, messages.Idle{}); !errors.Is(err, persistence.ErrFenced) {
			t.Fatalf("old epoch: %v", err)
		}
		// a acquires it back and moves it: b's learned row is stale.
		ownA, _, _, err := a.AcquireSession(ctx, "s", "n1")
		if err != nil {
			t.Fatal(err)
		}
		last = mustAppend(t, a, "s", last, ownA.Epoch, messages.Moved{From: "/p", To: "/q"})
		want.Location, want.LastSeq = "/q", last
		if got, err := b.Session(ctx, "s"); err != nil || got != want {
			t.Fatalf("session after a's move %+v %v", got, err)
		}
		if _, err := b.Append(ctx, "s", last, own.Epoch, messages.Idle{}); !errors.Is(err, persistence.ErrFenced) {
			t.Fatalf("b's old epoch: %v", err)
		}
	})
}
