package persistence_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// pagingHistory writes session sid with n prompts promoted one per event
// (message i at seq 2+n+i) and returns the last seq.
func pagingHistory(tb testing.TB, j *persistence.Journal, sid string, n int) int64 {
	tb.Helper()
	ctx := context.Background()
	evs := []messages.Event{created("/p")}
	for i := 0; i < n; i++ {
		evs = append(evs, messages.PromptAdmitted{MessageID: fmt.Sprintf("%s-m%03d", sid, i), Prompt: messages.Prompt{Text: "some prompt text"}, Delivery: messages.Queue})
	}
	for i := 0; i < n; i++ {
		evs = append(evs, messages.PromptPromoted{MessageIDs: []string{fmt.Sprintf("%s-m%03d", sid, i)}})
	}
	last, err := j.Append(ctx, sid, 0, 0, evs...)
	if err != nil {
		tb.Fatal(err)
	}
	return last
}

// BenchmarkMessages pages a 200-message history on the embedded engine the
// way the API does: the first message (a session's default title), a
// 100-message page, and the whole history by pages of 1000; without a
// revert and with a committed one hiding the second half.
func BenchmarkMessages(b *testing.B) {
	e, err := boltsql.Open(b.TempDir(), boltsql.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	j, err := persistence.Open(ctx, persistence.Config{DB: e.DB()})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	const n = 200
	pagingHistory(b, j, "plain", n)
	last := pagingHistory(b, j, "reverted", n)
	half := last - n/2 + 1 // message n/2
	if _, err := j.Append(ctx, "reverted", last, 0,
		messages.RevertStaged{MessageID: "reverted-m100", BoundarySeq: half},
		messages.RevertCommitted{MessageID: "reverted-m100"}); err != nil {
		b.Fatal(err)
	}
	for _, sid := range []string{"plain", "reverted"} {
		for _, c := range []struct {
			name  string
			limit int
		}{{"first", 1}, {"page100", 100}, {"all", 1000}} {
			b.Run(sid+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					var cur persistence.Cursor
					for {
						p, err := j.Messages(ctx, sid, cur, c.limit)
						if err != nil {
							b.Fatal(err)
						}
						if c.name != "all" || !p.More {
							break
						}
						cur = p.Next
					}
				}
			})
		}
	}
}

// TestHistoryPagingOverRevertsIsExact (scenario 59): whatever the reverts
// hide (a committed revert's tail from a boundary at the start of a seq or
// inside one, a staged revert that hides nothing, finalized ranges with
// visible messages after them, overlapping ranges, both at once), paging
// from any cursor (a hidden message's too) at every page size returns each
// visible message after it once, in order, More is true exactly when a
// visible message follows the page, and an empty page keeps the cursor.
// The last step garbles every hidden message's body: paging never decodes
// one.
func TestHistoryPagingOverRevertsIsExact(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		const sid = "s1"
		var ids []string
		admit := func(last int64, n int) int64 {
			var evs []messages.Event
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("m%d", len(ids))
				ids = append(ids, id)
				evs = append(evs, messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: id}, Delivery: messages.Queue})
			}
			return mustAppend(t, j, sid, last, 0, evs...)
		}
		promote := func(last int64, ms ...string) int64 {
			return mustAppend(t, j, sid, last, 0, messages.PromptPromoted{MessageIDs: ms})
		}
		pos := func(id string) persistence.Cursor {
			seq, idx, _, err := j.MessagePosition(ctx, sid, id)
			if err != nil {
				t.Fatal(err)
			}
			return persistence.Cursor{Seq: seq, Index: idx}
		}
		stage := func(last int64, id string) int64 {
			p := pos(id)
			return mustAppend(t, j, sid, last, 0, messages.RevertStaged{MessageID: id, BoundarySeq: p.Seq, BoundaryIndex: p.Index})
		}
		commit := func(last int64, id string) int64 {
			return mustAppend(t, j, sid, last, 0, messages.RevertCommitted{MessageID: id})
		}
		promoted := map[string]bool{}
		check := func(step string, visible ...string) {
			t.Helper()
			var cursors []persistence.Cursor
			cursors = append(cursors, persistence.Cursor{})
			for _, id := range ids {
				if promoted[id] {
					cursors = append(cursors, pos(id))
				}
			}
			for _, from := range cursors {
				// The visible messages after from, by their positions.
				var want []string
				for _, id := range visible {
					if p := pos(id); p.Seq > from.Seq || (p.Seq == from.Seq && p.Index > from.Index) {
						want = append(want, id)
					}
				}
				for size := 1; size <= len(visible)+1; size++ {
					var got []string
					cur := from
					for pages := 1; ; pages++ {
						p, err := j.Messages(ctx, sid, cur, size)
						if err != nil {
							t.Fatalf("%s: after %v size %d: %v", step, from, size, err)
						}
						for _, m := range p.Messages {
							got = append(got, m.ID)
						}
						if wantMore := len(got) < len(want); p.More != wantMore || (len(p.Messages) == 0 && p.Next != cur) ||
							(len(p.Messages) != min(size, len(want)-len(got)+len(p.Messages))) {
							t.Fatalf("%s: after %v size %d page %d: %d messages, next %v, more %v; %d of %d read",
								step, from, size, pages, len(p.Messages), p.Next, p.More, len(got), len(want))
						}
						if !p.More {
							break
						}
						cur = p.Next
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: after %v size %d: paged %v, want %v", step, from, size, got, want)
					}
				}
			}
		}
		last := mustAppend(t, j, sid, 0, 0, created("/p"))
		last = admit(last, 7)
		for _, g := range [][]string{{"m0"}, {"m1", "m2", "m3"}, {"m4"}, {"m5", "m6"}} {
			last = promote(last, g...)
			for _, id := range g {
				promoted[id] = true
			}
		}
		check("no revert", "m0", "m1", "m2", "m3", "m4", "m5", "m6")

		last = stage(last, "m2")
		check("staged inside a seq", "m0", "m1", "m2", "m3", "m4", "m5", "m6")
		last = commit(last, "m2")
		check("committed inside a seq", "m0", "m1")
		last = mustAppend(t, j, sid, last, 0, messages.RevertCleared{})
		last = stage(last, "m4")
		last = commit(last, "m4")
		check("committed at a seq's start", "m0", "m1", "m2", "m3")
		last = mustAppend(t, j, sid, last, 0, messages.RevertCleared{})
		last = stage(last, "m5")
		last = commit(last, "m5")
		check("committed before the last seq", "m0", "m1", "m2", "m3", "m4")

		// Finalized: m5 and m6 are gone for good, later messages show.
		last = mustAppend(t, j, sid, last, 0, messages.RevertFinalized{})
		last = admit(last, 3)
		last = promote(last, "m7")
		last = promote(last, "m8", "m9")
		for _, id := range []string{"m7", "m8", "m9"} {
			promoted[id] = true
		}
		check("finalized", "m0", "m1", "m2", "m3", "m4", "m7", "m8", "m9")
		last = stage(last, "m8")
		last = commit(last, "m8")
		check("finalized and committed", "m0", "m1", "m2", "m3", "m4", "m7")

		// A revert reaching back before the finalized range: the two
		// ranges overlap.
		last = mustAppend(t, j, sid, last, 0, messages.RevertCleared{})
		last = stage(last, "m3")
		last = commit(last, "m3")
		check("committed before a finalized range", "m0", "m1", "m2")
		last = mustAppend(t, j, sid, last, 0, messages.RevertFinalized{})
		last = admit(last, 2)
		last = promote(last, "m10", "m11")
		promoted["m10"], promoted["m11"] = true, true
		check("overlapping finalized ranges", "m0", "m1", "m2", "m10", "m11")
		last = stage(last, "m11")
		last = commit(last, "m11")
		check("overlapping ranges and a committed tail", "m0", "m1", "m2", "m10")

		for _, id := range []string{"m3", "m4", "m5", "m6", "m7", "m8", "m9", "m11"} {
			if _, err := j.DB().ExecContext(ctx, `UPDATE session_messages SET body = 'not msgpack' WHERE session_id = ? AND message_id = ?`, sid, id); err != nil {
				t.Fatal(err)
			}
		}
		check("hidden bodies garbled", "m0", "m1", "m2", "m10")
	})
}
