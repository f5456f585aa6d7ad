package shell

import (
	"errors"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/session"
)

// An activation is this actor's tenure as the session's owner: it begins
// with the journal's ownership and the state read with it (activate), and
// ends when the actor stops, or when the journal stops it (stop).

// activate acquires journal ownership and loads the session's state.
func (a *sessionActor) activate(ctx actor.Context) error {
	st, err := a.journal.Acquire()
	if err != nil {
		return err
	}
	a.core.State = st
	a.loaded = true
	if a.core.State.Exists {
		// A previous incarnation may have died mid-turn: settle what it
		// left before anything else can call a provider.
		why, policy, note := "session restarted", a.rt.Recovery, protocol.RestartNote
		if a.rt.DrainStopped(a.id) {
			// A journal failure stopped its drain here: it resumes
			// whatever the restart policy, which is about restarts. (A
			// session whose activation the journal refused at start-up
			// or a takeover waits too, but its owner died: the policy
			// applies.)
			why, policy, note = "the journal refused a write", protocol.RecoverResume, protocol.JournalNote
		}
		if err := a.failLeftovers(why); err != nil {
			return err
		}
		// A revert that died between its event and its files finishes now.
		if err := a.runRestore(); err != nil {
			a.log.Error("owed file restore failed; the next revert command retries it", "session", a.id, "err", err)
		}
		if a.core.State.Row.Status == session.StatusBusy {
			// Its owner died mid-drain (this actor's previous incarnation,
			// or another process): apply the restart policy once, now, so
			// that no command queued behind the activation sees it idle.
			if res, ok := a.recoverAfterRestart(policy, note).(error); ok {
				return res
			}
		}
	}
	return nil
}

// reload reads the state again, when this copy is in doubt.
func (a *sessionActor) reload() error {
	st, err := a.journal.Reload()
	if err == nil {
		a.core.State = st
	}
	return err
}

// stop ends this activation when the journal stopped it (err's fault,
// effect.JournalError; any other error stops nothing). Stale: another
// activation owns the session. Failed: the journal refused a write (a
// full disk, a lost database), so this one cannot know what it holds (an
// ambiguous commit may even have written). Either way a loaded activation
// abandons its drain, leaves the facade (the next command activates afresh
// and takes ownership back) and stops without writing. A session that
// owes work after a failure waits for the journal (Deps.WaitJournal),
// which resumes it as after a restart once the journal accepts writes
// again: its drain was running, the journal shows it mid-drain, or owed
// says so (the message whose activation failed was owed work, which
// nobody else would ask again).
func (a *sessionActor) stop(err error, owed bool) {
	je, ok := errors.AsType[*effect.JournalError](err)
	if !ok || (je.Fault != effect.JournalStale && je.Fault != effect.JournalFailed) {
		return
	}
	failed, drained := je.Fault == effect.JournalFailed, a.drain != nil
	owed = failed && (owed || drained || a.core.State.Row.Status == session.StatusBusy)
	why := error(je.Err) // a loaded activation hands on the journal's own words
	switch {
	case !a.loaded:
		why = err
		if owed {
			a.log.Error("session owes work but the journal refused its activation; it resumes once the journal accepts writes again", "session", a.id, "err", err)
		}
	case !failed:
		a.log.Warn("session activation fenced; stopping", "session", a.id, "err", je.Err)
	case owed:
		a.log.Error("session drain stopped: the journal refused a write; it resumes once the journal accepts writes again", "session", a.id, "err", je.Err)
	default:
		a.log.Warn("session append failed: the journal refused a write", "session", a.id, "err", je.Err)
	}
	if a.loaded {
		a.loaded = false
		if failed {
			a.abandon("journal: "+je.Err.Error(), session.Journal)
		} else {
			a.abandon("fenced", session.Fenced)
		}
		a.rt.Forget(a.id, a.self)
		a.idle.Stop()
		a.system.Root.Stop(a.self)
	}
	if owed {
		// Without a drain, the write that failed was this activation's
		// settling of a dead owner's drain: the restart policy still
		// applies when the journal comes back.
		a.rt.WaitJournal(a.id, why, drained)
	}
}
