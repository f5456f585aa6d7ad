package persistence

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
)

// rowsOf returns committed rows with seqs from..to, each payload size bytes.
func rowsOf(from, to int64, size int) []*committed {
	var out []*committed
	for s := from; s <= to; s++ {
		out = append(out, newCommitted(s, messages.AgentSwitched{}.EventType(), 0, make([]byte, size)))
	}
	return out
}

// rows drops get's window start.
func rows(rs []*committed, _ int64) []*committed { return rs }

func seqsOf(rows []*committed) []int64 {
	out := []int64{}
	for _, r := range rows {
		out = append(out, r.seq)
	}
	return out
}

func wantSeqs(t *testing.T, what string, got []*committed, from, to int64) {
	t.Helper()
	g := seqsOf(got)
	want := []int64{}
	for s := from; s <= to; s++ {
		want = append(want, s)
	}
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("%s: seqs %v, want %v", what, g, want)
	}
}

func TestRecentHitsAndMisses(t *testing.T) {
	r := newRecentEvents(1 << 20)
	r.add("s", rowsOf(1, 3, 10))
	r.add("s", rowsOf(4, 5, 10)) // continues: one window 1..5
	wantSeqs(t, "after 0", rows(r.get("s", 0, 100)), 1, 5)
	wantSeqs(t, "after 2", rows(r.get("s", 2, 100)), 3, 5)
	wantSeqs(t, "after 1 limit 2", rows(r.get("s", 1, 2)), 2, 3)
	wantSeqs(t, "after 5 (head)", rows(r.get("s", 5, 100)), 1, 0)
	wantSeqs(t, "after 9 (past head)", rows(r.get("s", 9, 100)), 1, 0)
	wantSeqs(t, "other session", rows(r.get("t", 0, 100)), 1, 0)
}

// A commit that does not continue the window (another writer committed in
// between, or an ambiguous commit this Journal never saw succeed) replaces
// it: a read must never be served across a gap.
func TestRecentGapResetsWindow(t *testing.T) {
	r := newRecentEvents(1 << 20)
	r.add("s", rowsOf(1, 3, 10))
	r.add("s", rowsOf(6, 7, 10))
	wantSeqs(t, "after 0 (before the window)", rows(r.get("s", 0, 100)), 1, 0)
	wantSeqs(t, "after 3 (in the gap)", rows(r.get("s", 3, 100)), 1, 0)
	wantSeqs(t, "after 5", rows(r.get("s", 5, 100)), 6, 7)
	if _, lo := r.get("s", 0, 100); lo != 6 {
		t.Errorf("window starts at %d, want 6", lo)
	}
	// An older commit arriving late (two appends racing to add) resets too.
	r.add("s", rowsOf(4, 5, 10))
	wantSeqs(t, "after 3 once 4..5 came late", rows(r.get("s", 3, 100)), 4, 5)
	wantSeqs(t, "after 5 once 4..5 came late", rows(r.get("s", 5, 100)), 1, 0)
	if r.bytes != r.m["s"].Value.(*window).bytes {
		t.Errorf("charged %d bytes, the window holds %d", r.bytes, r.m["s"].Value.(*window).bytes)
	}
}

func TestRecentEvictsLeastRecentlyUsedSessions(t *testing.T) {
	per := rowsOf(1, 1, 100)[0].cost
	r := newRecentEvents(12 * per) // a window holds at most 3 rows
	r.add("a", rowsOf(1, 3, 100))
	r.add("b", rowsOf(1, 3, 100))
	r.add("c", rowsOf(1, 3, 100))
	r.add("d", rowsOf(1, 3, 100)) // full: 12 rows
	rows(r.get("a", 0, 1))        // a is now the most recently used
	r.add("e", rowsOf(1, 1, 100)) // evicts b, the least recently used
	wantSeqs(t, "a", rows(r.get("a", 0, 100)), 1, 3)
	wantSeqs(t, "b (evicted)", rows(r.get("b", 0, 100)), 1, 0)
	wantSeqs(t, "c", rows(r.get("c", 0, 100)), 1, 3)
	wantSeqs(t, "e", rows(r.get("e", 0, 100)), 1, 1)
	if r.bytes > r.budget {
		t.Errorf("charged %d bytes, budget %d", r.bytes, r.budget)
	}
}

// A long session keeps its newest rows, contiguous, within a quarter of
// the budget.
func TestRecentTrimsALongWindowFromTheFront(t *testing.T) {
	per := rowsOf(1, 1, 100)[0].cost
	r := newRecentEvents(12 * per)
	for s := int64(1); s <= 10; s++ {
		r.add("s", rowsOf(s, s, 100))
	}
	wantSeqs(t, "after 7", rows(r.get("s", 7, 100)), 8, 10)
	wantSeqs(t, "after 6 (trimmed)", rows(r.get("s", 6, 100)), 1, 0)
	if r.bytes != 3*per {
		t.Errorf("charged %d bytes, want %d", r.bytes, 3*per)
	}
	// A commit larger than a window is not kept at all.
	r.add("big", rowsOf(1, 1, 10*per))
	if _, ok := r.m["big"]; ok || r.bytes != 3*per {
		t.Errorf("a commit over the window bound was kept (charged %d)", r.bytes)
	}
}

func TestRecentDisabled(t *testing.T) {
	r := newRecentEvents(-1)
	r.add("s", rowsOf(1, 3, 10))
	wantSeqs(t, "after 0", rows(r.get("s", 0, 100)), 1, 0)
}

// Readers share one decode of a row, and may race for it.
func TestCommittedDecodesOnce(t *testing.T) {
	reg := messages.SessionRegistry()
	ev := messages.AgentSwitched{Agent: "plan"}
	b, err := reg.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	c := newCommitted(4, ev.EventType(), 1_000_000, b)
	var wg sync.WaitGroup
	envs := make([]messages.Envelope, 4)
	for i := range envs {
		wg.Go(func() {
			env, err := c.envelope(reg, "s")
			if err != nil {
				t.Error(err)
			}
			envs[i] = env
		})
	}
	wg.Wait()
	for _, env := range envs {
		if env.Seq != 4 || env.SessionID != "s" || env.Event != messages.Event(ev) || env.Time.UnixMicro() != 1_000_000 {
			t.Errorf("envelope %+v", env)
		}
	}
	if c.payload != nil {
		t.Error("the payload is kept after decoding")
	}

	bad := newCommitted(5, ev.EventType(), 0, []byte{0xc1}) // 0xc1: never valid msgpack
	if _, err := bad.envelope(reg, "s"); err == nil {
		t.Error("a bad payload decoded")
	} else if de, ok := err.(*DecodeError); !ok || de.Seq != 5 {
		t.Errorf("error %v, want a *DecodeError at seq 5", err)
	}
}
