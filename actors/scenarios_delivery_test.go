package actors

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// gate lets a test hold a provider turn open and know when it started.
type gate struct {
	started chan int
	release chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{started: make(chan int, 16), release: make(chan struct{})} }

// wait blocks a provider turn until open (or its request is cancelled).
func (g *gate) wait(ctx context.Context, n int) error {
	g.started <- n
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) awaitStart(t *testing.T) int {
	t.Helper()
	select {
	case n := <-g.started:
		return n
	case <-time.After(20 * time.Second):
		t.Fatal("provider turn never started")
		return -1
	}
}

// gatedFirst holds the first turn on g, then answers every turn with turn(n).
func gatedFirst(g *gate, turn func(req *provider.Request, n int) scripted.Turn) func(*provider.Request, int) (scripted.Turn, error) {
	return func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			if err := g.wait(context.Background(), n); err != nil {
				return scripted.Turn{}, err
			}
		}
		return turn(req, n), nil
	}
}

func answer(prefix string) func(*provider.Request, int) scripted.Turn {
	return func(_ *provider.Request, n int) scripted.Turn {
		return scripted.Turn{Text: prefix + string(rune('1'+n))}
	}
}

// send enqueues a command into the session's mailbox synchronously, so that
// ordering against later sends from this goroutine is known.
func (h *harness) send(id string, msg any) *actor.Future {
	h.t.Helper()
	pid, err := h.sessions.rt.acts.acquire(id)
	if err != nil {
		h.t.Fatal(err)
	}
	f := h.system.Root.RequestFuture(pid, msg, 30*time.Second)
	h.sessions.rt.acts.release(id, pid)
	return f
}

func TestS4_TwoUnresumedPromptsThenRunMakeOneRequest(t *testing.T) {
	h := newHarness(t, text("both seen"))
	id := h.create("")
	h.prompt(id, "", "first", "", false)
	h.prompt(id, "", "second", "", false)
	if n := h.prov.Count(); n != 0 {
		t.Fatalf("resume=false prompts made %d requests", n)
	}
	if out := h.run(id); out.Err != "" {
		t.Fatalf("run: %+v", out)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if got, want := requestRoles(reqs[0]), []string{"user:first", "user:second"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("request %v, want %v", got, want)
	}
	h.checkReplay()
}

func TestS5_ConcurrentRunsShareOneDrain(t *testing.T) {
	g := newGate()
	h := newHarness(t, gatedFirst(g, answer("a")))
	id := h.create("")
	h.prompt(id, "", "go", "", false)
	first := h.send(id, &Run{})
	second := h.send(id, &Run{}) // enqueued behind the first: it joins the drain
	g.awaitStart(t)
	g.open()
	r1, err1 := first.Result()
	r2, err2 := second.Result()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !reflect.DeepEqual(r1, r2) {
		t.Fatalf("outcomes differ: %+v vs %+v", r1, r2)
	}
	if n := h.prov.Count(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	h.checkReplay()
}

func TestS6_SteerDuringStreamPromotesInTheSameDrain(t *testing.T) {
	g := newGate()
	h := newHarness(t, gatedFirst(g, answer("a")))
	id := h.create("")
	h.prompt(id, "", "u1", "", true)
	g.awaitStart(t)
	h.prompt(id, "", "u2", messages.Steer, true)
	g.open()
	h.waitIdle(id)
	if got, want := h.history(id), []string{"U:u1", "A:a1", "U:u2", "A:a2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	if n := h.prov.Count(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	h.checkReplay()
}

func TestS7_TwoSteersDuringOneStreamPromoteTogether(t *testing.T) {
	g := newGate()
	h := newHarness(t, gatedFirst(g, answer("a")))
	id := h.create("")
	h.prompt(id, "", "u1", "", true)
	g.awaitStart(t)
	h.prompt(id, "", "u2", messages.Steer, true)
	h.prompt(id, "", "u3", messages.Steer, true)
	g.open()
	h.waitIdle(id)
	if err := h.sessions.Wake(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(id)
	reqs := h.prov.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (the later wake must send nothing)", len(reqs))
	}
	if got, want := requestRoles(reqs[1]), []string{"user:u1", "assistant:a1", "user:u2", "user:u3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("continuation %v, want %v", got, want)
	}
	h.checkReplay()
}

// bashEcho is a tool call turn running `echo <word>`.
func bashEcho(word string) scripted.Turn {
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "bash", Args: []byte(`{"command":"echo ` + word + `","description":"echo"}`)}}}
}

func TestS8_QueuedDuringContinuationWaitsForItToEnd(t *testing.T) {
	g := newGate()
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		switch n {
		case 0:
			return bashEcho("hi"), nil
		case 1:
			if err := g.wait(context.Background(), n); err != nil {
				return scripted.Turn{}, err
			}
			return scripted.Turn{Text: "continued"}, nil
		}
		return scripted.Turn{Text: "queued answered"}, nil
	})
	id := h.create("")
	h.prompt(id, "", "u1", "", true)
	g.awaitStart(t) // the tool continuation is streaming
	h.prompt(id, "", "q", messages.Queue, true)
	g.open()
	h.waitIdle(id)
	reqs := h.prov.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, m := range reqs[1].Messages {
		if m.Text == "q" {
			t.Fatal("the queued prompt reached the continuation request")
		}
	}
	if got, want := h.history(id), []string{"U:u1", "A:[bash:completed]", "A:continued", "U:q", "A:queued answered"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	h.checkReplay()
}

func TestS9_QueuedPromptsPromoteOnePerActivityOldestFirst(t *testing.T) {
	h := newHarness(t, func(_ *provider.Request, n int) (scripted.Turn, error) { return answer("a")(nil, n), nil })
	id := h.create("")
	h.prompt(id, "", "q1", messages.Queue, false)
	h.prompt(id, "", "q2", messages.Queue, false)
	h.run(id)
	if got, want := h.history(id), []string{"U:q1", "A:a1", "U:q2", "A:a2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	if got := requestRoles(h.prov.Requests()[0]); !reflect.DeepEqual(got, []string{"user:q1"}) {
		t.Fatalf("first activity saw %v", got)
	}
	h.checkReplay()
}

func TestS10_PendingSteerRunsBeforePendingQueued(t *testing.T) {
	h := newHarness(t, func(_ *provider.Request, n int) (scripted.Turn, error) { return answer("a")(nil, n), nil })
	id := h.create("")
	h.prompt(id, "", "queued", messages.Queue, false)
	h.prompt(id, "", "steer", messages.Steer, false)
	h.run(id)
	if got, want := h.history(id), []string{"U:steer", "A:a1", "U:queued", "A:a2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	h.checkReplay()
}

func TestS11_WakeWithoutInputIsFreeRunWithoutInputAttemptsOnce(t *testing.T) {
	h := newHarness(t, text("hi"))
	id := h.create("")
	if err := h.sessions.Wake(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(id)
	if n := h.prov.Count(); n != 0 {
		t.Fatalf("a wake with no input made %d requests", n)
	}
	if out := h.run(id); out.Err != "" {
		t.Fatalf("run: %+v", out)
	}
	if n := h.prov.Count(); n != 1 {
		t.Fatalf("a run with no input made %d requests, want 1", n)
	}
	h.checkReplay()
}

func TestS12_WakesDuringADrainCoalesce(t *testing.T) {
	g := newGate()
	h := newHarness(t, gatedFirst(g, answer("a")))
	id := h.create("")
	h.prompt(id, "", "u1", "", true)
	g.awaitStart(t)
	h.prompt(id, "", "q", messages.Queue, false)
	for i := 0; i < 5; i++ {
		if err := h.sessions.Wake(h.ctx(), id); err != nil {
			t.Fatal(err)
		}
	}
	g.open()
	h.waitIdle(id)
	h.waitIdle(id)
	idles := 0
	for _, e := range h.events(id) {
		if e == "idle" {
			idles++
		}
	}
	if idles > 2 {
		t.Fatalf("5 wakes during a drain gave %d drains, want at most 2", idles)
	}
	if n := h.prov.Count(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	h.checkReplay()
}

func TestS13_SteerAdmittedWhileTheTurnFailsRunsNext(t *testing.T) {
	g := newGate()
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			if err := g.wait(context.Background(), n); err != nil {
				return scripted.Turn{}, err
			}
			return scripted.Turn{Error: &scripted.ErrorSpec{Kind: "invalid_request", Message: "bad day"}}, nil
		}
		return scripted.Turn{Text: "recovered"}, nil
	})
	id := h.create("")
	h.prompt(id, "", "u1", "", true)
	g.awaitStart(t)
	h.prompt(id, "", "u2", messages.Steer, true)
	g.open()
	h.waitIdle(id)
	if n := h.prov.Count(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if got, want := h.history(id), []string{"U:u1", "A:", "U:u2", "A:recovered"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	h.checkReplay()
}

// alwaysTool calls bash whenever tools are offered and answers in text otherwise.
func alwaysTool(g *gate, gateAt int) func(*provider.Request, int) (scripted.Turn, error) {
	return func(req *provider.Request, n int) (scripted.Turn, error) {
		if g != nil && n == gateAt {
			if err := g.wait(context.Background(), n); err != nil {
				return scripted.Turn{}, err
			}
		}
		if len(req.Tools) == 0 {
			return scripted.Turn{Text: "done"}, nil
		}
		return bashEcho("x"), nil
	}
}

func withTurnLimit(n int) harnessOption {
	return func(c *Config) {
		c.Agents = map[string]Agent{"build": {TurnLimit: n, Rules: allowAll}}
	}
}

func TestS14_PromotionResetsTheTurnAllowanceOnce(t *testing.T) {
	for _, steers := range []int{0, 1, 2} {
		g := newGate()
		h := newHarness(t, alwaysTool(g, 1), withTurnLimit(3))
		id := h.create("")
		h.prompt(id, "", "go", "", true)
		g.awaitStart(t) // the second turn streams
		for i := 0; i < steers; i++ {
			h.prompt(id, "", "more", messages.Steer, false)
		}
		g.open()
		h.waitIdle(id)
		want := 3
		if steers > 0 {
			want = 5 // two turns, then a fresh allowance of three
		}
		if n := h.prov.Count(); n != want {
			t.Fatalf("%d steers: %d requests, want %d", steers, n, want)
		}
		h.checkReplay()
	}
}
