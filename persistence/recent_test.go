package persistence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// Two Journals on one database (two cluster members sharing a journal)
// append to one session in turns, so each one's cache of its own recent
// commits keeps being cut by the other's: every read on either, from every
// cursor and with small and large limits, and a tailer on each, must see
// every event exactly once, in order, with its payload.
func TestTwoJournalsSeeEachOthersEventsOnceInOrder(t *testing.T) {
	cfg := persistence.Config{PollInterval: 10 * time.Millisecond}
	eachBackendCfg(t, cfg, func(t *testing.T, a *persistence.Journal) {
		ctx := testCtx(t)
		cfg := cfg
		cfg.DB = a.DB()
		b := openJournal(t, cfg)

		const rounds = 15
		agents := []string{""} // by seq; seq 0 is none
		total := int64(1)
		for i := range rounds {
			total += int64(1 + i%3)
		}
		type tail struct {
			evs []messages.Envelope
			err error
		}
		tailed := map[string]chan tail{}
		for name, j := range map[string]*persistence.Journal{"a": a, "b": b} {
			tailed[name] = make(chan tail, 1)
			go func() {
				var out tail
				for e, err := range j.Events(ctx, "s1", 0) {
					if out.err = err; err != nil {
						break
					}
					if out.evs = append(out.evs, e); e.Seq >= total {
						break
					}
				}
				tailed[name] <- out
			}()
		}

		last := mustAppend(t, a, "s1", 0, 0, created("/p"))
		agents = append(agents, "")
		for i := range rounds {
			w, name := a, "a"
			if i%3 == 2 {
				w, name = b, "b"
			}
			var evs []messages.Event
			for k := range 1 + i%3 {
				agent := fmt.Sprintf("%s-%d-%d", name, i, k)
				evs = append(evs, messages.AgentSwitched{Agent: agent})
				agents = append(agents, agent)
			}
			last = mustAppend(t, w, "s1", last, 0, evs...)
			for _, j := range []*persistence.Journal{a, b} {
				checkReads(t, j, last, agents)
			}
		}
		for name, ch := range tailed {
			tl := <-ch
			if tl.err != nil {
				t.Errorf("tailer on %s: %v", name, tl.err)
			}
			checkSeqs(t, "tailer on "+name, tl.evs, 0, total, agents)
		}
	})
}

// checkReads reads the session from every cursor, with limits 1, 2 and
// unbounded, paging until the head.
func checkReads(t *testing.T, j *persistence.Journal, last int64, agents []string) {
	t.Helper()
	ctx := testCtx(t)
	for after := int64(0); after <= last; after++ {
		for _, limit := range []int{1, 2, 1000} {
			want, cursor := after+1, after
			for {
				evs, err := j.ReadEvents(ctx, "s1", cursor, limit)
				if err != nil {
					t.Fatalf("read after %d limit %d: %v", cursor, limit, err)
				}
				// Nobody writes meanwhile: a read is short only at the head.
				if n := int64(len(evs)); n != min(int64(limit), last-cursor) {
					t.Fatalf("read after %d limit %d: %d events, head %d", cursor, limit, n, last)
				}
				if len(evs) == 0 {
					break
				}
				checkSeqs(t, fmt.Sprintf("read after %d limit %d", cursor, limit), evs, cursor, evs[len(evs)-1].Seq, agents)
				cursor = evs[len(evs)-1].Seq
				want = cursor + 1
			}
			if want != last+1 {
				t.Fatalf("read after %d limit %d: ended at seq %d, head is %d", after, limit, want-1, last)
			}
		}
	}
}

// checkSeqs checks that evs are seqs after+1..last, once each in order,
// with the agents the test wrote.
func checkSeqs(t *testing.T, what string, evs []messages.Envelope, after, last int64, agents []string) {
	t.Helper()
	if int64(len(evs)) != last-after {
		t.Fatalf("%s: %d events, want seqs %d..%d", what, len(evs), after+1, last)
	}
	for i, e := range evs {
		if want := after + 1 + int64(i); e.Seq != want || e.SessionID != "s1" {
			t.Fatalf("%s: event %d is %s seq %d, want s1 seq %d", what, i, e.SessionID, e.Seq, want)
		}
		if sw, ok := e.Event.(messages.AgentSwitched); ok && sw.Agent != agents[e.Seq] {
			t.Fatalf("%s: seq %d agent %q, want %q", what, e.Seq, sw.Agent, agents[e.Seq])
		} else if !ok && e.Seq != 1 {
			t.Fatalf("%s: seq %d is a %T", what, e.Seq, e.Event)
		}
	}
}
