package shell

import "github.com/sessionrt/sessionrt/actors/protocol"

func (a *sessionActor) inspection() *protocol.Inspection {
	in := &protocol.Inspection{Seq: a.journal.Seq(), Ownership: a.journal.Epoch(), Pending: len(a.core.State.Pending),
		Perms: a.perms.Len(), WakeAgain: a.core.WakeAgain}
	for _, ev := range a.core.Carry {
		in.Staged = append(in.Staged, ev.EventType().Name)
	}
	if d := a.drain; d != nil {
		in.Drain = &protocol.DrainInspection{Token: d.fx.Token, Busy: d.fx.Busy(), Carry: d.Carrying(), Interrupted: d.Interrupted, Waiters: len(d.waiters)}
		if id := d.fx.TurnID(); id != "" {
			ti := &protocol.TurnInspection{AssistantID: id}
			if d.Turn != nil {
				ti.Streaming = d.Turn.Streaming
				ti.Settled, ti.Unsettled = d.Turn.CallIDs()
			}
			in.Drain.Turn = ti
		}
	}
	return in
}
