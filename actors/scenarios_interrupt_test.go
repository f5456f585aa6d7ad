package actors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// hangFirst hangs the first turn until its request is cancelled, then answers.
func hangFirst(started chan<- int) func(*provider.Request, int) (scripted.Turn, error) {
	return func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			started <- n
			return scripted.Turn{Text: "partial", Hang: true}, nil
		}
		return scripted.Turn{Text: "later answer"}, nil
	}
}

func TestS25_InterruptDuringStreamKeepsThePendingInbox(t *testing.T) {
	started := make(chan int, 1)
	h := newHarness(t, hangFirst(started))
	id := h.create("")
	h.prompt(id, "", "u1", "", true)
	<-started
	h.prompt(id, "", "q", messages.Queue, false)
	if err := h.sessions.Interrupt(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	evs := strings.Join(h.events(id), " ")
	if !strings.HasSuffix(evs, "turn.failed interrupted idle") {
		t.Fatalf("events after interrupt: %s", evs)
	}
	pending, err := h.journal.PendingInbox(h.ctx(), id)
	if err != nil || len(pending) != 1 || pending[0].Prompt.Text != "q" {
		t.Fatalf("pending %+v, %v: want the queued prompt kept", pending, err)
	}
	h.run(id)
	hist := h.history(id)
	if hist[len(hist)-2] != "U:q" || hist[len(hist)-1] != "A:later answer" {
		t.Fatalf("history %v: the later run must deliver the pending prompt", hist)
	}
	h.checkReplay()
}

// waitFile waits for a file a tool writes; bounded, polling the filesystem.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
	return ""
}

func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// sleeper is a bash call that records its PID, counts its runs and sleeps.
func sleeper() scripted.Turn {
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "slow", Name: "bash",
		Args: []byte(`{"command":"echo run >> runs; echo $$ > pid; sleep 60","description":"slow"}`)}}}
}

func TestS26_InterruptKillsRunningToolsAndSendsNoContinuation(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) { return sleeper(), nil })
	id := h.create("")
	h.prompt(id, "", "go", "", true)
	pid, _ := strconv.Atoi(waitFile(t, filepath.Join(h.loc, "pid")))
	if err := h.sessions.Interrupt(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	if !processGone(pid) {
		t.Fatalf("tool process %d survived the interrupt", pid)
	}
	msgs, _ := h.journal.ModelHistory(h.ctx(), id)
	tool := msgs[len(msgs)-1].Parts[0].Tool
	if tool.State != messages.ToolStateFailed || tool.Error != InterruptedToolError {
		t.Fatalf("tool %+v, want failed with %q", tool, InterruptedToolError)
	}
	if n := h.prov.Count(); n != 1 {
		t.Fatalf("%d requests, want 1 (no continuation)", n)
	}
	h.checkReplay()
}

func TestS27_InterruptingIdleOrUnknownIsANoOp(t *testing.T) {
	h := newHarness(t, text("hi"))
	id := h.create("")
	before := h.events(id)
	if err := h.sessions.Interrupt(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	if err := h.sessions.Interrupt(h.ctx(), "ses_unknown"); err != nil {
		t.Fatal(err)
	}
	if after := h.events(id); !reflect.DeepEqual(before, after) {
		t.Fatalf("interrupting an idle session wrote %v", after[len(before):])
	}
	h.checkReplay()
}

func TestS28_ProcessKilledMidToolFailsItBeforeAnyRequest(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) { return sleeper(), nil })
	id := h.create("")
	h.prompt(id, "", "go", "", true)
	pid, _ := strconv.Atoi(waitFile(t, filepath.Join(h.loc, "pid")))
	// The process dies: nothing of this drain is written any more.
	h.restart(func(c *Config) { c.Recovery = RecoverInterrupt })
	if !processGone(pid) {
		t.Fatalf("tool process %d outlived its runtime", pid)
	}
	h.mu.Lock()
	h.turns = func(req *provider.Request, n int) (scripted.Turn, error) {
		for _, m := range req.Messages {
			if m.ToolResult != nil && m.ToolResult.Output != InterruptedToolError {
				t.Errorf("request saw tool result %q before the leftover was failed", m.ToolResult.Output)
			}
		}
		return scripted.Turn{Text: "noted"}, nil
	}
	h.mu.Unlock()
	if out := h.run(id); out.Err != "" {
		t.Fatalf("run after restart: %+v", out)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests after restart, want 1", len(reqs))
	}
	runs, _ := os.ReadFile(filepath.Join(h.loc, "runs"))
	if strings.Count(string(runs), "run") != 1 {
		t.Fatalf("the tool ran %d times, want once", strings.Count(string(runs), "run"))
	}
	evs := strings.Join(h.events(id), " ")
	if !strings.Contains(evs, "tool.called tool.failed turn.failed") {
		t.Fatalf("events %s: the leftover tool and turn must fail durably", evs)
	}
	h.checkReplay()
}

func TestS29_AdmittedButNotPromotedSurvivesARestart(t *testing.T) {
	h := newHarness(t, text("delivered"))
	id := h.create("")
	h.prompt(id, "", "keep me", "", false)
	h.restart()
	if err := h.sessions.Wake(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(id)
	if got, want := h.history(id), []string{"U:keep me", "A:delivered"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	h.checkReplay()
}

func TestS30_MidDrainSessionsAreRecoveredOnceAtStartUp(t *testing.T) {
	for _, policy := range []Recovery{RecoverResume, RecoverInterrupt} {
		t.Run(string(policy), func(t *testing.T) {
			started := make(chan int, 1)
			h := newHarness(t, hangFirst(started))
			id := h.create("")
			idle := h.create("")
			h.prompt(id, "", "u1", "", true)
			<-started
			h.restart(func(c *Config) { c.Recovery = policy })
			h.mu.Lock()
			h.turns = text("resumed")
			h.mu.Unlock()
			ids, err := h.sessions.Recover(h.ctx(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids, []string{id}) {
				t.Fatalf("recovered %v, want only %s (not %s)", ids, id, idle)
			}
			h.waitIdle(id)
			reqs := h.prov.Requests()
			switch policy {
			case RecoverResume:
				if len(reqs) != 1 {
					t.Fatalf("%d requests after restart, want one resumed attempt", len(reqs))
				}
				found := false
				for _, m := range reqs[0].Messages {
					found = found || (m.Role == provider.RoleSystem && m.Text == RestartNote)
				}
				if !found {
					t.Fatalf("resumed request %q has no restart note", requestRoles(reqs[0]))
				}
			case RecoverInterrupt:
				if len(reqs) != 0 {
					t.Fatalf("%d requests after restart, want none", len(reqs))
				}
			}
			if again, _ := h.sessions.Recover(context.Background(), nil); len(again) != 0 {
				t.Fatalf("recovered again: %v", again)
			}
			h.checkReplay()
		})
	}
}

func TestShutdownStopsAtASafeBoundaryAndTheNextStartResumes(t *testing.T) {
	g := newGate()
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			if err := g.wait(context.Background(), n); err != nil {
				return scripted.Turn{}, err
			}
			return bashEcho("x"), nil // work remains after this turn
		}
		return scripted.Turn{Text: "finished"}, nil
	})
	id := h.create("")
	h.prompt(id, "", "go", "", true)
	g.awaitStart(t)
	done := make(chan struct{})
	go func() {
		h.sessions.Shutdown(h.ctx())
		close(done)
	}()
	g.open() // the turn in flight completes; no new turn starts
	<-done
	if n := h.prov.Count(); n != 1 {
		t.Fatalf("%d requests: shutdown must not start a new turn", n)
	}
	evs := strings.Join(h.events(id), " ")
	if !strings.HasSuffix(evs, "tool.called tool.succeeded turn.ended") {
		t.Fatalf("events %s: want the turn and its tool completed, and no idle", evs)
	}
	h.restart()
	ids, err := h.sessions.Recover(h.ctx(), nil)
	if err != nil || len(ids) != 1 {
		t.Fatalf("recover: %v %v", ids, err)
	}
	h.waitIdle(id)
	if hist := h.history(id); hist[len(hist)-1] != "A:finished" {
		t.Fatalf("history %v: the next start must resume the work", hist)
	}
	h.checkReplay()
}

// TestInterruptClosesAnOpenPermissionRequest: a client interrupts while a
// call waits for a permission reply. The call is cancelled, and its request
// is closed in the same transaction as the call's failure (a reject saying
// the call ended first): no client is shown a request nobody can act on,
// a late reply is refused as not found, and the actor holds no wait for it
// (before, the request stayed pending until a restart's recovery, and the
// wait kept the actor from passivating).
func TestInterruptClosesAnOpenPermissionRequest(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "bash", Args: []byte(`{"command":"touch ran","description":"x"}`)}}}, nil
		}
		return scripted.Turn{Text: "later"}, nil
	}, func(c *Config) {
		c.Agents = map[string]Agent{"build": {Rules: []permission.Rule{{Action: "bash", Resource: "*", Effect: permission.Ask}}}}
	})
	id := h.create("")
	sub := h.bus.Subscribe(id, 1024)
	defer sub.Close()
	h.prompt(id, "", "go", "", true)
	ask := awaitPermission(t, sub)
	if err := h.sessions.Interrupt(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	if perms, err := h.journal.PendingPermissions(h.ctx(), id); err != nil || len(perms) != 0 {
		t.Fatalf("pending permission requests after the interrupt: %+v %v", perms, err)
	}
	err := h.sessions.ReplyPermission(h.ctx(), id, ReplyPermission{RequestID: ask.RequestID, Reply: messages.ReplyOnce})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("late reply: %v, want not found (the request is closed)", err)
	}
	if in, err := h.sessions.Inspect(h.ctx(), id); err != nil || (in != nil && in.Perms != 0) {
		t.Fatalf("inspection %+v %v: the actor still waits for the closed request", in, err)
	}
	evs := strings.Join(h.events(id), " ")
	if !strings.HasSuffix(evs, "permission.asked permission.replied tool.failed turn.failed interrupted idle") {
		t.Fatalf("events %s: want the request closed with the cancelled call", evs)
	}
	if _, err := os.Stat(filepath.Join(h.loc, "ran")); err == nil {
		t.Fatal("the call ran without a reply")
	}
	h.checkReplay()
}
