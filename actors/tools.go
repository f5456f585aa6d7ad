package actors

import (
	"fmt"
	"strings"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/filespan"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// toolSettled is the registry's settlement as the Session receives it.
type toolSettled = toolactors.ToolSettled

// executeTool starts a recorded call as a child actor of the Location's tool
// registry; its one settlement comes back to this actor.
func (a *sessionActor) executeTool(t *turn, c *toolCall) {
	d := a.drain
	headers := a.obs.ToolStarted(c.id, c.tool)
	effect.RunTool(a.system, d.fx.Tools, &toolactors.ExecuteTool{
		SessionID:          a.id,
		AssistantMessageID: t.assistantID,
		CallID:             c.id,
		Tool:               c.tool,
		Input:              c.input,
		Agent:              t.agent,
		Dir:                d.Location,
		Rules:              t.rules,
		Asker:              effect.Asker(a.post(), t.token, t.assistantID, c.id),
		ReplyTo:            a.self,
	}, headers)
	if a.rt.cfg.Faults != nil {
		a.system.Root.Send(a.self, &midTool{token: t.token})
	}
}

// midTool gives a chaos run its chance to kill the actor while a tool runs.
type midTool struct{ token uint64 }

// cancelTools kills every running call of this session; each settles as interrupted.
func (a *sessionActor) cancelTools() {
	if a.drain == nil || a.drain.fx.Tools == nil {
		return
	}
	effect.CancelTools(a.system, a.drain.fx.Tools, a.id)
}

func (a *sessionActor) onToolSettled(m *toolSettled) {
	d := a.drain
	if d == nil || d.turn == nil || d.turn.assistantID != m.AssistantMessageID {
		return // a settlement of an abandoned turn: already failed durably
	}
	t := d.turn
	c, ok := t.calls[m.CallID]
	if !ok || c.settled || c.snapping {
		return
	}
	if filespan.ChangesFiles(c.tool) && a.rt.cfg.Snapshots != nil {
		// The snapshot after a tool that changes files says what it
		// changed (a revert restores those files only). Refused calls
		// have one too (cheap: nothing changed), so a tool without one
		// is known to come from before tool snapshots. It is taken off
		// the mailbox, and the settlement is taken once it is there. The
		// core still counts the call running, so an interrupt waits.
		c.snapping = true
		dir := d.Location
		effect.Snapshot(m, func() string { return a.fileSnapshot(dir) }, a.post())
		return
	}
	a.settleTool(t, c, m, "")
}

func (a *sessionActor) onToolSnapshot(m *effect.Snapshotted[*toolSettled]) {
	d := a.drain
	if d == nil || d.turn == nil || d.turn.assistantID != m.Of.AssistantMessageID {
		return // the turn was abandoned meanwhile: already failed durably
	}
	c, ok := d.turn.calls[m.Of.CallID]
	if !ok || c.settled || !c.snapping {
		return
	}
	c.snapping = false
	a.settleTool(d.turn, c, m.Of, m.Snap)
}

// settleTool records a call's settlement (snap: the file snapshot taken
// after it, "" when none).
func (a *sessionActor) settleTool(t *turn, c *toolCall, m *toolSettled, snap string) {
	c.settled = true
	var ev messages.Event
	if m.Output != nil {
		path := m.Output.ManagedPath
		if path == "" {
			path = m.Output.ToolManagedPath
		}
		ev = messages.ToolSucceeded{AssistantMessageID: t.assistantID, CallID: c.id, Output: m.Output.Text,
			Structured: m.Output.Structured, ManagedPath: path, Lossy: m.Output.Lossy, Snapshot: snap}
	} else {
		msg := "tool failed"
		if m.Error != nil {
			msg = m.Error.Message
		}
		ev = messages.ToolFailed{AssistantMessageID: t.assistantID, CallID: c.id, Error: msg, Snapshot: snap}
	}
	// The core writes it (the last of a turn with the turn's end) and
	// says what follows; a call the user rejected without feedback
	// (PermissionReplied) stops the drain.
	// Its span and counters follow the core's Ready (obs.Settled).
	in := session.ToolSettled{Result: ev}
	if m.Error != nil {
		in.Kind = string(m.Error.Kind)
	}
	a.execute(a.core.Step(in))
}

func (a *sessionActor) onPermissionAsk(m *effect.PermissionAsk) {
	d := a.drain
	if d == nil {
		close(m.Reply)
		return
	}
	id := messages.NewID("per")
	rd := a.core.Step(session.PermissionAsked{Asked: messages.PermissionAsked{RequestID: id, AssistantMessageID: m.AssistantID, CallID: m.CallID, Action: m.Req.Action, Resources: m.Req.Resources}})
	if len(rd.Append) == 0 {
		close(m.Reply) // not a running call of the turn in flight
		return
	}
	a.execute(rd)
	if a.drain != d {
		close(m.Reply) // the append failed: the drain ended
		return
	}
	a.perms.Add(id, m.Reply)
}

func (a *sessionActor) replyPermission(m *ReplyPermission) any {
	if !a.core.State.Exists {
		return a.notFound()
	}
	switch m.Reply {
	case messages.ReplyOnce, messages.ReplyAlways, messages.ReplyReject:
	default:
		return invalidf(fmt.Sprintf("permission reply %q: want once, always or reject", m.Reply))
	}
	if strings.HasPrefix(m.RequestID, "que_") {
		return a.replyQuestion(m)
	}
	// The core takes a reply only for an open request of the turn in
	// flight, once; it writes it and says what it means for the call.
	d := a.drain
	rd := a.core.Step(session.PermissionReplied{Replied: messages.PermissionReplied{RequestID: m.RequestID, Reply: m.Reply, Feedback: m.Feedback}})
	if rd.Answer == nil {
		return &CommandError{Code: CodeNotFound, Msg: fmt.Sprintf("session %s has no pending permission request %s", a.id, m.RequestID)}
	}
	a.execute(rd)
	if a.drain != d {
		return &CommandError{Code: CodeInternal, Msg: "the reply could not be written: the drain ended"}
	}
	a.perms.Answer(m.RequestID, permission.Reply{Answer: permission.Answer(rd.Answer.Reply), Feedback: rd.Answer.Feedback})
	return &Done{LastSeq: a.seq}
}
