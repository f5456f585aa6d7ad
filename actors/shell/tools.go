package shell

import (
	"github.com/sessionrt/sessionrt/actors/effect"
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

// onPermissionAsk journals a running call's permission ask (the core
// takes it only from a running call of the turn in flight) and keeps its
// reply channel until a client answers (replyPermission); a closed one
// tells the call that nobody will.
func (a *sessionActor) onPermissionAsk(m *effect.PermissionAsk) {
	d := a.drain
	if d == nil {
		close(m.Reply)
		return
	}
	in := m.In()
	rd := a.core.Step(in)
	if len(rd.Append) == 0 {
		close(m.Reply) // not a running call of the turn in flight
		return
	}
	a.execute(rd)
	if a.drain != d {
		close(m.Reply) // the append failed: the drain ended
		return
	}
	a.perms.Add(in.Asked.RequestID, m.Reply)
}
