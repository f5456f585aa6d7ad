package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// TestIdleSessionPassivatesBusyOneStays: the idle middleware stops a
// session that received nothing for IdleAfter once its drain is over, not
// while the drain waits for its provider; the next command activates it
// again from the journal. The active-session gauge follows, and a panic's
// restart (Restarting, then Started) does not count the session twice.
func TestIdleSessionPassivatesBusyOneStays(t *testing.T) {
	reg := metrics.NewRegistry()
	rt, err := metrics.NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	h := newHarness(t, gatedFirst(g, func(_ *provider.Request, n int) scripted.Turn { return answer("a")(nil, n) }),
		func(c *Config) { c.Metrics, c.IdleAfter = rt, 20*time.Millisecond }, killAfterAdmission())
	active := func(want int) {
		t.Helper()
		var b strings.Builder
		if err := reg.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if line := "sessionrt_sessions_active " + string(rune('0'+want)); !strings.Contains(b.String(), line+"\n") {
			t.Fatalf("metrics lack %q:\n%s", line, b.String())
		}
	}
	id := h.create("")
	admitThenDie(h, id, "msg_1", "first") // the caller got the panic's error, the actor restarted

	h.prompt(id, "", "go", "", true)
	g.awaitStart(t)
	// Counted once after the restart. Read while the drain waits for its
	// provider: an idle session may passivate 20 ms after any message, so
	// the gauge is only certain to read 1 while a drain holds it.
	active(1)
	gone := h.gone(id)
	select {
	case <-gone:
		t.Fatal("a session passivated while its drain waited for the provider")
	case <-time.After(200 * time.Millisecond): // ten idle periods: a bound on a negative
	}
	g.open()
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("outcome %+v", out)
	}
	select {
	case <-gone:
	case <-time.After(20 * time.Second):
		t.Fatal("an idle session never passivated")
	}
	active(0)
	if h.sessions.rt.acts.isLive(id) {
		t.Fatal("a passivated session is still live")
	}
	h.ask(id, "again")
	if got := h.history(id); strings.Join(got, " ") != "U:first U:go A:a1 U:again A:a2" {
		t.Fatalf("history %v after passivation", got)
	}
	// The new activation was counted: its own passivation (which may
	// already have happened) takes the gauge back to 0, never below.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var b strings.Builder
		if err := reg.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		text := b.String()
		if strings.Contains(text, "sessionrt_sessions_active -") {
			t.Fatalf("the reactivated session was not counted:\n%s", text)
		}
		if strings.Contains(text, "sessionrt_sessions_active 0\n") && !h.sessions.rt.acts.isLive(id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reactivated session never passivated:\n%s", text)
		}
		time.Sleep(10 * time.Millisecond) // polling the gauge, bounded by the deadline
	}
}

// gone is the channel closed when id's live activation stops.
func (h *harness) gone(id string) <-chan struct{} {
	h.t.Helper()
	acts := h.sessions.rt.acts
	acts.mu.Lock()
	defer acts.mu.Unlock()
	e, ok := acts.live[id]
	if !ok {
		h.t.Fatalf("session %s has no live activation", id)
	}
	return e.gone
}
