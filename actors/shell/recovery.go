package shell

import (
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
)

// InterruptedToolError is what a tool left running by an interruption or a
// dead process settles with (session.InterruptedToolError).
const InterruptedToolError = session.InterruptedToolError

// RestartNote is the model-visible note added when a session mid-drain is
// resumed after its process died.
const RestartNote = "The server restarted while you were working. Tool calls that were still running were stopped and failed with \"" + InterruptedToolError + "\"; their side effects may be partial. Continue from the conversation above."

// JournalNote is the model-visible note added when a drain that a journal
// write failure stopped is resumed.
const JournalNote = "The journal could not store your work for a while (a write failed, e.g. on a full disk), so your work stopped until it accepted writes again. Tool calls that were still running were stopped and failed with \"" + InterruptedToolError + "\"; their side effects may be partial. Continue from the conversation above."

// LeftoverPermissionNote is the feedback of the reject that closes a
// permission request whose tool call a dead drain left running
// (session.LeftoverPermissionNote: the core writes it, Leftovers).
const LeftoverPermissionNote = session.LeftoverPermissionNote

// RecoverSession asks an activation to apply the restart policy; the reply is
// an *Outcome when resumed (after the drain) or *Done when marked interrupted.
type RecoverSession struct{ Policy Recovery }

// Recovery says what happens to a session found mid-drain after a restart.
type Recovery string

const (
	// RecoverResume runs the session once more, telling the model the server restarted.
	RecoverResume Recovery = "resume"
	// RecoverInterrupt marks the session interrupted; its inbox stays,
	// held, for the client's next fresh wake, prompt or run (no restart,
	// takeover or journal resume runs it).
	RecoverInterrupt Recovery = "interrupt"
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
func (a *sessionActor) recoverAfterRestart(policy Recovery, note string) any {
	// The core decides (session.Recover): resume once, mark interrupted
	// (the pending input is then held: only a client's fresh wake, prompt
	// or run runs it), or, not mid-drain, an owed wake.
	rd := a.core.Step(session.Recover{Interrupt: policy == RecoverInterrupt, NoteID: messages.NewID("ctx"), Note: note})
	if err := a.write(rd.Append); err != nil {
		return err
	}
	rd.Append = nil
	a.execute(rd)
	return &Done{LastSeq: a.seq}
}

// owedWhileJournalFails hands a session to the journal waits when the
// journal refused its activation (a full disk at start-up, a lost database
// during a takeover) while it was asked to do owed work (a wake, start-up
// recovery): nobody else would ask again, so the waits resume it once the
// journal accepts writes. A wake to a session that owes nothing costs one
// activation then.
func (a *sessionActor) owedWhileJournalFails(msg any, err error) {
	switch msg.(type) {
	case *Wake, *RecoverSession:
	default:
		return
	}
	if errorCode(err) == CodeJournal {
		a.log.Error("session owes work but the journal refused its activation; it resumes once the journal accepts writes again", "session", a.id, "err", err)
		a.rt.WaitJournal(a.id, err, false)
	}
}
