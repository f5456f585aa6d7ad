package persistence

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
)

// A page of Messages is computed from one state of the session: revert
// events committed between its read of the revert state and its read of
// the rows (run by the afterMessagesReverts hook, so the interleaving is
// exact) leave it the page of the state before them, and the next call
// sees the state after them. Read in separate statements, a revert
// committed and finalized there, with messages appended after it, made the
// page show the messages it hides next to the new ones (and say More on
// the old last page).
func TestMessagesPageReadsOneSnapshot(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			j, err := Open(ctx, Config{DB: b.db(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { j.Close() })
			for _, c := range []struct {
				name string
				// before builds the state the page is read from, between
				// are the writes between the two reads: app appends
				// events, stage stages a revert at a message (m(i)).
				before, between func(app func(...messages.Event), m func(int) string, stage func(id string) messages.Event)
				visibleBefore   []int
				visibleAfter    []int
			}{{
				name: "committed and finalized",
				before: func(app func(...messages.Event), m func(int) string, _ func(string) messages.Event) {
					app(promote(m, 0, 1, 2, 3)...)
				},
				between: func(app func(...messages.Event), m func(int) string, stage func(string) messages.Event) {
					app(stage(m(2)), messages.RevertCommitted{MessageID: m(2)}, messages.RevertFinalized{})
					app(promote(m, 4, 5)...)
				},
				visibleBefore: []int{0, 1, 2, 3},
				visibleAfter:  []int{0, 1, 4, 5},
			}, {
				name: "cleared",
				before: func(app func(...messages.Event), m func(int) string, stage func(string) messages.Event) {
					app(promote(m, 0, 1, 2, 3)...)
					app(stage(m(2)), messages.RevertCommitted{MessageID: m(2)})
				},
				between: func(app func(...messages.Event), m func(int) string, _ func(string) messages.Event) {
					app(messages.RevertCleared{})
					app(promote(m, 4)...)
				},
				visibleBefore: []int{0, 1},
				visibleAfter:  []int{0, 1, 2, 3, 4},
			}} {
				for limit := 1; limit <= 6; limit++ {
					for _, afterFirst := range []bool{false, true} {
						sid := fmt.Sprintf("%s-%d-%v", c.name, limit, afterFirst)
						m := func(i int) string { return fmt.Sprintf("%s-m%d", sid, i) }
						stage := func(id string) messages.Event {
							seq, idx, _, err := j.MessagePosition(ctx, sid, id)
							if err != nil {
								t.Fatal(err)
							}
							return messages.RevertStaged{MessageID: id, BoundarySeq: seq, BoundaryIndex: idx}
						}
						evs := []messages.Event{messages.SessionCreated{Location: "/p"}}
						for i := 0; i < 6; i++ {
							evs = append(evs, messages.PromptAdmitted{MessageID: m(i), Prompt: messages.Prompt{Text: m(i)}, Delivery: messages.Queue})
						}
						last := appendAll(t, j, sid, 0, evs)
						app := func(evs ...messages.Event) { last = appendAll(t, j, sid, last, evs) }
						c.before(app, m, stage)
						var from Cursor
						if afterFirst {
							seq, idx, _, err := j.MessagePosition(ctx, sid, m(0))
							if err != nil {
								t.Fatal(err)
							}
							from = Cursor{Seq: seq, Index: idx}
						}
						expect := func(visible []int) string {
							var ids []string
							for _, i := range visible {
								if !afterFirst || i > 0 {
									ids = append(ids, m(i))
								}
							}
							return fmt.Sprintf("%v more=%v", ids[:min(limit, len(ids))], len(ids) > limit)
						}
						page := func() string {
							p, err := j.Messages(ctx, sid, from, limit)
							if err != nil {
								t.Fatal(err)
							}
							return describe(p)
						}
						if g, w := page(), expect(c.visibleBefore); g != w {
							t.Fatalf("%s before, limit %d after %v: page %s, want %s", c.name, limit, from, g, w)
						}
						j.afterMessagesReverts = func() {
							j.afterMessagesReverts = nil
							c.between(app, m, stage)
						}
						got := page()
						if j.afterMessagesReverts != nil {
							t.Fatal("the hook did not run")
						}
						if w := expect(c.visibleBefore); got != w {
							t.Fatalf("%s between the reads, limit %d after %v: page %s, want the page before them %s", c.name, limit, from, got, w)
						}
						if g, w := page(), expect(c.visibleAfter); g != w {
							t.Fatalf("%s, then limit %d after %v: page %s, want %s", c.name, limit, from, g, w)
						}
					}
				}
			}
		})
	}
}

func promote(m func(int) string, is ...int) []messages.Event {
	var evs []messages.Event
	for _, i := range is {
		evs = append(evs, messages.PromptPromoted{MessageIDs: []string{m(i)}})
	}
	return evs
}

func appendAll(t *testing.T, j *Journal, sid string, last int64, evs []messages.Event) int64 {
	t.Helper()
	for _, e := range evs { // one event per append: a stage reads the positions before it
		var err error
		if last, err = j.Append(context.Background(), sid, last, 0, e); err != nil {
			t.Fatal(err)
		}
	}
	return last
}

// describe prints a page's IDs and More.
func describe(p Page) string {
	ids := make([]string, 0, len(p.Messages))
	for _, msg := range p.Messages {
		ids = append(ids, msg.ID)
	}
	return fmt.Sprintf("%v more=%v", ids, p.More)
}
