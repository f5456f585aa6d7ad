package shell

import (
	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
)

// toolSettled is the registry's settlement as the Session receives it.
type toolSettled = toolactors.ToolSettled

// onToolSettled steps a call's settlement (effect.Drain.SettleTool: after a
// tool that changes files, once its file snapshot is taken off the
// mailbox: onDrainMessage's ToolSnapshotted). A settlement of a turn
// abandoned meanwhile (already failed durably) is dropped.
func (a *sessionActor) onToolSettled(m *toolSettled) {
	if !a.core.Running(m.AssistantMessageID, m.CallID) {
		return
	}
	if in, ok := a.drain.fx.SettleTool(m); ok {
		a.execute(a.core.Step(in))
	}
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
