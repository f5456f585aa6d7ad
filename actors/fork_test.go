package actors

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// requests records the provider requests of a harness, in turn order.
type requests struct {
	mu   sync.Mutex
	reqs []provider.Request
}

// add records req and returns its turn number (across restarts, which
// number a scripted provider's turns from 0 again).
func (r *requests) add(req *provider.Request) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, *req)
	return len(r.reqs) - 1
}

func (r *requests) turn(n int) provider.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[n]
}

// A fork holds the source's history before the message (all of it
// without one) under fresh IDs, as its own: the child's first turn sends
// it to the model, the source is unchanged, and a restarted process loads
// the child as the fold of its events builds it.
func TestForkCopiesTheHistoryBeforeAMessage(t *testing.T) {
	var reqs requests
	h := newHarness(t, func(req *provider.Request, _ int) (scripted.Turn, error) {
		n := reqs.add(req)
		switch n {
		case 0:
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "bash", Args: []byte(`{"command":"echo hi","description":"greet"}`)}}}, nil
		case 1:
			return scripted.Turn{Text: "done one"}, nil
		}
		return scripted.Turn{Text: fmt.Sprintf("answer %d", n)}, nil
	})
	src := h.create("")
	for _, p := range []string{"one", "two"} {
		h.prompt(src, "msg_"+p, p, messages.Queue, true)
		if out := h.waitIdle(src); out.Err != "" {
			t.Fatal(out.Err)
		}
	}
	before := h.history(src)
	if want := []string{"U:one", "A:[bash:completed]", "A:done one", "U:two", "A:answer 2"}; !reflect.DeepEqual(before, want) {
		t.Fatalf("source history %q, want %q", before, want)
	}

	whole, err := h.sessions.Fork(h.ctx(), src, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.history(whole.Session.ID); !reflect.DeepEqual(got, before) {
		t.Fatalf("fork of the whole history: %q, want %q", got, before)
	}
	part, err := h.sessions.Fork(h.ctx(), src, "msg_two")
	if err != nil {
		t.Fatal(err)
	}
	child := part.Session.ID
	if got := h.history(child); !reflect.DeepEqual(got, before[:3]) {
		t.Fatalf("fork before msg_two: %q, want %q", got, before[:3])
	}
	srcRow, _ := h.journal.Session(h.ctx(), src)
	if s := part.Session; s.Location != srcRow.Location || s.Agent != srcRow.Agent || s.Model != srcRow.Model || s.Title != "one (fork #1)" {
		t.Fatalf("fork row %+v, want the source's Location, agent and model (%+v), titled %q", s, srcRow, "one (fork #1)")
	}
	srcMsgs, _ := h.journal.ModelHistory(h.ctx(), src)
	childMsgs, _ := h.journal.ModelHistory(h.ctx(), child)
	for _, m := range childMsgs {
		if slices.ContainsFunc(srcMsgs, func(s messages.Message) bool { return s.ID == m.ID }) {
			t.Fatalf("the fork reuses the source's message ID %s", m.ID)
		}
	}
	if !slices.IsSortedFunc(childMsgs, func(a, b messages.Message) int { return strings.Compare(a.ID, b.ID) }) {
		t.Fatalf("the copied IDs do not sort in history order: %v", childMsgs)
	}
	grand, err := h.sessions.Fork(h.ctx(), child, "")
	if err != nil || grand.Session.Title != "one (fork #2)" {
		t.Fatalf("fork of the fork: %+v %v, want titled %q", grand, err, "one (fork #2)")
	}

	// The child's first turn sends the copied history, then its prompt.
	h.prompt(child, "", "three", messages.Queue, true)
	if out := h.waitIdle(child); out.Err != "" {
		t.Fatal(out.Err)
	}
	srcReq, childReq := requestRoles(reqs.turn(2)), requestRoles(reqs.turn(3))
	if want := append(slices.Clone(srcReq[:len(srcReq)-1]), "user:three"); !reflect.DeepEqual(childReq, want) {
		t.Fatalf("the child's first request\n%q\nwant the source's history before msg_two and the prompt\n%q", childReq, want)
	}
	if got := h.history(src); !reflect.DeepEqual(got, before) {
		t.Fatalf("the source changed: %q, want %q", got, before)
	}

	for _, c := range []struct{ source, message string }{
		{"ses_unknown", ""},
		{src, "msg_unknown"},
		{src, childMsgs[0].ID}, // the child's message, not the source's
	} {
		if _, err := h.sessions.Fork(h.ctx(), c.source, c.message); !errors.Is(err, ErrNotFound) {
			t.Fatalf("fork of %s before %q: %v, want not found", c.source, c.message, err)
		}
	}

	// A fresh process loads the child (its activation reads the journal).
	h.restart()
	h.prompt(child, "", "four", messages.Queue, true)
	if out := h.waitIdle(child); out.Err != "" {
		t.Fatal(out.Err)
	}
	if got, want := h.history(child), append(slices.Clone(before[:3]), "U:three", "A:answer 3", "U:four", "A:answer 4"); !reflect.DeepEqual(got, want) {
		t.Fatalf("child history %q, want %q", got, want)
	}
	h.checkReplay()
}

// A running session can be forked: the fork reads what is durable, and
// the running turn's message is copied closed as interrupted (what the
// model of an OpenCode fork sees of it). The source runs on untouched.
func TestForkOfARunningSession(t *testing.T) {
	var reqs requests
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		reqs.add(req)
		if n == 0 {
			return scripted.Turn{Text: "partial", Hang: true}, nil
		}
		return scripted.Turn{Text: fmt.Sprintf("answer %d", n)}, nil
	})
	src := h.create("")
	sub := h.bus.Subscribe(src, 1024)
	defer sub.Close()
	h.prompt(src, "msg_one", "one", messages.Queue, true)
	for started := false; !started; {
		select {
		case l := <-sub.C():
			if l.Event != nil {
				_, started = l.Event.Event.(messages.TurnStarted)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the turn did not start")
		}
	}
	f, err := h.sessions.Fork(h.ctx(), src, "")
	if err != nil {
		t.Fatal(err)
	}
	child := f.Session.ID
	msgs, err := h.journal.ModelHistory(h.ctx(), child)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Prompt == nil || msgs[0].Prompt.Text != "one" || msgs[1].Role != messages.RoleAssistant ||
		!msgs[1].Finished || msgs[1].ErrorKind != "interrupted" {
		t.Fatalf("fork of a running turn: %+v, want the prompt and the turn's message closed as interrupted", msgs)
	}
	if row, _ := h.journal.Session(h.ctx(), src); row.Status != "busy" {
		t.Fatalf("source status %s, want still busy", row.Status)
	}
	if err := h.sessions.Interrupt(h.ctx(), src); err != nil {
		t.Fatal(err)
	}
	h.prompt(child, "", "two", messages.Queue, true)
	if out := h.waitIdle(child); out.Err != "" {
		t.Fatal(out.Err)
	}
	if got := requestRoles(reqs.turn(1)); got[0] != "user:one" || got[len(got)-1] != "user:two" {
		t.Fatalf("the child's request %q: want the copied prompt first and its own last", got)
	}
	h.checkReplay()
}

// A fork's history is its own: a revert of the child to a copied message
// cuts the child's history there and leaves the source's whole, and a
// compaction of the source leaves the child's.
func TestForkRevertsAndCompactionsStayInTheirSession(t *testing.T) {
	s := &summarizer{}
	h := newHarness(t, s.turn, smallWindow(0, compactCfg(1000, 200)), withSnapshots(t, t.TempDir()))
	src := h.create("")
	for _, p := range []string{"one", "two", "three", "four"} {
		h.prompt(src, "msg_"+p, p, messages.Queue, true)
		if out := h.waitIdle(src); out.Err != "" {
			t.Fatal(out.Err)
		}
	}
	before := h.history(src)
	f, err := h.sessions.Fork(h.ctx(), src, "")
	if err != nil {
		t.Fatal(err)
	}
	child := f.Session.ID
	copied, _ := h.journal.ModelHistory(h.ctx(), child)
	for _, op := range []string{RevertStage, RevertCommit} {
		if _, err := h.sessions.Revert(h.ctx(), child, Revert{Op: op, MessageID: copied[2].ID}); err != nil {
			t.Fatalf("revert %s of the child to its copy of msg_two: %v", op, err)
		}
	}
	if got := h.history(child); !reflect.DeepEqual(got, before[:2]) {
		t.Fatalf("child after its revert: %q, want %q", got, before[:2])
	}
	if got := h.history(src); !reflect.DeepEqual(got, before) {
		t.Fatalf("source after the child's revert: %q, want %q", got, before)
	}
	if out, err := h.sessions.Compact(h.ctx(), src); err != nil || out.Err != "" || s.count() != 1 {
		t.Fatalf("compact the source: %+v %v", out, err)
	}
	if got := h.history(child); !reflect.DeepEqual(got, before[:2]) {
		t.Fatalf("child after the source's compaction: %q, want %q", got, before[:2])
	}
	if got := h.history(src); len(got) == 0 || got[0][:2] != "C:" {
		t.Fatalf("source after its compaction: %q, want its summary first", got)
	}
	// A fork of the compacted source starts at its summary: the model
	// sees what it sees (the messages before it stay in the message list).
	g, err := h.sessions.Fork(h.ctx(), src, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.history(g.Session.ID), h.history(src); !reflect.DeepEqual(got, want) {
		t.Fatalf("fork of the compacted source: %q, want %q", got, want)
	}
	if page, _ := h.journal.Messages(h.ctx(), g.Session.ID, persistence.Cursor{}, 100); len(page.Messages) <= len(h.history(src)) {
		t.Fatalf("fork of the compacted source lists %d messages, want those before the summary too", len(page.Messages))
	}
	h.prompt(g.Session.ID, "", "five", messages.Queue, true)
	if out := h.waitIdle(g.Session.ID); out.Err != "" {
		t.Fatal(out.Err)
	}
	h.checkReplay()
}
