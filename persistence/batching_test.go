package persistence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// The status write is skipped when this journal knows the stored status
// (statusCache); a second journal on the same database appending in between
// must not leave the first one believing a stale status.
func TestStatusIsRightWhenAnotherJournalAppendsInBetween(t *testing.T) {
	eachBackend(t, func(t *testing.T, a *persistence.Journal) {
		ctx := testCtx(t)
		b := openJournal(t, persistence.Config{DB: a.DB()})
		status := func(want persistence.Status) {
			t.Helper()
			s, err := a.Session(ctx, "s1")
			if err != nil || s.Status != want {
				t.Fatalf("status %q (%v), want %q", s.Status, err, want)
			}
		}
		last := mustAppend(t, a, "s1", 0, 0, created("/p"), messages.TurnStarted{AssistantMessageID: "a1"})
		status(persistence.StatusBusy)
		last = mustAppend(t, b, "s1", last, 0, messages.Idle{})
		status(persistence.StatusIdle)
		last = mustAppend(t, a, "s1", last, 0, messages.TurnStarted{AssistantMessageID: "a2"})
		status(persistence.StatusBusy)
		last = mustAppend(t, a, "s1", last, 0, messages.TurnStarted{AssistantMessageID: "a3"}) // busy stays busy
		status(persistence.StatusBusy)
		last = mustAppend(t, a, "s1", last, 0, messages.Interrupted{}, messages.TurnStarted{AssistantMessageID: "a4"})
		status(persistence.StatusBusy)
		mustAppend(t, b, "s1", last, 0, messages.Idle{})
		status(persistence.StatusIdle)
		// A failed append leaves nothing cached that could skip a write.
		if _, err := a.Append(ctx, "s1", last, 0, messages.TurnStarted{AssistantMessageID: "a5"}); !errors.Is(err, persistence.ErrConflict) {
			t.Fatalf("stale append: %v", err)
		}
		mustAppend(t, a, "s1", last+1, 0, messages.TurnStarted{AssistantMessageID: "a5"})
		status(persistence.StatusBusy)
		if rep, err := a.Verify(ctx); err != nil || !rep.Clean() {
			t.Fatalf("verify: %v %v", err, rep.Differences)
		}
	})
}

// Batches larger than one multi-row statement are split; every row lands.
func TestAppendLargerThanOneStatementWritesEveryRow(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		evs := []messages.Event{created("/p")}
		var ids []string
		for i := range 70 {
			id := fmt.Sprintf("u%02d", i)
			ids = append(ids, id)
			evs = append(evs, messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: id}, Delivery: messages.Queue})
		}
		evs = append(evs, messages.PromptPromoted{MessageIDs: ids}, messages.TurnStarted{AssistantMessageID: "a1"})
		for i := range 40 {
			evs = append(evs, messages.ToolCalled{AssistantMessageID: "a1", CallID: fmt.Sprintf("c%02d", i), Tool: "bash"})
		}
		last := mustAppend(t, j, "s1", 0, 0, evs...)
		if n := len(readAll(t, j, "s1")); int64(n) != last {
			t.Fatalf("%d events stored, head %d", n, last)
		}
		h, err := j.ModelHistory(ctx, "s1")
		if err != nil || len(h) != 71 || h[69].ID != "u69" || h[70].ID != "a1" || len(h[70].Parts) != 40 {
			t.Fatalf("history: %d messages, %v", len(h), err)
		}
		calls, err := j.ToolCalls(ctx, "s1", messages.ToolStateRunning)
		if err != nil || len(calls) != 40 {
			t.Fatalf("%d running calls, %v", len(calls), err)
		}
		// Settle them all in one append: 40 changed calls, one changed message.
		var done []messages.Event
		for i := range 40 {
			done = append(done, messages.ToolSucceeded{AssistantMessageID: "a1", CallID: fmt.Sprintf("c%02d", i), Output: "ok"})
		}
		mustAppend(t, j, "s1", last, 0, done...)
		if calls, _ := j.ToolCalls(ctx, "s1", messages.ToolStateCompleted); len(calls) != 40 {
			t.Fatalf("%d completed calls", len(calls))
		}
		if rep, err := j.Verify(ctx); err != nil || !rep.Clean() {
			t.Fatalf("verify: %v %v", err, rep.Differences)
		}
	})
}

// Several messages and calls changed by one append take the multi-row
// upsert path; one of each the single UPDATE path.
func TestChangedMessagesAndCallsInOneAppend(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"),
			messages.TurnStarted{AssistantMessageID: "a1"},
			messages.ToolCalled{AssistantMessageID: "a1", CallID: "c1", Tool: "bash"},
			messages.ToolCalled{AssistantMessageID: "a1", CallID: "c2", Tool: "read"},
			messages.TurnEnded{AssistantMessageID: "a1", FinishReason: "tool-calls"},
			messages.TurnStarted{AssistantMessageID: "a2"})
		// Two changed messages (a1's tool parts, a2's text), two changed calls,
		// and a new message in the same append.
		last = mustAppend(t, j, "s1", last, 0,
			messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c1", Output: "one"},
			messages.ToolFailed{AssistantMessageID: "a1", CallID: "c2", Error: "no"},
			messages.TextEnded{AssistantMessageID: "a2", Text: "hello"},
			messages.TurnStarted{AssistantMessageID: "a3"})
		// One changed message, one changed call.
		last = mustAppend(t, j, "s1", last, 0,
			messages.ToolCalled{AssistantMessageID: "a3", CallID: "c3", Tool: "bash"})
		mustAppend(t, j, "s1", last, 0,
			messages.ToolSucceeded{AssistantMessageID: "a3", CallID: "c3", Output: "three"})
		h, err := j.ModelHistory(ctx, "s1")
		if err != nil || roles(h) != "AAA" {
			t.Fatalf("history %s, %v", roles(h), err)
		}
		if p := h[0].Parts; len(p) != 2 || p[0].Tool.Output != "one" || p[1].Tool.State != messages.ToolStateFailed {
			t.Fatalf("a1 parts %+v", p)
		}
		if p := h[1].Parts; len(p) != 1 || p[0].Text != "hello" {
			t.Fatalf("a2 parts %+v", p)
		}
		if p := h[2].Parts; len(p) != 1 || p[0].Tool.Output != "three" || p[0].Tool.State != messages.ToolStateCompleted {
			t.Fatalf("a3 parts %+v", p)
		}
		calls, _ := j.ToolCalls(ctx, "s1")
		states := ""
		for _, c := range calls {
			states += fmt.Sprintf("%s/%s=%s@%d,%d ", c.AssistantMessageID, c.CallID, c.State, c.Seq, c.UpdatedSeq)
		}
		if states != "a1/c1=completed@3,7 a1/c2=failed@4,8 a3/c3=completed@11,12 " {
			t.Fatalf("calls %s", states)
		}
		if rep, err := j.Verify(ctx); err != nil || !rep.Clean() {
			t.Fatalf("verify: %v %v", err, rep.Differences)
		}
	})
}

// A message ID stored by an earlier append is refused by the unique key
// (not by a read), naming the message; nothing of the append is written.
func TestMessageIDFromAnEarlierAppendIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"), messages.TurnStarted{AssistantMessageID: "a1"})
		_, err := j.Append(ctx, "s1", last, 0, messages.TurnStarted{AssistantMessageID: "a0"}, messages.TurnStarted{AssistantMessageID: "a1"})
		if !errors.Is(err, persistence.ErrProjection) || !strings.Contains(err.Error(), "message a1 already exists") {
			t.Fatalf("err = %v", err)
		}
		if n := len(readAll(t, j, "s1")); int64(n) != last {
			t.Fatalf("%d events after a refused append", n)
		}
		// The same ID in another session is another message.
		mustAppend(t, j, "s2", 0, 0, created("/p"), messages.TurnStarted{AssistantMessageID: "a1"})
		if h, _ := j.ModelHistory(ctx, "s1"); len(h) != 1 {
			t.Fatalf("s1 history %+v", h)
		}
	})
}

// A journal that keeps an assistant message and its calls between its own
// appends (sessionCache) must read them again when another journal changed
// them in between, and must know a call's absence only for a message it
// created.
func TestCachedTurnIsReadAgainAfterAnotherJournalAppends(t *testing.T) {
	eachBackend(t, func(t *testing.T, a *persistence.Journal) {
		ctx := testCtx(t)
		b := openJournal(t, persistence.Config{DB: a.DB()})
		last := mustAppend(t, a, "s1", 0, 0, created("/p"), messages.TurnStarted{AssistantMessageID: "a1"})
		last = mustAppend(t, a, "s1", last, 0, messages.ToolCalled{AssistantMessageID: "a1", CallID: "c1", Tool: "bash"})
		// Known absent from a's own creation: a new call; known present: refused.
		last = mustAppend(t, a, "s1", last, 0, messages.ToolCalled{AssistantMessageID: "a1", CallID: "c2", Tool: "read"})
		if _, err := a.Append(ctx, "s1", last, 0, messages.ToolCalled{AssistantMessageID: "a1", CallID: "c1", Tool: "bash"}); !errors.Is(err, persistence.ErrProjection) {
			t.Fatalf("second ToolCalled c1: %v", err)
		}
		if _, err := a.Append(ctx, "s1", last, 0, messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c9"}); !errors.Is(err, persistence.ErrProjection) {
			t.Fatalf("ToolSucceeded of a call never made: %v", err)
		}
		// b settles c1 and adds text behind a's back.
		last = mustAppend(t, b, "s1", last, 0,
			messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c1", Output: "from b"},
			messages.TextEnded{AssistantMessageID: "a1", Text: "b's text"})
		// a continues from the new head: it must see b's changes.
		if _, err := a.Append(ctx, "s1", last, 0, messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c1"}); !errors.Is(err, persistence.ErrProjection) {
			t.Fatalf("c1 settled twice: %v", err)
		}
		last = mustAppend(t, a, "s1", last, 0, messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c2", Output: "from a"})
		last = mustAppend(t, a, "s1", last, 0, messages.ToolCalled{AssistantMessageID: "a1", CallID: "c3", Tool: "bash"},
			messages.TurnEnded{AssistantMessageID: "a1"})
		h, err := a.ModelHistory(ctx, "s1")
		if err != nil || len(h) != 1 {
			t.Fatalf("history %+v, %v", h, err)
		}
		got := ""
		for _, p := range h[0].Parts {
			if p.Tool != nil {
				got += fmt.Sprintf("%s:%s:%s ", p.Tool.CallID, p.Tool.State, p.Tool.Output)
			} else {
				got += p.Text + " "
			}
		}
		if want := "c1:completed:from b c2:completed:from a b's text c3:running: "; got != want || !h[0].Finished {
			t.Fatalf("parts %q, want %q (finished %v)", got, want, h[0].Finished)
		}
		if rep, err := a.Verify(ctx); err != nil || !rep.Clean() {
			t.Fatalf("verify: %v %v", err, rep.Differences)
		}
	})
}
