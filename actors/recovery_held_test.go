package actors

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
)

// Under the interrupt restart policy, input queued into the drain that
// the restart settles stays pending and is run by nothing but the
// client's next fresh wake: not by the restart (start-up recovery asks
// the activation twice: once when it activates, once for its own
// message), not by an owed wake (a cluster takeover, the journal's
// return). The spec keeps the inbox rows an interrupt leaves "for a later
// fresh wake"; nothing is dropped. (Issue #21 follow-up a.)
func TestRecoverInterruptLeavesQueuedInputForAFreshWake(t *testing.T) {
	started := make(chan int, 1)
	h := newHarness(t, hangFirst(started))
	id := h.create("")
	h.prompt(id, "", "u1", "", true)
	<-started
	h.prompt(id, "u2", "u2", messages.Steer, true) // queued into the running drain
	h.restart(func(c *Config) { c.Recovery = RecoverInterrupt })
	h.mu.Lock()
	h.turns = text("answered")
	h.mu.Unlock()
	if ids, err := h.sessions.Recover(h.ctx(), nil); err != nil || !reflect.DeepEqual(ids, []string{id}) {
		t.Fatalf("recovered %v (%v), want %s", ids, err, id)
	}
	h.waitIdle(id)
	// A takeover's or the journal's wake is owed, not fresh.
	if _, err := h.sessions.ask(h.ctx(), id, &Wake{Owed: true}, h.sessions.rt.cfg.RequestTimeout); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(id)
	evs := strings.Join(h.events(id), " ")
	if n := h.prov.Count(); n != 0 {
		t.Fatalf("%d provider requests after the restart, want none: the interrupt policy must not run the input it left (events %s)", n, evs)
	}
	if !strings.HasSuffix(evs, "turn.failed interrupted idle") {
		t.Fatalf("events %s: want the restart to end with the interrupt and nothing after it", evs)
	}
	inbox, err := h.journal.PendingInbox(h.ctx(), id)
	if err != nil || len(inbox) != 1 || inbox[0].MessageID != "u2" || !inbox[0].Held {
		t.Fatalf("pending inbox %+v (%v), want u2 held", inbox, err)
	}
	// The client's fresh wake runs it.
	if err := h.sessions.Wake(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(id)
	if hist := h.history(id); hist[len(hist)-2] != "U:u2" || hist[len(hist)-1] != "A:answered" {
		t.Fatalf("history %v: a fresh wake must run the held input", hist)
	}
	h.checkReplay()
}
