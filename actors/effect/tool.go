package effect

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/filespan"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// RunTool starts a recorded call as a child actor of the Location's tool
// registry; its one settlement (toolactors.ToolSettled) goes to
// call.ReplyTo, as the registry sends it. trace is the call's trace
// context (telemetry.Inject of its span): it travels in the message
// headers, so the tool actor, and anything it calls, joins the drain's
// trace.
func RunTool(system *actor.ActorSystem, registry *actor.PID, call *toolactors.ExecuteTool, trace map[string]string) {
	env := &actor.MessageEnvelope{Message: call}
	for k, v := range trace {
		env.SetHeader(k, v)
	}
	system.Root.Send(registry, env)
}

// CancelTools kills every running call of session in the registry; each
// settles as interrupted.
func CancelTools(system *actor.ActorSystem, registry *actor.PID, session string) {
	system.Root.Send(registry, &toolactors.CancelTool{SessionID: session})
}

// PermissionAsk is a running call's permission request, posted to the
// session so that its single writer journals it. Reply takes the answer;
// closed, the session will not answer (it stopped, or the call is no
// longer one of its turn in flight).
type PermissionAsk struct {
	Token       uint64 // the turn's
	AssistantID string
	CallID      string
	Req         permission.Request
	Reply       chan permission.Reply
}

// In is the core's input the ask makes, with a new request ID.
func (m *PermissionAsk) In() session.PermissionAsked {
	return session.PermissionAsked{Asked: messages.PermissionAsked{RequestID: messages.NewID("per"), AssistantMessageID: m.AssistantID,
		CallID: m.CallID, Action: m.Req.Action, Resources: m.Req.Resources}}
}

// Asker is the permission.Asker a call of the turn (token, assistantID)
// uses: it posts the ask (PermissionAsk) and waits for the reply, or for
// the call's end.
func Asker(post Post, token uint64, assistantID, callID string) permission.Asker {
	return permission.AskerFunc(func(ctx context.Context, req permission.Request) (permission.Reply, error) {
		ch := make(chan permission.Reply, 1)
		post(&PermissionAsk{Token: token, AssistantID: assistantID, CallID: callID, Req: req, Reply: ch})
		select {
		case r, ok := <-ch:
			if !ok {
				return permission.Reply{}, fmt.Errorf("permission request abandoned: the session stopped")
			}
			return r, nil
		case <-ctx.Done():
			return permission.Reply{}, ctx.Err()
		}
	})
}

// PermissionWaits are the reply channels of the permission asks of
// running calls (PermissionAsk.Reply) that the session journaled and
// waits to answer, by request ID. Each is answered or closed once, then
// forgotten; a channel takes one reply without blocking (Asker makes it
// so). The zero value is empty and ready; it is used from the session's
// goroutine only.
type PermissionWaits struct {
	m map[string]chan permission.Reply
}

// Add makes reply the wait of request id.
func (w *PermissionWaits) Add(id string, reply chan permission.Reply) {
	if w.m == nil {
		w.m = map[string]chan permission.Reply{}
	}
	w.m[id] = reply
}

// Answer hands r to the call waiting on request id and forgets the wait;
// false when none waits (already answered or released, or never added).
func (w *PermissionWaits) Answer(id string, r permission.Reply) bool {
	ch, ok := w.m[id]
	if ok {
		delete(w.m, id)
		ch <- r
	}
	return ok
}

// Release rejects request id, whose call settled first
// (session.SettledPermissionNote): whatever still reads the reply learns
// the request is closed, and a late Answer finds nothing.
func (w *PermissionWaits) Release(id string) {
	w.Answer(id, permission.Reply{Answer: permission.Reject, Feedback: session.SettledPermissionNote})
}

// CloseAll closes every wait without a reply (the session stopped
// answering: its drain was abandoned) and forgets them.
func (w *PermissionWaits) CloseAll() {
	for id, ch := range w.m {
		close(ch)
		delete(w.m, id)
	}
}

// Len is how many asks wait for a reply.
func (w *PermissionWaits) Len() int { return len(w.m) }

// SettleTool makes a call's settlement (the tool registry's) the core's
// input (ok), or posts it later: after a tool that changes files
// (filespan.ChangesFiles), when snapshot is set, the file snapshot taken
// after it says what the call changed (a revert restores those files
// only). Refused calls get one too (cheap: nothing changed), so a tool
// without one is known to come from before tool snapshots. snapshot
// blocks (a first snapshot of a large project reads every file): it runs
// on its own goroutine, and the settlement is posted with it
// (ToolSnapshotted), whose In is the input. The core counts the call
// running until then, so an interrupt waits for it.
func SettleTool(m *toolactors.ToolSettled, snapshot func() string, post Post) (in session.ToolSettled, ok bool) {
	if snapshot == nil || !filespan.ChangesFiles(m.Tool) {
		return toolSettled(m, ""), true
	}
	Go(post, func() any { return &ToolSnapshotted{Settled: m, Snap: snapshot()} },
		func(err error) any { return &ToolSnapshotted{Settled: m, Err: err} })
	return in, false
}

// SettleTool is SettleTool for a call of the drain, with its Location's
// file snapshot when the drain takes them (Snapshots).
func (x *Drain) SettleTool(m *toolactors.ToolSettled) (in session.ToolSettled, ok bool) {
	var snapshot func() string
	if x.Snapshots != nil {
		snapshot = x.snapshot
	}
	return SettleTool(m, snapshot, x.Post)
}

// ToolSnapshotted is a call's settlement with the file snapshot taken
// after it (SettleTool): Snap "" when none could be taken; Err: taking it
// panicked (the call settles without one; Drain.SettleTool's snapshots
// recover and log their panics themselves).
type ToolSnapshotted struct {
	Settled *toolactors.ToolSettled
	Snap    string
	Err     error
}

// In is the core's input the settlement makes.
func (m *ToolSnapshotted) In() session.ToolSettled { return toolSettled(m.Settled, m.Snap) }

// toolSettled is the core's input a settlement makes, with the file
// snapshot taken after it (snap, "" when none): its ToolSucceeded or
// ToolFailed, and how it failed as the registry classified it (which the
// core hands to observers).
func toolSettled(m *toolactors.ToolSettled, snap string) session.ToolSettled {
	if o := m.Output; o != nil {
		path := o.ManagedPath
		if path == "" {
			path = o.ToolManagedPath
		}
		return session.ToolSettled{Result: messages.ToolSucceeded{AssistantMessageID: m.AssistantMessageID, CallID: m.CallID, Output: o.Text,
			Structured: o.Structured, ManagedPath: path, Lossy: o.Lossy, Snapshot: snap}}
	}
	in := session.ToolSettled{Result: messages.ToolFailed{AssistantMessageID: m.AssistantMessageID, CallID: m.CallID, Error: "tool failed", Snapshot: snap}}
	if m.Error != nil {
		in.Result = messages.ToolFailed{AssistantMessageID: m.AssistantMessageID, CallID: m.CallID, Error: m.Error.Message, Snapshot: snap}
		in.Kind = string(m.Error.Kind)
	}
	return in
}
