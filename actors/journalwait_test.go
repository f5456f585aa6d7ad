package actors

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// awaitStatus reads the live bus until a session status matches; bounded.
func awaitStatus(t *testing.T, sub *Subscription, match func(SessionStatus) bool) SessionStatus {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case it, ok := <-sub.C():
			if !ok {
				t.Fatalf("live subscription ended: %v", sub.Err())
			}
			if it.Status != nil && match(*it.Status) {
				return *it.Status
			}
		case <-deadline:
			t.Fatal("no matching session status on the live bus")
		}
	}
}

// A drain that a journal write failure stops (a full disk) resumes without
// any client action once the journal accepts writes again: the wait is
// logged, published on the live bus (a retry status per failed attempt,
// then busy) and counted in the metrics; the prompt is promoted once and
// answered, after a note that tells the model why its turn stopped.
func TestDrainStoppedByTheJournalResumesOnceItAcceptsWrites(t *testing.T) {
	reg := metrics.NewRegistry()
	rt, err := metrics.NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	h := newHarness(t, gatedFirst(g, func(_ *provider.Request, n int) scripted.Turn {
		return scripted.Turn{Text: fmt.Sprintf("answer %d", n)}
	}), func(c *Config) { c.Metrics = rt })
	id := h.create("")
	sub := h.bus.Subscribe(id, 4096)
	defer sub.Close()
	h.prompt(id, "msg_disk_full", "hello", "", true)
	g.awaitStart(t)
	h.faults.FailWrites(nil)
	g.open() // the turn ends, and its end cannot be written

	first := awaitStatus(t, sub, func(s SessionStatus) bool { return s.Type == "retry" })
	if !strings.Contains(first.Message, "no space left on device") || first.Next.IsZero() {
		t.Fatalf("retry status %+v: want the disk error and the next attempt's time", first)
	}
	// A retry that finds the journal still failing is reported too.
	awaitStatus(t, sub, func(s SessionStatus) bool { return s.Type == "retry" && s.Attempt >= 1 })
	if evs := strings.Join(h.events(id), " "); !strings.HasSuffix(evs, "prompt.promoted turn.started") {
		t.Fatalf("events while the journal fails: %s", evs)
	}
	h.faults.Heal()
	awaitStatus(t, sub, func(s SessionStatus) bool { return s.Type == "busy" })
	h.waitIdle(id)

	hist := h.history(id)
	if hist[len(hist)-1] != "A:answer 1" || !strings.Contains(strings.Join(hist, "\n"), "S:"+JournalNote) {
		t.Fatalf("history %q: want the journal note, then the answer", hist)
	}
	promoted := 0
	envs, err := h.journal.ReadEvents(h.ctx(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range envs {
		if p, ok := e.Event.(messages.PromptPromoted); ok {
			for _, m := range p.MessageIDs {
				if m == "msg_disk_full" {
					promoted++
				}
			}
		}
	}
	if promoted != 1 {
		t.Fatalf("prompt promoted %d times, want once", promoted)
	}
	var b strings.Builder
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		`sessionrt_drains_total{outcome="journal"} 1`,
		`sessionrt_journal_retries_total{result="resumed"} 1`,
		`sessionrt_journal_waiting_sessions 0`,
		`sessionrt_journal_retries_total{result="failed"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s:\n%s", want, text)
		}
	}
	h.checkReplay()
}
