package effect

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// TestRunToolCarriesTheTraceInItsHeaders: the call reaches the registry
// with the call's trace context in the envelope's headers.
func TestRunToolCarriesTheTraceInItsHeaders(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	got := make(posted, 1)
	registry := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if call, ok := c.Message().(*toolactors.ExecuteTool); ok {
			got <- [2]any{call, c.MessageHeader().Get("traceparent")}
		}
	}))
	call := &toolactors.ExecuteTool{SessionID: "ses_1", CallID: "call_1", Tool: "bash"}
	RunTool(system, registry, call, map[string]string{"traceparent": "00-abc-def-01"})
	m := got.next(t).([2]any)
	if m[0] != call || m[1] != "00-abc-def-01" {
		t.Fatalf("registry got %v with traceparent %q", m[0], m[1])
	}
}

// TestAskerPostsTheAskAndWaitsForItsReply: a call's ask is posted with
// its turn and call (the core's input it makes has a new request ID each
// time); the call gets the reply, an error when the session
// closes the ask without one, and its context's error when it ends first.
func TestAskerPostsTheAskAndWaitsForItsReply(t *testing.T) {
	asks := make(posted, 1)
	ask := Asker(asks.post, 9, "msg_1", "call_1")
	req := permission.Request{Action: "bash", Resources: []string{"ls"}}
	type answer struct {
		r   permission.Reply
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		r, err := ask.Ask(context.Background(), req)
		answers <- answer{r, err}
	}()
	m := asks.next(t).(*PermissionAsk)
	if m.Token != 9 || m.AssistantID != "msg_1" || m.CallID != "call_1" || m.Req.Action != "bash" {
		t.Fatalf("posted %+v", m)
	}
	in := m.In()
	if id := in.Asked.RequestID; id == "" || id == m.In().Asked.RequestID ||
		!reflect.DeepEqual(in.Asked, messages.PermissionAsked{RequestID: id, AssistantMessageID: "msg_1", CallID: "call_1", Action: "bash", Resources: []string{"ls"}}) {
		t.Fatalf("the core's input %+v, want the ask with a new request ID", in)
	}
	m.Reply <- permission.Reply{Answer: permission.Once}
	if a := <-answers; a.err != nil || a.r.Answer != permission.Once {
		t.Fatalf("%+v, want the reply", a)
	}

	go func() {
		r, err := ask.Ask(context.Background(), req)
		answers <- answer{r, err}
	}()
	close(asks.next(t).(*PermissionAsk).Reply)
	if a := <-answers; a.err == nil {
		t.Fatal("a closed ask answered without an error")
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		r, err := ask.Ask(ctx, req)
		answers <- answer{r, err}
	}()
	asks.next(t)
	cancel()
	if a := <-answers; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("%+v, want the call's context error", a)
	}
}

// TestPermissionWaitsAnswerEachAskOnce: an added wait takes one answer
// (a second finds nothing), a released one is rejected with the settled
// note, and CloseAll closes what is left without a reply.
func TestPermissionWaitsAnswerEachAskOnce(t *testing.T) {
	var w PermissionWaits
	if w.Answer("per_0", permission.Reply{Answer: permission.Once}) || w.Len() != 0 {
		t.Fatal("the zero value answered a request it does not hold")
	}
	a, b, c := make(chan permission.Reply, 1), make(chan permission.Reply, 1), make(chan permission.Reply, 1)
	w.Add("per_a", a)
	w.Add("per_b", b)
	w.Add("per_c", c)
	if w.Len() != 3 {
		t.Fatalf("Len %d, want 3", w.Len())
	}
	if !w.Answer("per_a", permission.Reply{Answer: permission.Always, Feedback: "ok"}) {
		t.Fatal("an added wait was not answered")
	}
	if r := <-a; r.Answer != permission.Always || r.Feedback != "ok" {
		t.Fatalf("got %+v, want the answer", r)
	}
	if w.Answer("per_a", permission.Reply{Answer: permission.Once}) {
		t.Fatal("a wait was answered twice")
	}
	w.Release("per_b")
	if r := <-b; r.Answer != permission.Reject || r.Feedback != session.SettledPermissionNote {
		t.Fatalf("released with %+v, want a reject with the settled note", r)
	}
	w.Release("per_b") // nothing waits any more: no second send
	if w.Len() != 1 {
		t.Fatalf("Len %d, want 1", w.Len())
	}
	w.CloseAll()
	if r, ok := <-c; ok {
		t.Fatalf("closed wait got %+v, want it closed without a reply", r)
	}
	if w.Len() != 0 || w.Answer("per_c", permission.Reply{}) {
		t.Fatal("a closed wait is still held")
	}
}

// TestSettleToolIsTheCoresInput: a settlement is the core's ToolSettled
// at once (its output, the managed path the tool wrote when bounding kept
// none; its error and kind, "tool failed" without one), unless the tool
// changes files and snapshots are taken: then the snapshot is taken off
// the caller's goroutine and posted with the settlement, whose In carries
// it (none when taking it panicked).
func TestSettleToolIsTheCoresInput(t *testing.T) {
	ch := make(posted, 1)
	snap := func() string { return "snap_1" }
	ok := &toolactors.ToolSettled{AssistantMessageID: "msg_1", CallID: "call_1", Tool: "read",
		Output: &toolactors.ToolOutput{Text: "out", ToolManagedPath: "/tmp/full", Lossy: true}}
	in, now := SettleTool(ok, snap, ch.post)
	want := messages.ToolSucceeded{AssistantMessageID: "msg_1", CallID: "call_1", Output: "out", ManagedPath: "/tmp/full", Lossy: true}
	if !now || !reflect.DeepEqual(in, session.ToolSettled{Result: want}) {
		t.Fatalf("read: %+v %v, want %+v now", in, now, want)
	}
	failed := &toolactors.ToolSettled{AssistantMessageID: "msg_1", CallID: "call_2", Tool: "bash",
		Error: &toolactors.ToolError{Kind: toolactors.ErrorInterrupted, Message: "interrupted"}}
	in, now = SettleTool(failed, nil, ch.post)
	if f, _ := in.Result.(messages.ToolFailed); !now || f.CallID != "call_2" || f.Error != "interrupted" || in.Kind != string(toolactors.ErrorInterrupted) {
		t.Fatalf("bash without snapshots: %+v %v", in, now)
	}
	if in, now = SettleTool(&toolactors.ToolSettled{CallID: "call_3", Tool: "grep"}, snap, ch.post); !now || in.Result.(messages.ToolFailed).Error != "tool failed" {
		t.Fatalf("no output, no error: %+v %v", in, now)
	}

	if _, now = SettleTool(failed, snap, ch.post); now {
		t.Fatal("bash with snapshots settled before its snapshot")
	}
	m := ch.next(t).(*ToolSnapshotted)
	if f, _ := m.In().Result.(messages.ToolFailed); m.Settled != failed || m.Err != nil || f.Snapshot != "snap_1" || f.Error != "interrupted" || m.In().Kind != string(toolactors.ErrorInterrupted) {
		t.Fatalf("posted %+v: %+v", m, m.In())
	}
	write := *ok
	write.Tool = "write"
	SettleTool(&write, func() string { panic("unreadable") }, ch.post)
	m = ch.next(t).(*ToolSnapshotted)
	if s, _ := m.In().Result.(messages.ToolSucceeded); m.Err == nil || s.Snapshot != "" || s.Output != "out" {
		t.Fatalf("panicking snapshot posted %+v: %+v", m, m.In())
	}
}
