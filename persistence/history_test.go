package persistence_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
)

// A History kept current from AppendProjected results equals ModelHistory
// after every append of a randomized workload (every event type, epochs,
// compactions, moves), and so does a fresh LoadHistory.
func TestHistoryAppliedFromAppendsEqualsModelHistory(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		w := journaltest.New(11, 4, "h")
		hs := map[string]*persistence.History{}
		for n := 0; n < 600; n++ {
			sid, expected, batch := w.Next()
			r, err := j.AppendProjected(ctx, sid, expected, 0, batch...)
			if err != nil {
				t.Fatalf("batch %d: %v", n, err)
			}
			w.Done(sid, r.LastSeq)
			if r.FirstSeq != expected+1 || r.LastSeq != expected+int64(len(batch)) {
				t.Fatalf("result seqs %d..%d after %d (%d events)", r.FirstSeq, r.LastSeq, expected, len(batch))
			}
			h := hs[sid]
			if h == nil {
				if h, err = j.LoadHistory(ctx, sid); err != nil {
					t.Fatal(err)
				}
				hs[sid] = h
			} else if err := h.Apply(batch, r); err != nil {
				t.Fatal(err)
			}
			want, err := j.ModelHistory(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Model(); !sameHistory(got, want) {
				t.Fatalf("batch %d on %s %v: kept history\n%+v\nModelHistory\n%+v", n, sid, batch, got, want)
			}
			if n%50 == 0 {
				fresh, err := j.LoadHistory(ctx, sid)
				if err != nil || fresh.Head() != r.LastSeq || !sameHistory(fresh.Model(), want) {
					t.Fatalf("LoadHistory at batch %d: head %d, %v", n, fresh.Head(), err)
				}
			}
		}
	})
}

func TestHistoryRefusesAnAppendThatDoesNotContinueIt(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		if _, err := j.LoadHistory(ctx, "nope"); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("missing session: %v", err)
		}
		last := mustAppend(t, j, "s1", 0, 0, created("/p"))
		h, err := j.LoadHistory(ctx, "s1")
		if err != nil || h.Head() != last || len(h.Model()) != 0 {
			t.Fatalf("load: %v", err)
		}
		evs := []messages.Event{messages.TurnStarted{AssistantMessageID: "a1"}}
		r1, err := j.AppendProjected(ctx, "s1", last, 0, evs...)
		if err != nil || len(r1.Messages) != 1 || r1.Messages[0].ID != "a1" || r1.Messages[0].Seq != 2 {
			t.Fatalf("result %+v, %v", r1, err)
		}
		r2, err := j.AppendProjected(ctx, "s1", r1.LastSeq, 0, messages.TextEnded{AssistantMessageID: "a1", Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Apply(evs, r2); err == nil {
			t.Fatal("a gap was applied")
		}
		if h.Head() != last {
			t.Fatalf("head moved to %d", h.Head())
		}
	})
}

// sameHistory is DeepEqual with an empty history equal to a nil one.
func sameHistory(a, b []persistence.Message) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// Admissions move the head without writing a message: applied through their
// receipt (a duplicate's changes nothing), the copy stays equal.
func TestHistoryFollowsAdmissionsBetweenAppends(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"))
		h, err := j.LoadHistory(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		admit := func(id string) {
			t.Helper()
			a := messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: id}, Delivery: messages.Queue}
			rec, err := j.AdmitPrompt(ctx, "s1", h.Head(), 0, a, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Apply([]messages.Event{a}, rec.Result()); err != nil {
				t.Fatal(err)
			}
		}
		admit("u1")
		admit("u1") // duplicate: nothing written, nothing applied
		admit("u2")
		evs := []messages.Event{messages.PromptPromoted{MessageIDs: []string{"u1", "u2"}}, messages.TurnStarted{AssistantMessageID: "a1"}}
		r, err := j.AppendProjected(ctx, "s1", h.Head(), 0, evs...)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Apply(evs, r); err != nil {
			t.Fatal(err)
		}
		want, _ := j.ModelHistory(ctx, "s1")
		if got := h.Model(); !sameHistory(got, want) || roles(got) != "UUA" || h.Head() != last+4 {
			t.Fatalf("kept %s at %d, ModelHistory %s", roles(got), h.Head(), roles(want))
		}
	})
}
