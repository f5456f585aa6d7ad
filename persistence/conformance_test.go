package persistence_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

var model = messages.ModelRef{Provider: "scripted", ID: "m1"}

func created(loc string) messages.SessionCreated {
	return messages.SessionCreated{Location: loc, Agent: "build", Model: model}
}

func mustAppend(t *testing.T, j *persistence.Journal, sid string, expected, epoch int64, evs ...messages.Event) int64 {
	t.Helper()
	last, err := j.Append(testCtx(t), sid, expected, epoch, evs...)
	if err != nil {
		t.Fatal(err)
	}
	if want := expected + int64(len(evs)); last != want {
		t.Fatalf("last seq %d, want %d", last, want)
	}
	return last
}

func readAll(t *testing.T, j *persistence.Journal, sid string) []messages.Envelope {
	t.Helper()
	evs, err := j.ReadEvents(testCtx(t), sid, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestAppendThenReplayReturnsEventsInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		want := []messages.Event{
			created("/p"),
			messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "hi"}, Delivery: messages.Steer},
			messages.PromptAdmitted{MessageID: "m2", Prompt: messages.Prompt{Text: "there"}, Delivery: messages.Queue},
		}
		last := mustAppend(t, j, "s1", 0, 0, want[0])
		mustAppend(t, j, "s1", last, 0, want[1:]...)
		got := readAll(t, j, "s1")
		if len(got) != 3 {
			t.Fatalf("%d events", len(got))
		}
		for i, e := range got {
			if e.Seq != int64(i+1) || e.SessionID != "s1" || !reflect.DeepEqual(e.Event, want[i]) || e.Type != want[i].EventType() || e.Time.IsZero() {
				t.Fatalf("event %d = %+v", i, e)
			}
		}
		// after is exclusive; limit bounds.
		tail, err := j.ReadEvents(testCtx(t), "s1", 1, 1)
		if err != nil || len(tail) != 1 || tail[0].Seq != 2 {
			t.Fatalf("ReadEvents(after 1, limit 1) = %v, %v", tail, err)
		}
		// Another session's stream is independent.
		mustAppend(t, j, "s2", 0, 0, created("/q"))
		if n := len(readAll(t, j, "s1")); n != 3 {
			t.Fatalf("s1 has %d events", n)
		}
	})
}

func TestStaleExpectedSeqIsConflictAndWritesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		last := mustAppend(t, j, "s1", 0, 0, created("/p"), messages.AgentSwitched{Agent: "a"})
		for _, stale := range []int64{0, 1, 5} {
			_, err := j.Append(testCtx(t), "s1", stale, 0, messages.AgentSwitched{Agent: "stale"})
			if !errors.Is(err, persistence.ErrConflict) {
				t.Fatalf("expected seq %d: err = %v", stale, err)
			}
		}
		got := readAll(t, j, "s1")
		if len(got) != 2 || got[1].Event.(messages.AgentSwitched).Agent != "a" {
			t.Fatalf("events %+v", got)
		}
		s, _ := j.Session(testCtx(t), "s1")
		if s.Agent != "a" || s.LastSeq != last {
			t.Fatalf("session %+v", s)
		}
	})
}

func TestSupersededEpochIsFencedAndWritesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		a, err := j.Acquire(ctx, "s1", "node-a")
		if err != nil || a.Epoch != 1 || a.LastSeq != 0 {
			t.Fatalf("acquire = %+v, %v", a, err)
		}
		last := mustAppend(t, j, "s1", 0, a.Epoch, created("/p"))
		b, err := j.Acquire(ctx, "s1", "node-b")
		if err != nil || b.Epoch != 2 || b.LastSeq != last {
			t.Fatalf("acquire = %+v, %v", b, err)
		}
		if _, err := j.Append(ctx, "s1", last, a.Epoch, messages.Idle{}); !errors.Is(err, persistence.ErrFenced) {
			t.Fatalf("old owner: err = %v", err)
		}
		if _, err := j.Append(ctx, "s1", last, 0, messages.Idle{}); !errors.Is(err, persistence.ErrFenced) {
			t.Fatalf("unowned writer: err = %v", err)
		}
		if n := len(readAll(t, j, "s1")); n != 1 {
			t.Fatalf("%d events after fenced appends", n)
		}
		mustAppend(t, j, "s1", last, b.Epoch, messages.Idle{})
		// An epoch that was never granted is fenced too, even on a new session.
		if _, err := j.Append(ctx, "new", 0, 7, created("/p")); !errors.Is(err, persistence.ErrFenced) {
			t.Fatalf("never-acquired epoch: err = %v", err)
		}
	})
}

func TestConcurrentAcquiresGiveDistinctIncreasingEpochs(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		var mu sync.Mutex
		seen := map[int64]bool{}
		var wg sync.WaitGroup
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				o, err := j.Acquire(ctx, "s1", fmt.Sprintf("n%d", i))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[o.Epoch] = true
				mu.Unlock()
			}(i)
		}
		wg.Wait()
		for e := int64(1); e <= 6; e++ {
			if !seen[e] {
				t.Fatalf("epochs %v: %d missing", seen, e)
			}
		}
	})
}

func TestCreateSessionIsIdempotentAndRacingCreatesMakeOne(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		s, made, err := j.CreateSession(ctx, "s1", 0, created("/p"))
		if err != nil || !made || s.Location != "/p" || s.Status != persistence.StatusIdle || s.LastSeq != 1 {
			t.Fatalf("create = %+v %v %v", s, made, err)
		}
		s, made, err = j.CreateSession(ctx, "s1", 0, created("/other"))
		if err != nil || made || s.Location != "/p" {
			t.Fatalf("re-create = %+v %v %v", s, made, err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		creators := 0
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, made, err := j.CreateSession(ctx, "race", 0, created("/r"))
				if err != nil {
					t.Error(err)
				}
				if made {
					mu.Lock()
					creators++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if creators != 1 || len(readAll(t, j, "race")) != 1 {
			t.Fatalf("%d creators", creators)
		}
		if _, err := j.Session(ctx, "nope"); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("missing session: %v", err)
		}
	})
}

func TestAdmitPromptIsIdempotentByMessageID(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		mustAppend(t, j, "s1", 0, 0, created("/p"))
		mustAppend(t, j, "s2", 0, 0, created("/p"))
		a := messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "hi", Attachments: []messages.Attachment{{Kind: "file", Name: "a"}}}, Delivery: messages.Steer}
		r1, err := j.AdmitPrompt(ctx, "s1", 1, 0, a, 0)
		if err != nil || r1.AdmittedSeq != 2 || r1.LastSeq != 2 || r1.Duplicate {
			t.Fatalf("admit = %+v, %v", r1, err)
		}
		// The receipt carries the admitted event's commit time, as a read shows it.
		if evs, err := j.ReadEvents(ctx, "s1", 1, 1); err != nil || len(evs) != 1 || !evs[0].Time.Equal(r1.Admitted) {
			t.Fatalf("receipt time %v, event %+v %v", r1.Admitted, evs, err)
		}
		mustAppend(t, j, "s1", 2, 0, messages.AgentSwitched{Agent: "x"})
		// Exact retry (even with a stale expected seq): same receipt, nothing written.
		r2, err := j.AdmitPrompt(ctx, "s1", 1, 0, a, 0)
		if err != nil || !r2.Duplicate || r2.AdmittedSeq != 2 || r2.LastSeq != 3 || !r2.Admitted.IsZero() {
			t.Fatalf("retry = %+v, %v", r2, err)
		}
		// At the current seq too (the append itself meets the reused ID).
		if r3, err := j.AdmitPrompt(ctx, "s1", 3, 0, a, 0); err != nil || r3 != r2 {
			t.Fatalf("retry at the head = %+v, %v; want %+v", r3, err, r2)
		}
		other := a
		other.Prompt.Text = "changed"
		queue := a
		queue.Delivery = messages.Queue
		for name, c := range map[string]struct {
			sid string
			a   messages.PromptAdmitted
		}{"content": {"s1", other}, "delivery": {"s1", queue}, "session": {"s2", a}} {
			if _, err := j.AdmitPrompt(ctx, c.sid, 3, 0, c.a, 0); !errors.Is(err, persistence.ErrPromptConflict) {
				t.Fatalf("%s: err = %v", name, err)
			}
		}
		if n := len(readAll(t, j, "s1")); n != 3 {
			t.Fatalf("s1 has %d events", n)
		}
		inbox, err := j.PendingInbox(ctx, "s1")
		if err != nil || len(inbox) != 1 || !reflect.DeepEqual(inbox[0].Prompt, a.Prompt) || inbox[0].AdmittedSeq != 2 {
			t.Fatalf("inbox = %+v, %v", inbox, err)
		}
		// Appending a duplicate PromptAdmitted directly is refused too.
		if _, err := j.Append(ctx, "s2", 1, 0, a); !errors.Is(err, persistence.ErrPromptConflict) {
			t.Fatalf("direct duplicate append: %v", err)
		}
	})
}

func TestBacklogLimitRefusesAdmissionAndKeepsAdmitted(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"))
		for i := 0; i < 3; i++ {
			r, err := j.AdmitPrompt(ctx, "s1", last, 0, messages.PromptAdmitted{MessageID: fmt.Sprint("m", i), Delivery: messages.Queue}, 3)
			if err != nil {
				t.Fatal(err)
			}
			last = r.LastSeq
		}
		_, err := j.AdmitPrompt(ctx, "s1", last, 0, messages.PromptAdmitted{MessageID: "m3", Delivery: messages.Queue}, 3)
		if !errors.Is(err, persistence.ErrBacklogFull) || !strings.Contains(err.Error(), "limit 3") {
			t.Fatalf("err = %v", err)
		}
		inbox, _ := j.PendingInbox(ctx, "s1")
		if len(inbox) != 3 {
			t.Fatalf("inbox has %d", len(inbox))
		}
		// A retry of an admitted prompt is not a new admission: it passes.
		if r, err := j.AdmitPrompt(ctx, "s1", last, 0, messages.PromptAdmitted{MessageID: "m0", Delivery: messages.Queue}, 3); err != nil || !r.Duplicate {
			t.Fatalf("retry at limit = %+v, %v", r, err)
		}
		// Promotion frees room.
		last = mustAppend(t, j, "s1", last, 0, messages.PromptPromoted{MessageIDs: []string{"m0"}})
		if _, err := j.AdmitPrompt(ctx, "s1", last, 0, messages.PromptAdmitted{MessageID: "m3", Delivery: messages.Queue}, 3); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFailingProjectionRollsBackTheEvents(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"))
		bad := [][]messages.Event{
			// the admission projects fine, then promoting an unknown prompt fails
			{messages.PromptAdmitted{MessageID: "m1", Delivery: messages.Steer}, messages.PromptPromoted{MessageIDs: []string{"ghost"}}},
			{messages.TurnStarted{AssistantMessageID: "a1"}, messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "never-called"}},
			{messages.ContextEpochInitialized{Revision: 1, Baseline: "b", Location: "/elsewhere"}},
			{messages.ContextUpdated{Text: "no epoch"}},
			{created("/p")},
		}
		for i, evs := range bad {
			_, err := j.Append(ctx, "s1", last, 0, evs...)
			if !errors.Is(err, persistence.ErrProjection) {
				t.Fatalf("batch %d: err = %v", i, err)
			}
		}
		if n := len(readAll(t, j, "s1")); n != 1 {
			t.Fatalf("%d events after refused batches", n)
		}
		if inbox, _ := j.PendingInbox(ctx, "s1"); len(inbox) != 0 {
			t.Fatalf("inbox kept a rolled-back admission: %+v", inbox)
		}
		if h, _ := j.ModelHistory(ctx, "s1"); len(h) != 0 {
			t.Fatalf("history kept a rolled-back message: %+v", h)
		}
		// m1 was rolled back, so it can be admitted now.
		if _, err := j.AdmitPrompt(ctx, "s1", last, 0, messages.PromptAdmitted{MessageID: "m1", Delivery: messages.Steer}, 0); err != nil {
			t.Fatal(err)
		}
		// A first event that is not SessionCreated is refused.
		if _, err := j.Append(ctx, "s9", 0, 0, messages.Idle{}); !errors.Is(err, persistence.ErrProjection) {
			t.Fatalf("headless stream: %v", err)
		}
	})
}
