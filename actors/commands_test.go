package actors

import (
	"slices"
	"testing"
)

// TestRenameWhileObservingWritesNoPromotionEarly: a client's rename while
// a drain observes the context for the turn its promotion is carried for
// is written alone. The drain then ends without that turn (interrupted),
// so the prompt stays pending: the rename did not make it durable (before,
// the actor's append wrote what the core carried first, promotion and all).
func TestRenameWhileObservingWritesNoPromotionEarly(t *testing.T) {
	h := newHarness(t, counting())
	id, g := observingWithACarriedPromotion(t, h)
	if _, err := h.sessions.Rename(h.ctx(), id, "Mine"); err != nil {
		t.Fatal(err)
	}
	if err := h.sessions.Interrupt(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	h.sources["env"].holdOn(nil)
	g.open()
	if out := h.waitIdle(id); out.Kind != "interrupted" {
		t.Fatalf("outcome %+v, want interrupted", out)
	}
	evs := h.events(id)
	if n := h.countEvents(id, "prompt.promoted"); n != 1 {
		t.Fatalf("%d promotions (events %v): the rename wrote the carried promotion of u2", n, evs)
	}
	if i := slices.Index(evs, "renamed"); i < 0 || evs[i+1] != "interrupted" {
		t.Fatalf("events %v: want the rename alone, then the interrupt", evs)
	}
	pending, err := h.journal.PendingInbox(h.ctx(), id)
	if err != nil || len(pending) != 1 || pending[0].MessageID != "u2" {
		t.Fatalf("pending %+v (%v): u2 must stay pending", pending, err)
	}
	if h.prov.Count() != 1 {
		t.Fatalf("%d provider requests, want the first prompt's only", h.prov.Count())
	}
	h.checkReplay()
}

// TestStoppedWhileObservingWritesNoPromotion: an actor that stops while its
// drain observes the context for the turn a promotion is carried for
// writes what it carries but the promotion (that turn never starts), so
// the prompt stays pending, and the next start runs it (before, the stop's
// flush made the promotion durable with no turn answering it).
func TestStoppedWhileObservingWritesNoPromotion(t *testing.T) {
	h := newHarness(t, counting())
	id, g := observingWithACarriedPromotion(t, h)
	h.sessions.Stop()
	h.sources["env"].holdOn(nil)
	g.open()
	if n := h.countEvents(id, "prompt.promoted"); n != 1 {
		t.Fatalf("%d promotions (events %v): the stop wrote the carried promotion of u2", n, h.events(id))
	}
	pending, err := h.journal.PendingInbox(h.ctx(), id)
	if err != nil || len(pending) != 1 || pending[0].MessageID != "u2" {
		t.Fatalf("pending %+v (%v): u2 must stay pending", pending, err)
	}
	h.restart()
	if _, err := h.sessions.Recover(h.ctx(), nil); err != nil {
		t.Fatal(err)
	}
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("the next start's drain: %+v", out)
	}
	pending, _ = h.journal.PendingInbox(h.ctx(), id)
	if n := h.countEvents(id, "prompt.promoted"); n != 2 || len(pending) != 0 || h.prov.Count() != 1 {
		t.Fatalf("%d promotions, pending %+v, %d requests since the restart: the next start must run u2", n, pending, h.prov.Count())
	}
	h.checkReplay()
}

// observingWithACarriedPromotion answers a first prompt, then admits u2
// and holds its drain at the boundary that carries u2's promotion while
// the context is observed (g releases the observation).
func observingWithACarriedPromotion(t *testing.T, h *harness) (string, *gate) {
	t.Helper()
	id := h.create("")
	h.ask(id, "first")
	g := newGate()
	h.sources["env"].holdOn(g)
	h.prompt(id, "u2", "second", "", true)
	g.awaitStart(t) // the boundary carries u2's promotion and observes
	return id, g
}
