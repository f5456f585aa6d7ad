package shell

import (
	"fmt"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
)

// maxRevertSteps bounds the steps of one revert command: the longest (a
// stage that moves a committed revert over a restore a crash left owed)
// takes six.
const maxRevertSteps = 8

// revert is the shell of a revert command (session/revert.go decides):
// read the message's position, then step the core until it answers,
// writing each Ready's Append and running what its Revert asks for (the
// executors of actors/effect revert.go). They run on the mailbox: the
// command holds the session (a drain cannot start meanwhile) until it
// answers.
func (a *sessionActor) revert(m *protocol.Revert) any {
	in := session.RevertCommand{Op: session.RevertOp(m.Op), MessageID: m.MessageID}
	if m.MessageID != "" && (m.Op == protocol.RevertStage || m.Op == protocol.RevertDiff) {
		at, err := a.journal.Message(m.MessageID)
		if err != nil {
			return err
		}
		in.Message = at
	}
	var diff []filesnap.FileDiff
	for range maxRevertSteps {
		rd := a.core.Step(in)
		in.Facts = nil
		if r := rd.Refused; r != nil {
			return refused(r)
		}
		if err := a.write(rd.Append); err != nil {
			return err
		}
		for _, ev := range rd.Append {
			if _, ok := ev.(messages.RevertCommitted); ok {
				a.fault(protocol.FaultRevertCommitted)
			}
		}
		switch n := rd.Revert; {
		case n == nil:
		case n.Answer != nil:
			return a.revertInfo(n.Answer.Files, diff)
		case n.Restore != nil:
			if err := a.restore(*n.Restore); err != nil {
				return err
			}
		case n.Read != nil:
			loc := a.core.State.Row.Location
			st, err := a.rt.Snapshots(loc)
			var f session.SnapshotFacts
			if err == nil {
				f, diff, err = effect.ReadSnapshots(st, a.journal.Events, loc, a.journal.Seq(), *n.Read)
			}
			if err != nil {
				return fmt.Errorf("session %s: revert: %w", a.id, err)
			}
			in.Facts = &f
		}
	}
	return &protocol.CommandError{Code: protocol.CodeInternal, Msg: fmt.Sprintf("session %s: revert %s did not answer in %d steps", a.id, m.Op, maxRevertSteps)}
}

// revertInfo answers a revert command with the open revert and the files
// the core named.
func (a *sessionActor) revertInfo(files session.RevertFiles, diff []filesnap.FileDiff) *protocol.RevertInfo {
	info := &protocol.RevertInfo{Session: a.row()}
	o := a.core.State.Reverts.Open
	if o != nil {
		c := *o
		info.Open = &c
	}
	switch files {
	case session.FilesDiff:
		info.Files = diff
	case session.FilesOpen:
		st, err := a.rt.Snapshots(a.core.State.Row.Location)
		if err == nil {
			info.Files, err = effect.RevertFiles(st, o)
		}
		if err != nil {
			a.log.Warn("revert diff", "session", a.id, "err", err)
		}
	}
	return info
}

// runRestore finishes a file restore a crash left owed (the core says
// which: FinishRestore); activation runs it before anything else.
func (a *sessionActor) runRestore() error {
	if n := a.core.Step(session.FinishRestore{}).Revert; n != nil && n.Restore != nil {
		return a.restore(*n.Restore)
	}
	return nil
}

// restore runs a file restore the core asked for (effect.Restore), then
// writes what the core records of it (RevertRestored).
func (a *sessionActor) restore(r messages.Restore) error {
	loc := a.core.State.Row.Location
	st, err := a.rt.Snapshots(loc)
	if err == nil {
		err = effect.Restore(st, loc, r, func() { a.fault(protocol.FaultMidRestore) })
	}
	if err != nil {
		return fmt.Errorf("session %s: %w", a.id, err)
	}
	return a.write(a.core.Step(session.RestoreDone{Tree: r.Tree}).Append)
}
