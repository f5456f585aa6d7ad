package shell

import (
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
)

// failLeftovers settles, durably, whatever a dead owner left open, before
// this activation can call a provider: the core decides what
// (session.Leftovers, from the calls, requests and turns the state holds);
// a previous incarnation in this very process may still run the calls, so
// its tools are killed before they are recorded as interrupted. No tool is
// ever run again.
func (a *sessionActor) failLeftovers(why string) error {
	rd := a.core.Step(session.Leftovers{Why: why})
	if rd.KillTools {
		if _, tools, err := a.rt.ResolveLocation(a.core.State.Row.Location); err == nil {
			_, _ = a.system.Root.RequestFuture(tools, &toolactors.CancelTool{SessionID: a.id}, a.rt.RequestTimeout).Result()
		}
		rd = a.core.Step(session.Leftovers{Why: why, ToolsKilled: true})
	}
	return a.write(rd.Append)
}

// recoverAfterRestart applies the restart policy to a session that was
// mid-drain; a resumed drain starts with note for the model. A session that
// was not mid-drain but holds admitted input (its owner died between the
// receipt and the drain's start) starts its drain as a wake would: the
// policy is about drains that were running, and this input was never
// acted on.
func (a *sessionActor) recoverAfterRestart(policy protocol.Recovery, note string) any {
	// The core decides (session.Recover): resume once, mark interrupted
	// (the pending input is then held: only a client's fresh wake, prompt
	// or run runs it), or, not mid-drain, an owed wake.
	rd := a.core.Step(session.Recover{Interrupt: policy == protocol.RecoverInterrupt, NoteID: messages.NewID("ctx"), Note: note})
	if err := a.write(rd.Append); err != nil {
		return err
	}
	rd.Append = nil
	a.execute(rd)
	return &protocol.Done{LastSeq: a.journal.Seq()}
}
