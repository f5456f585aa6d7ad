package actors

import (
	"fmt"
	"slices"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
)

// RestartNote is the model-visible note added when a session mid-drain is
// resumed after its process died.
const RestartNote = "The server restarted while you were working. Tool calls that were still running were stopped and failed with \"" + InterruptedToolError + "\"; their side effects may be partial. Continue from the conversation above."

// JournalNote is the model-visible note added when a drain that a journal
// write failure stopped is resumed.
const JournalNote = "The journal could not store your work for a while (a write failed, e.g. on a full disk), so your work stopped until it accepted writes again. Tool calls that were still running were stopped and failed with \"" + InterruptedToolError + "\"; their side effects may be partial. Continue from the conversation above."

// LeftoverPermissionNote is the feedback of the reject that closes a
// permission request whose tool call was interrupted before anyone
// answered it (its drain died): no reply could be acted on any more.
const LeftoverPermissionNote = "Nobody answered before the tool call that asked was interrupted (its drain stopped: the server restarted or the journal failed); the request is closed."

// recoverSession asks an activation to apply the restart policy; the reply is
// an *Outcome when resumed (after the drain) or *Done when marked interrupted.
type recoverSession struct{ policy Recovery }

// failLeftovers settles, durably, whatever a dead owner left open: every tool
// call still pending or running fails with "Tool execution interrupted" and
// an unfinished turn fails, before this activation can call a provider. No
// tool is ever run again.
func (a *sessionActor) failLeftovers(why string) error {
	ctx := a.rt.ctx
	open, err := a.rt.journal.ToolCalls(ctx, a.id, messages.ToolStatePending, messages.ToolStateRunning)
	if err != nil {
		return fmt.Errorf("session %s: find leftover tools: %w", a.id, err)
	}
	// A question's call stays open: its answer is still awaited.
	open = slices.DeleteFunc(open, func(c persistence.ToolCall) bool {
		return a.core.State.QuestionCall(c.AssistantMessageID, c.CallID)
	})
	if len(open) == 0 && a.core.State.Row.Status != session.StatusBusy {
		return nil // a turn is only left unfinished by an owner that died mid-drain
	}
	history, err := a.history()
	if err != nil {
		return fmt.Errorf("session %s: find leftover turn: %w", a.id, err)
	}
	var unfinished []string
	for _, m := range history {
		if m.Role == messages.RoleAssistant && !m.Finished {
			unfinished = append(unfinished, m.ID)
		}
	}
	if len(open) == 0 && len(unfinished) == 0 {
		return nil
	}
	if len(open) > 0 {
		// A previous incarnation in this very process may still run them:
		// kill them before recording that they were interrupted.
		if loc, err := a.rt.resolveLocation(a.core.State.Row.Location); err == nil {
			_, _ = a.system.Root.RequestFuture(loc.tools, &toolactors.CancelTool{SessionID: a.id}, a.rt.cfg.RequestTimeout).Result()
		}
	}
	var evs []messages.Event
	if len(open) > 0 {
		// A permission request of a call that dies here can never be acted
		// on: close it, so that no client is shown it and a late reply is
		// refused as not pending rather than accepted and ignored.
		asked, err := a.rt.journal.PendingPermissions(ctx, a.id)
		if err != nil {
			return fmt.Errorf("session %s: find leftover permission requests: %w", a.id, err)
		}
		dying := map[string]bool{}
		for _, c := range open {
			dying[c.AssistantMessageID+"\x00"+c.CallID] = true
		}
		for _, p := range asked {
			if dying[p.AssistantMessageID+"\x00"+p.CallID] {
				evs = append(evs, messages.PermissionReplied{RequestID: p.RequestID, Reply: messages.ReplyReject, Feedback: LeftoverPermissionNote})
			}
		}
	}
	for _, c := range open {
		evs = append(evs, messages.ToolFailed{AssistantMessageID: c.AssistantMessageID, CallID: c.CallID, Error: InterruptedToolError})
	}
	for _, id := range unfinished {
		evs = append(evs, messages.TurnFailed{AssistantMessageID: id, ErrorKind: "interrupted", Message: why})
	}
	return a.append(evs...)
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
	case *Wake, *recoverSession:
	default:
		return
	}
	if errorCode(err) == CodeJournal {
		a.log.Error("session owes work but the journal refused its activation; it resumes once the journal accepts writes again", "session", a.id, "err", err)
		a.rt.waits.add(a.id, err, false)
	}
}
