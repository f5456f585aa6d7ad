package actors

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/filespan"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/session"
)

// Revert operations (Revert.Op).
const (
	// RevertStage stages (or moves) a revert to just before MessageID and
	// answers with the files it would change. Nothing changes yet.
	RevertStage = "stage"
	// RevertCommit restores the staged revert's files and hides its
	// messages from the history and the next model request.
	RevertCommit = "commit"
	// RevertClear drops a staged revert or undoes a committed one.
	RevertClear = "clear"
	// RevertShow answers with the open revert, changing nothing.
	RevertShow = "show"
	// RevertDiff answers with the files the session changed (those of the
	// turns that answered MessageID when it is set), from its snapshots.
	RevertDiff = "diff"
)

// Fault points of a revert (tests): not in FaultPoints, which are a
// drain's, in the order a turn passes them.
const (
	FaultRevertCommitted FaultPoint = "revert-committed" // the commit is durable, no file restored
	FaultMidRestore      FaultPoint = "mid-restore"      // the first file of an owed restore is restored, the others not
)

// Revert is one revert command. Each is idempotent: a retried stage of the
// same message, commit of a committed revert or clear with nothing open
// answers the state as it is and writes nothing.
type Revert struct {
	Op        string
	MessageID string
}

// RevertInfo answers Revert: the open revert (nil when none) and the files
// (stage: what a commit would change, current → reverted; diff: what the
// session changed).
type RevertInfo struct {
	Session persistence.Session
	Open    *messages.Revert
	Files   []filesnap.FileDiff
}

// Revert runs one revert command.
func (s *Sessions) Revert(ctx context.Context, id string, r Revert) (*RevertInfo, error) {
	res, err := s.ask(ctx, id, &r, s.rt.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return res.(*RevertInfo), nil
}

func (a *sessionActor) revert(m *Revert) any {
	if !a.core.State.Exists {
		return a.notFound()
	}
	switch m.Op {
	case RevertShow:
		return a.revertInfo(nil)
	case RevertDiff:
		files, err := a.sessionDiff(m.MessageID)
		if err != nil {
			return err
		}
		return a.revertInfo(files)
	case RevertStage, RevertCommit, RevertClear:
	default:
		return invalidf(fmt.Sprintf("revert: unknown operation %q (want stage, commit, clear, show or diff)", m.Op))
	}
	if a.drain != nil || a.core.State.Row.Status == session.StatusBusy {
		return &CommandError{Code: CodeBusy, Msg: fmt.Sprintf("session %s is running; revert it when idle (or interrupt it first)", a.id)}
	}
	// A restore a crash left owed is finished before anything else.
	if err := a.runRestore(); err != nil {
		return err
	}
	switch m.Op {
	case RevertStage:
		return a.stageRevert(m.MessageID)
	case RevertCommit:
		o := a.core.State.Reverts.Open
		if o == nil {
			return invalidf(fmt.Sprintf("session %s has no staged revert to commit", a.id))
		}
		if m.MessageID != "" && m.MessageID != o.MessageID {
			return &CommandError{Code: CodeConflict, Msg: fmt.Sprintf("session %s: the staged revert is to %s, not %s", a.id, o.MessageID, m.MessageID)}
		}
		if !o.Committed {
			if err := a.append(messages.RevertCommitted{MessageID: o.MessageID}); err != nil {
				return err
			}
			a.fault(FaultRevertCommitted)
			if err := a.runRestore(); err != nil {
				return err
			}
		}
		return a.revertInfo(nil)
	default: // RevertClear
		if err := a.clearRevert(); err != nil {
			return err
		}
		return a.revertInfo(nil)
	}
}

func (a *sessionActor) revertInfo(files []filesnap.FileDiff) *RevertInfo {
	info := &RevertInfo{Session: a.row(), Files: files}
	if o := a.core.State.Reverts.Open; o != nil {
		c := *o
		info.Open = &c
	}
	return info
}

func (a *sessionActor) clearRevert() error {
	if a.core.State.Reverts.Open == nil {
		return nil
	}
	if err := a.append(messages.RevertCleared{}); err != nil {
		return err
	}
	return a.runRestore()
}

// stageRevert stages a revert to just before messageID: that message and
// everything after it would leave the history, and the files the session
// changed since go back to the snapshot of the first turn at or after it.
func (a *sessionActor) stageRevert(messageID string) any {
	if messageID == "" {
		return invalidf("revert: a message ID is required")
	}
	seq, idx, role, err := a.rt.journal.MessagePosition(a.rt.ctx, a.id, messageID)
	if errors.Is(err, persistence.ErrNotFound) {
		return &CommandError{Code: CodeNotFound, Msg: fmt.Sprintf("session %s has no message %s", a.id, messageID)}
	} else if err != nil {
		return err
	}
	if role != messages.RoleUser && role != messages.RoleAssistant {
		return invalidf(fmt.Sprintf("revert: message %s is a %s message; revert to a user or assistant message", messageID, role))
	}
	if o := a.core.State.Reverts.Open; o != nil {
		if o.MessageID == messageID {
			return a.revertInfo(a.revertFiles(o))
		}
		// Moving a committed revert: undo it first, so the files and the
		// history start from where the session was.
		if err := a.clearRevert(); err != nil {
			return err
		}
	}
	if hs := a.core.State.Row.HistorySeq; seq < hs {
		// The history before a completed compaction is its summary: the
		// messages up to the boundary cannot be given back to the model.
		return &CommandError{Code: CodeConflict, Msg: fmt.Sprintf(
			"session %s: message %s is before the session's last compaction (seq %d), whose summary replaced it in the history; revert to a message after it", a.id, messageID, hs)}
	}
	loc := a.core.State.Row.Location
	st, err := a.rt.snapshots(loc)
	if err != nil {
		return fmt.Errorf("session %s: revert: %w", a.id, err)
	}
	ev := messages.RevertStaged{MessageID: messageID, BoundarySeq: seq, BoundaryIndex: idx}
	if st != nil {
		span, err := a.fileSpan(st, seq, false)
		if err != nil {
			return a.snapshotErr(messageID, err)
		}
		ev.Snapshot = span.From
		if ev.Snapshot != "" {
			if ok, err := st.Has(ev.Snapshot); err != nil {
				return fmt.Errorf("session %s: revert: %w", a.id, err)
			} else if !ok {
				// Snapshots live in the data directory of the member
				// holding the Location; this one lost it (collected as
				// too old, or the directory was wiped).
				return &CommandError{Code: CodeConflict, Msg: fmt.Sprintf(
					"session %s: the file snapshot of message %s (%s) is not in this server's snapshot store (collected as too old, taken by another server, or its data directory was wiped); its files cannot be reverted", a.id, messageID, ev.Snapshot)}
			}
			if ev.Current, err = st.Take(loc); err != nil {
				return fmt.Errorf("session %s: snapshot %s: %w", a.id, loc, err)
			}
			if ev.Files, err = span.Changed(ev.Snapshot, ev.Current); err != nil {
				return a.snapshotErr(messageID, err)
			}
		}
	}
	if err := a.append(ev); err != nil {
		return err
	}
	return a.revertInfo(a.revertFiles(a.core.State.Reverts.Open))
}

// revertFiles is what committing o changes: its files from the current
// snapshot to the reverted one.
func (a *sessionActor) revertFiles(o *messages.Revert) []filesnap.FileDiff {
	if o == nil || o.Snapshot == "" || len(o.Files) == 0 {
		return nil
	}
	st, err := a.rt.snapshots(a.core.State.Row.Location)
	if st == nil || err != nil {
		return nil
	}
	files, err := st.Diff(o.Current, o.Snapshot, o.Files)
	if err != nil {
		a.log.Warn("revert diff", "session", a.id, "err", err)
		return nil
	}
	return files
}

// snapshotErr is a store's error as the revert answers it: a missing
// tree is a conflict naming the message.
func (a *sessionActor) snapshotErr(messageID string, err error) error {
	if errors.Is(err, filesnap.ErrNotFound) {
		return &CommandError{Code: CodeConflict, Msg: fmt.Sprintf(
			"session %s: a file snapshot after message %s is not in this server's snapshot store (collected as too old, taken by another server, or its data directory was wiped); its files cannot be reverted: %v", a.id, messageID, err)}
	}
	return fmt.Errorf("session %s: revert: %w", a.id, err)
}

// runRestore runs the file restore a revert event owes, then records that
// it finished. It is idempotent, so a crash anywhere in it is repaired by
// running it again (activation does).
func (a *sessionActor) runRestore() error {
	r := a.core.State.Reverts.Restore
	if r == nil {
		return nil
	}
	loc, files := a.core.State.Row.Location, r.Files
	st, err := a.rt.snapshots(loc)
	if err != nil {
		return fmt.Errorf("session %s: restore files: %w", a.id, err)
	}
	if st == nil {
		return &CommandError{Code: CodeInternal, Msg: fmt.Sprintf("session %s: a file restore is owed but this server keeps no snapshots", a.id)}
	}
	if len(files) > 1 {
		if err := st.Restore(loc, r.Tree, files[:1]); err != nil {
			return fmt.Errorf("session %s: restore files: %w", a.id, err)
		}
		a.fault(FaultMidRestore)
		files = files[1:]
	}
	if err := st.Restore(loc, r.Tree, files); err != nil {
		return fmt.Errorf("session %s: restore files: %w", a.id, err)
	}
	return a.append(messages.RevertRestored{Snapshot: r.Tree})
}

// fileSnapshot snapshots dir for a TurnStarted or a tool's settlement: ""
// when this server keeps none or the Location cannot be read (the turn
// goes on; only a revert to it loses its files). It blocks: it runs off
// the mailbox, and reads nothing of the actor's state.
func (a *sessionActor) fileSnapshot(dir string) string {
	st, err := a.rt.snapshots(dir)
	id := ""
	if err == nil && st != nil {
		id, err = st.Take(dir)
	}
	switch {
	case errors.Is(err, filesnap.ErrTooManyFiles):
		a.log.Debug("no file snapshot", "session", a.id, "err", err) // not a project: expected, every turn
	case err != nil:
		a.log.Warn("file snapshot failed", "session", a.id, "dir", dir, "err", err)
	}
	return id
}

// finalizeRevert is called when a drain starts: a committed revert's
// messages leave the history for good, a staged one is dropped.
func (a *sessionActor) finalizeRevert() {
	if a.core.State.Reverts.Open != nil || a.core.State.Reverts.Restore != nil {
		a.stage(messages.RevertFinalized{})
	}
}

// fileSpan folds the session's events from seq on (up to the end of the
// span when bounded) into the files its tools changed (filespan).
func (a *sessionActor) fileSpan(st SnapshotStore, seq int64, bounded bool) (*filespan.Span, error) {
	sp := filespan.New(st, seq, bounded)
	for after := seq - 1; after < a.seq; {
		evs, err := a.rt.journal.ReadEvents(a.rt.ctx, a.id, after, 500)
		if err != nil {
			return nil, fmt.Errorf("session %s: read events: %w", a.id, err)
		}
		if len(evs) == 0 {
			break
		}
		for _, env := range evs {
			after = env.Seq
			if done, err := sp.Add(env.Seq, env.Event); err != nil || done {
				return sp, err
			}
		}
	}
	return sp, nil
}

// sessionDiff is what the session changed in its files: from the first
// turn's snapshot (of messageID's turns when set) to the first turn after
// the next prompt, or to the Location now; only the files its tools
// changed.
func (a *sessionActor) sessionDiff(messageID string) ([]filesnap.FileDiff, error) {
	loc := a.core.State.Row.Location
	st, err := a.rt.snapshots(loc)
	if st == nil || err != nil {
		return nil, err
	}
	seq, bounded := int64(1), false
	if messageID != "" {
		s, _, _, perr := a.rt.journal.MessagePosition(a.rt.ctx, a.id, messageID)
		if errors.Is(perr, persistence.ErrNotFound) {
			return nil, &CommandError{Code: CodeNotFound, Msg: fmt.Sprintf("session %s has no message %s", a.id, messageID)}
		} else if perr != nil {
			return nil, perr
		}
		seq, bounded = s, true
	}
	sp, err := a.fileSpan(st, seq, bounded)
	if err != nil {
		return nil, a.snapshotErr(messageID, err)
	}
	if sp.From == "" {
		return nil, nil
	}
	to := sp.To
	if to == "" {
		if to, err = st.Take(loc); err != nil {
			return nil, fmt.Errorf("session %s: snapshot %s: %w", a.id, loc, err)
		}
	}
	if err := sp.Close(to); err != nil {
		return nil, a.snapshotErr(messageID, err)
	}
	only := sp.Paths()
	if len(only) == 0 {
		return nil, nil
	}
	files, err := st.Diff(sp.From, to, only)
	if err != nil {
		return nil, a.snapshotErr(messageID, err)
	}
	return files, nil
}
