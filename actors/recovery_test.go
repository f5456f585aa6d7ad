package actors

import (
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// TestAdmittedInputIsWokenAtStartUpWhateverItsStatus: a server that dies
// between a prompt's receipt and its drain's start leaves the session idle
// with admitted, unpromoted input. Start-up recovery runs it: the prompt is
// promoted exactly once and answered, without a run, a retry or another
// prompt from the client (before: Recover listed only busy sessions, and
// the prompt sat unpromoted until the client acted).
func TestAdmittedInputIsWokenAtStartUpWhateverItsStatus(t *testing.T) {
	for _, policy := range []Recovery{RecoverResume, RecoverInterrupt} {
		t.Run(string(policy), func(t *testing.T) {
			h := newHarness(t, text("answered"), killAfterAdmission())
			id := h.create("")
			untouched := h.create("")
			// Admitted, no drain yet: the state a kill right after the
			// receipt leaves.
			admitThenDie(h, id, "msg_owed", "do it")
			h.restart(func(c *Config) { c.Recovery = policy })
			ids, err := h.sessions.Recover(h.ctx(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids, []string{id}) {
				t.Fatalf("recovered %v, want only %s (not %s)", ids, id, untouched)
			}
			h.waitIdle(id)
			if got, want := h.history(id), []string{"U:do it", "A:answered"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("history %v, want %v", got, want)
			}
			if n := strings.Count(strings.Join(h.events(id), " "), "prompt.promoted"); n != 1 {
				t.Fatalf("promoted %d times, want once: %v", n, h.events(id))
			}
			if n := h.prov.Count(); n != 1 {
				t.Fatalf("%d provider requests, want 1", n)
			}
			if again, _ := h.sessions.Recover(h.ctx(), nil); len(again) != 0 {
				t.Fatalf("recovered again: %v", again)
			}
			h.checkReplay()
		})
	}
}

// killAfterAdmission kills the session actor once, right after the first
// admission is durable (the after-admission fault point): its drain never
// starts, as when the server dies between the receipt and the drain.
func killAfterAdmission() harnessOption {
	var killed atomic.Bool
	return func(c *Config) {
		c.Faults = func(p FaultPoint, _ string) bool {
			return p == FaultAfterAdmission && killed.CompareAndSwap(false, true)
		}
	}
}

// admitThenDie admits a prompt that asks for a drain into a harness built
// with killAfterAdmission: the admission is durable, the drain never
// starts.
func admitThenDie(h *harness, id, msgID, text string) {
	h.t.Helper()
	if _, err := h.sessions.Prompt(h.ctx(), id, Prompt{MessageID: msgID, Prompt: messages.Prompt{Text: text}, Resume: true}); err == nil {
		h.t.Fatal("the injected fault did not kill the admission's actor")
	}
	if n, err := h.journal.PendingInbox(h.ctx(), id); err != nil || len(n) != 1 {
		h.t.Fatalf("pending inbox %+v, %v: want the admitted prompt", n, err)
	}
}

// TestHeldInputStaysHeldAcrossARestart: a prompt admitted with resume:false
// (V1 noReply) waits for the client by design; a restart does not run it,
// while a prompt whose server died between its receipt and its drain is
// run once, on both journals. The held prompt runs when the client asks.
// Before the hold was durable, start-up recovery ran both.
func TestHeldInputStaysHeldAcrossARestart(t *testing.T) {
	for _, backend := range []string{"embedded", "mariadb"} {
		t.Run(backend, func(t *testing.T) {
			t.Setenv("SESSIONRT_SCENARIO_JOURNAL", backend)
			h := newHarness(t, text("answered"), killAfterAdmission())
			owed, held := h.create(""), h.create("")
			admitThenDie(h, owed, "msg_owed", "run me")
			h.prompt(held, "msg_held", "keep me", messages.Queue, false)
			h.restart()
			ids, err := h.sessions.Recover(h.ctx(), nil)
			if err != nil || !reflect.DeepEqual(ids, []string{owed}) {
				t.Fatalf("recovered %v %v, want only %s", ids, err, owed)
			}
			h.waitIdle(owed)
			if got, want := h.history(owed), []string{"U:run me", "A:answered"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("owed history %v, want %v", got, want)
			}
			// Recover answered before the drain ended: the held session's
			// activation (if any) ran in the same actor turn, so idle here
			// means nothing was started for it.
			if out := h.waitIdle(held); out.Err != "" {
				t.Fatalf("held session outcome %+v", out)
			}
			if hist := h.history(held); len(hist) != 0 {
				t.Fatalf("held history %v: the held prompt ran at start-up", hist)
			}
			if inbox, err := h.journal.PendingInbox(h.ctx(), held); err != nil || len(inbox) != 1 {
				t.Fatalf("held inbox %+v %v", inbox, err)
			}
			if n := h.prov.Count(); n != 1 {
				t.Fatalf("%d provider requests, want 1 (the owed prompt's)", n)
			}
			// A second restart still leaves it, and the client's run runs it once.
			h.restart()
			if ids, err := h.sessions.Recover(h.ctx(), nil); err != nil || len(ids) != 0 {
				t.Fatalf("recovered %v %v after the owed work was done", ids, err)
			}
			h.run(held)
			if got, want := h.history(held), []string{"U:keep me", "A:answered"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("held history after run %v, want %v", got, want)
			}
			h.checkReplay()
		})
	}
}

// TestInputAdmittedBeforeAKilledActorIsWokenAtStartUp: the session actor
// dies right after the admission is durable (the after-admission fault
// point), so the drain never starts; the process then stops. The next
// start runs the prompt once.
func TestInputAdmittedBeforeAKilledActorIsWokenAtStartUp(t *testing.T) {
	var killed atomic.Bool
	h := newHarness(t, text("answered"), func(c *Config) {
		c.Faults = func(p FaultPoint, _ string) bool {
			return p == FaultAfterAdmission && killed.CompareAndSwap(false, true)
		}
	})
	id := h.create("")
	if _, err := h.sessions.Prompt(h.ctx(), id, Prompt{MessageID: "msg_k", Prompt: messages.Prompt{Text: "go"}, Resume: true}); err == nil {
		t.Fatal("the injected fault did not kill the admission's actor")
	}
	h.restart()
	if ids, err := h.sessions.Recover(h.ctx(), nil); err != nil || !reflect.DeepEqual(ids, []string{id}) {
		t.Fatalf("recovered %v %v, want [%s]", ids, err, id)
	}
	h.waitIdle(id)
	if got, want := h.history(id), []string{"U:go", "A:answered"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	if n := strings.Count(strings.Join(h.events(id), " "), "prompt.promoted"); n != 1 {
		t.Fatalf("promoted %d times, want once: %v", n, h.events(id))
	}
	h.checkReplay()
}

// TestAdmittedInputWaitsForAFullDiskAtStartUp: the server dies between a
// receipt and its drain's start, and comes back on a full disk: recovery
// cannot take the session over (ownership is a write), so the session
// waits for the journal, says so on the live bus, and once the disk is
// freed its prompt is promoted once and answered without a client action
// (before: Recover stopped at the refused session and nothing retried it).
func TestAdmittedInputWaitsForAFullDiskAtStartUp(t *testing.T) {
	h := newHarness(t, text("answered"), killAfterAdmission())
	id := h.create("")
	admitThenDie(h, id, "msg_full", "after the disk")
	h.faults.FailWrites(nil)
	h.restart()
	sub := h.bus.Subscribe(id, 4096)
	defer sub.Close()
	if _, err := h.sessions.Recover(h.ctx(), nil); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("recover on a full disk: %v, want the disk's error", err)
	}
	awaitStatus(t, sub, func(s SessionStatus) bool { return s.Type == "retry" && s.Attempt >= 1 })
	h.faults.Heal()
	awaitStatus(t, sub, func(s SessionStatus) bool { return s.Type == "busy" })
	h.waitIdle(id)
	if got, want := h.history(id), []string{"U:after the disk", "A:answered"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	if n := strings.Count(strings.Join(h.events(id), " "), "prompt.promoted"); n != 1 {
		t.Fatalf("promoted %d times, want once: %v", n, h.events(id))
	}
	h.checkReplay()
}

// TestAPermissionRequestOfADeadDrainIsClosedAndItsSessionResumed: a drain
// waits for a permission when its process dies. The next start resumes
// the session without a client action (it was mid-drain); the call fails
// as interrupted and its request is closed durably (a reject saying why),
// so no client is shown it any more and a late reply is refused as not
// pending instead of being accepted and ignored (before: the request stayed
// pending forever and a reply to it got a receipt that meant nothing).
func TestAPermissionRequestOfADeadDrainIsClosedAndItsSessionResumed(t *testing.T) {
	ask := []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Ask}}
	agents := func(c *Config) { c.Agents = map[string]Agent{"build": {Rules: ask}} }
	var turns atomic.Int64 // across both processes: only the first asks
	h := newHarness(t, func(*provider.Request, int) (scripted.Turn, error) {
		if turns.Add(1) > 1 {
			return scripted.Turn{Text: "went on"}, nil
		}
		return bashEcho("never"), nil
	}, agents)
	id := h.create("")
	sub := h.bus.Subscribe(id, 4096)
	h.prompt(id, "", "go", "", true)
	var requestID string
	for requestID == "" {
		select {
		case it, ok := <-sub.C():
			if !ok {
				t.Fatalf("live subscription ended: %v", sub.Err())
			}
			if it.Event != nil {
				if p, ok := it.Event.Event.(messages.PermissionAsked); ok {
					requestID = p.RequestID
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no permission asked")
		}
	}
	sub.Close()
	h.restart(agents)
	if ids, err := h.sessions.Recover(h.ctx(), nil); err != nil || !reflect.DeepEqual(ids, []string{id}) {
		t.Fatalf("recovered %v %v, want [%s]", ids, err, id)
	}
	h.waitIdle(id)
	if perms, err := h.journal.PendingPermissions(h.ctx(), id); err != nil || len(perms) != 0 {
		t.Fatalf("pending permission requests after recovery: %+v %v", perms, err)
	}
	err := h.sessions.ReplyPermission(h.ctx(), id, ReplyPermission{RequestID: requestID, Reply: messages.ReplyOnce})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("late reply: %v, want not found (the request is closed)", err)
	}
	evs := strings.Join(h.events(id), " ")
	if !strings.Contains(evs, "permission.asked permission.replied tool.failed turn.failed") {
		t.Fatalf("events %s: want the request closed with the interrupted call", evs)
	}
	if hist := h.history(id); hist[len(hist)-1] != "A:went on" {
		t.Fatalf("history %v: the session must resume and answer", hist)
	}
	h.checkReplay()
}

// TestRestartPolicyHoldsWhenTheJournalRefusedTheStartUp: a session left
// mid-drain by a dead process comes back on a full disk, so its start-up
// activation is refused and it waits for the journal. Once the disk is
// freed the restart policy applies to it as to any restart: under
// interrupt it is settled as interrupted (no provider request), under
// resume it resumes with the restart note. Before, a refused activation
// counted as a drain the journal stopped here, which resumes with the
// journal's note whatever the policy: the interrupt policy was ignored.
func TestRestartPolicyHoldsWhenTheJournalRefusedTheStartUp(t *testing.T) {
	for _, policy := range []Recovery{RecoverResume, RecoverInterrupt} {
		t.Run(string(policy), func(t *testing.T) {
			started := make(chan int, 1)
			h := newHarness(t, hangFirst(started))
			id := h.create("")
			h.prompt(id, "", "u1", "", true)
			<-started
			h.faults.FailWrites(nil)
			h.restart(func(c *Config) { c.Recovery = policy })
			h.mu.Lock()
			h.turns = text("resumed")
			h.mu.Unlock()
			sub := h.bus.Subscribe(id, 4096)
			defer sub.Close()
			if _, err := h.sessions.Recover(h.ctx(), nil); err == nil || !strings.Contains(err.Error(), "no space left on device") {
				t.Fatalf("recover on a full disk: %v, want the disk's error", err)
			}
			awaitStatus(t, sub, func(s SessionStatus) bool { return s.Type == "retry" })
			h.faults.Heal()
			awaitStatus(t, sub, func(s SessionStatus) bool { return s.Type == "busy" })
			h.waitIdle(id)
			evs := strings.Join(h.events(id), " ")
			reqs := h.prov.Requests()
			switch policy {
			case RecoverInterrupt:
				if len(reqs) != 0 || !strings.HasSuffix(evs, "turn.failed interrupted idle") {
					t.Fatalf("%d requests, events %s: want the session settled as interrupted, not resumed", len(reqs), evs)
				}
			case RecoverResume:
				if len(reqs) != 1 {
					t.Fatalf("%d requests after the disk was freed, want one resumed attempt", len(reqs))
				}
				notes := map[string]bool{}
				for _, m := range reqs[0].Messages {
					if m.Role == provider.RoleSystem {
						notes[m.Text] = true
					}
				}
				if !notes[RestartNote] || notes[JournalNote] {
					t.Fatalf("resumed request %q: want the restart note (the process died), not the journal's", requestRoles(reqs[0]))
				}
			}
			if again, _ := h.sessions.Recover(h.ctx(), nil); len(again) != 0 {
				t.Fatalf("recovered again: %v", again)
			}
			h.checkReplay()
		})
	}
}

// TestInputLeftByAnInterruptIsNotRunByARestart: the spec keeps the input
// an interrupt leaves pending for a later fresh wake (the client's next
// prompt or run), so a restart must not run it on its own. A user's
// interrupt of a drain with a prompt queued into it (resume: it asked for
// that drain) leaves it pending and held; Recover wakes nothing, it is
// still pending, and the drain of the client's next prompt promotes both.
// On both journals.
// Before, Owed listed such input (admitted without a hold), and the
// restart after the interrupt ran it without anyone asking (recovered
// [ses_…], 1 provider request).
func TestInputLeftByAnInterruptIsNotRunByARestart(t *testing.T) {
	for _, backend := range []string{"embedded", "mariadb"} {
		t.Run(backend, func(t *testing.T) {
			t.Setenv("SESSIONRT_SCENARIO_JOURNAL", backend)
			started := make(chan int, 1)
			// The first request after it is set hangs until cancelled
			// (hangFirst counts from the provider's first request).
			hangOnce := func() func(*provider.Request, int) (scripted.Turn, error) {
				var hung atomic.Bool
				return func(*provider.Request, int) (scripted.Turn, error) {
					if hung.CompareAndSwap(false, true) {
						started <- 0
						return scripted.Turn{Text: "partial", Hang: true}, nil
					}
					return scripted.Turn{Text: "later answer"}, nil
				}
			}
			waitStarted := func() {
				t.Helper()
				select {
				case <-started:
				case <-time.After(30 * time.Second):
					t.Fatal("the drain's first request never came")
				}
			}
			h := newHarness(t, hangOnce())
			user := h.create("")
			heldInbox := func(id string, want ...string) {
				t.Helper()
				inbox, err := h.journal.PendingInbox(h.ctx(), id)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, in := range inbox {
					if !in.Held {
						t.Fatalf("pending %q is not held: a restart would run it", in.Prompt.Text)
					}
					got = append(got, in.Prompt.Text)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s pending %v, want %v", id, got, want)
				}
			}
			promotedBoth := func(id, first string) {
				t.Helper()
				h.mu.Lock()
				h.turns = text("both")
				h.mu.Unlock()
				h.prompt(id, "", "next", messages.Queue, true)
				h.waitIdle(id)
				hist := h.history(id)
				// Queued input: one prompt per turn, both in the drain the prompt started.
				if got, want := hist[len(hist)-4:], []string{"U:" + first, "A:both", "U:next", "A:both"}; !reflect.DeepEqual(got, want) {
					t.Fatalf("history %v: want %v at its end", hist, want)
				}
				heldInbox(id)
			}

			// A user's interrupt.
			h.prompt(user, "", "u1", "", true)
			waitStarted()
			h.prompt(user, "", "queued", messages.Queue, true)
			if err := h.sessions.Interrupt(h.ctx(), user); err != nil {
				t.Fatal(err)
			}
			heldInbox(user, "queued")
			h.restart()
			if ids, err := h.sessions.Recover(h.ctx(), nil); err != nil || len(ids) != 0 {
				t.Fatalf("recovered %v %v: nothing is owed after the interrupt", ids, err)
			}
			heldInbox(user, "queued")
			if n := h.prov.Count(); n != 0 {
				t.Fatalf("%d provider requests at the restart, want none", n)
			}
			promotedBoth(user, "queued")

			h.checkReplay()
		})
	}
}
