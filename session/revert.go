package session

import (
	"fmt"

	"github.com/sessionrt/sessionrt/messages"
)

// A client's revert commands (RevertCommand: stage, commit, clear, show,
// diff) are decided here; the owner reads what a decision needs and does
// the file I/O (actors/effect revert.go). State.Reverts is the revert
// state, folded from the revert events (messages.Reverts).
//
// Facts first, then the decision, one step at a time. Before it steps a
// command the owner reads where its message is in the stream
// (RevertCommand.Message: a cheap journal look-up). The core answers with
// Ready.Revert, what the command needs next once Ready.Append is durable:
//   - Again: step the same command again: Append changed the state it is
//     decided from (a commit's RevertCommitted, a clear's RevertCleared, a
//     stage's RevertStaged). Every op is idempotent, so a command is
//     stepped until it answers: a commit steps to RevertCommitted, then to
//     its restore, then to the answer;
//   - Restore: run the file restore State.Reverts.Restore owes, step
//     RestoreDone (whose Append records it: RevertRestored), then the
//     command again. A restore a crash left owed is run before anything
//     else a command does (and at activation: FinishRestore);
//   - Read: read the snapshot facts of the session's files from a seq on
//     (SnapshotFacts: the journal's events, the Location's snapshot store;
//     a stage's Take reads every file, so they are read only once the
//     core asked), then step the command again with them;
//   - Answer: the command is over: answer it with the open revert and the
//     files Answer names.
//
// Nothing is kept between the steps of a command: each is decided from
// State and the facts in the input, which the owner reads right before
// (its mailbox holds every other message meanwhile). A crash between two
// steps leaves durable state the next command (or activation) continues
// from, as every op is idempotent: a committed revert whose restore a
// crash interrupted is finished at activation before anything else.

// RevertOp is a revert command's operation.
type RevertOp string

const (
	RevertStage  RevertOp = "stage"  // stage (or move) a revert to just before the message; nothing changes yet
	RevertCommit RevertOp = "commit" // restore the staged revert's files and hide its messages
	RevertClear  RevertOp = "clear"  // drop a staged revert, or undo a committed one
	RevertShow   RevertOp = "show"   // answer with the open revert
	RevertDiff   RevertOp = "diff"   // answer with the files the session changed (of the message's turns when set)
)

// MessageAt is where a message is in the session's stream (the journal's
// messages projection): the seq of the event that made it, its index
// there, and its role.
type MessageAt struct {
	Seq   int64
	Index int
	Role  messages.Role
}

// RevertCommand: a client's revert command. Message is where MessageID is
// in the stream, read by the owner before it steps (nil: MessageID is
// empty, or the session has no such message). Facts are the snapshot
// facts a Ready.Revert.Read asked for, read right before this step (nil
// otherwise).
type RevertCommand struct {
	Op        RevertOp
	MessageID string
	Message   *MessageAt
	Facts     *SnapshotFacts
}

// SnapshotFacts is what the owner read of the session's files over a
// span of its stream (RevertRead): the file snapshots its turns and tools
// recorded (filespan), asked of the Location's snapshot store. Empty when
// this server keeps no snapshots.
type SnapshotFacts struct {
	// From is the snapshot of the first turn at or after the span's start
	// ("" when none); FromMissing: the store does not hold it.
	From        string
	FromMissing bool
	// Current is the Location now (a stage's: taken once From is held),
	// and Files the paths the session's tools changed from From to it.
	Current string
	Files   []string
	// Lost: a tree of the span is not in the store (the store's error).
	Lost string
}

// RestoreDone: the owner ran the file restore a Ready.Revert.Restore asked
// for, to Tree. The core records it (RevertRestored) if it is still owed.
type RestoreDone struct{ Tree string }

// FinishRestore: the owner activated the session: a file restore a crash
// left owed (between a RevertCommitted or RevertCleared and its
// RevertRestored) is run now, before anything else (Ready.Revert.Restore).
type FinishRestore struct{}

func (RevertCommand) input() {}
func (RestoreDone) input()   {}
func (FinishRestore) input() {}

// RevertNext is what a revert command needs once Ready.Append is durable:
// exactly one of its fields is set (see the top of this file).
type RevertNext struct {
	Again   bool
	Restore *messages.Restore
	Read    *RevertRead
	Answer  *RevertAnswer
}

// RevertRead asks for the SnapshotFacts of the stream from Seq on: of a
// stage (From, Current, Files: what a revert to Seq would restore), or of
// a diff (Diff: the files the session changed from From, to the first
// turn after the next prompt when Bounded, or to the Location now; the
// owner keeps them for the answer, the core only decides from Lost).
type RevertRead struct {
	Seq     int64
	Bounded bool
	Diff    bool
}

// RevertFiles names the files a revert command's answer carries.
type RevertFiles uint8

const (
	FilesNone RevertFiles = iota
	FilesOpen             // what committing the open revert changes: its Files, from Current to Snapshot
	FilesDiff             // the session's diff, as its RevertRead read it
)

// RevertAnswer: answer the command with the session's row, the open
// revert (State.Reverts.Open) and Files.
type RevertAnswer struct{ Files RevertFiles }

func (c *Core) refuse(kind RefusalKind, format string, args ...any) Ready {
	return Ready{Refused: &Refusal{Kind: kind, Err: fmt.Sprintf(format, args...)}}
}

// revertNext is a revert command's events (written alone, as any client
// command's: command) and what it needs next.
func (c *Core) revertNext(n RevertNext, evs ...messages.Event) Ready {
	if len(evs) == 0 {
		return Ready{Revert: &n}
	}
	rd := c.command(evs...)
	rd.Revert = &n
	return rd
}

func (c *Core) stepRevert(in RevertCommand) Ready {
	s := &c.State
	if !s.Exists {
		return c.notFound()
	}
	id := s.Row.ID
	switch in.Op {
	case RevertShow:
		return c.revertNext(RevertNext{Answer: &RevertAnswer{}})
	case RevertDiff:
		return c.stepRevertDiff(in)
	case RevertStage, RevertCommit, RevertClear:
	default:
		return c.refuse(RefusedInvalid, "revert: unknown operation %q (want stage, commit, clear, show or diff)", in.Op)
	}
	if c.Drain != nil || s.Row.Status == StatusBusy {
		return c.refuse(RefusedBusy, "session %s is running; revert it when idle (or interrupt it first)", id)
	}
	if r := s.Reverts.Restore; r != nil {
		// Owed by a crash, or by this command's own commit or clear: it
		// is finished before anything else.
		rs := *r
		return c.revertNext(RevertNext{Restore: &rs})
	}
	o := s.Reverts.Open
	switch in.Op {
	case RevertStage:
		return c.stepStage(in)
	case RevertCommit:
		switch {
		case o == nil:
			return c.refuse(RefusedInvalid, "session %s has no staged revert to commit", id)
		case in.MessageID != "" && in.MessageID != o.MessageID:
			return c.refuse(RefusedConflict, "session %s: the staged revert is to %s, not %s", id, o.MessageID, in.MessageID)
		case !o.Committed:
			return c.revertNext(RevertNext{Again: true}, messages.RevertCommitted{MessageID: o.MessageID})
		}
	default: // RevertClear
		if o != nil {
			return c.revertNext(RevertNext{Again: true}, messages.RevertCleared{})
		}
	}
	return c.revertNext(RevertNext{Answer: &RevertAnswer{}})
}

// stepStage stages a revert to just before the message: it and everything
// after it would leave the history, and the files the session changed
// since go back to the snapshot of the first turn at or after it.
func (c *Core) stepStage(in RevertCommand) Ready {
	s := &c.State
	id, m := s.Row.ID, in.Message
	switch {
	case in.MessageID == "":
		return c.refuse(RefusedInvalid, "revert: a message ID is required")
	case m == nil:
		return c.refuse(RefusedNotFound, "session %s has no message %s", id, in.MessageID)
	case m.Role != messages.RoleUser && m.Role != messages.RoleAssistant:
		return c.refuse(RefusedInvalid, "revert: message %s is a %s message; revert to a user or assistant message", in.MessageID, m.Role)
	}
	if o := s.Reverts.Open; o != nil && o.MessageID == in.MessageID {
		return c.revertNext(RevertNext{Answer: &RevertAnswer{Files: FilesOpen}})
	}
	if hs := s.Row.HistorySeq; m.Seq < hs {
		// The history before a completed compaction is its summary: the
		// messages up to the boundary cannot be given back to the model.
		return c.refuse(RefusedConflict, "session %s: message %s is before the session's last compaction (seq %d), whose summary replaced it in the history; revert to a message after it", id, in.MessageID, hs)
	}
	if s.Reverts.Open != nil {
		// Moving a revert: undo the open one first, so the files and the
		// history start from where the session was.
		return c.revertNext(RevertNext{Again: true}, messages.RevertCleared{})
	}
	f := in.Facts
	switch {
	case f == nil:
		return c.revertNext(RevertNext{Read: &RevertRead{Seq: m.Seq}})
	case f.FromMissing:
		// Snapshots live in the data directory of the member holding the
		// Location; this one lost it (collected as too old, or the
		// directory was wiped).
		return c.refuse(RefusedConflict, "session %s: the file snapshot of message %s (%s) is not in this server's snapshot store (collected as too old, taken by another server, or its data directory was wiped); its files cannot be reverted", id, in.MessageID, f.From)
	case f.Lost != "":
		return c.snapshotLost(in.MessageID, f.Lost)
	}
	return c.revertNext(RevertNext{Again: true}, messages.RevertStaged{MessageID: in.MessageID, BoundarySeq: m.Seq, BoundaryIndex: m.Index,
		Snapshot: f.From, Current: f.Current, Files: f.Files})
}

// stepRevertDiff answers with what the session changed in its files: from
// the first turn's snapshot (of the message's turns when set) to the
// first turn after the next prompt, or to the Location now. It reads
// only, so a drain may run meanwhile.
func (c *Core) stepRevertDiff(in RevertCommand) Ready {
	seq, bounded := int64(1), false
	if in.MessageID != "" {
		if in.Message == nil {
			return c.refuse(RefusedNotFound, "session %s has no message %s", c.State.Row.ID, in.MessageID)
		}
		seq, bounded = in.Message.Seq, true
	}
	switch f := in.Facts; {
	case f == nil:
		return c.revertNext(RevertNext{Read: &RevertRead{Seq: seq, Bounded: bounded, Diff: true}})
	case f.Lost != "":
		return c.snapshotLost(in.MessageID, f.Lost)
	}
	return c.revertNext(RevertNext{Answer: &RevertAnswer{Files: FilesDiff}})
}

// snapshotLost refuses a revert or diff whose span names a tree the store
// lacks.
func (c *Core) snapshotLost(messageID, lost string) Ready {
	return c.refuse(RefusedConflict, "session %s: a file snapshot after message %s is not in this server's snapshot store (collected as too old, taken by another server, or its data directory was wiped); its files cannot be reverted: %s", c.State.Row.ID, messageID, lost)
}

func (c *Core) stepRestoreDone(in RestoreDone) Ready {
	if r := c.State.Reverts.Restore; r != nil && r.Tree == in.Tree {
		return c.command(messages.RevertRestored{Snapshot: in.Tree})
	}
	return Ready{}
}

func (c *Core) stepFinishRestore() Ready {
	if r := c.State.Reverts.Restore; c.State.Exists && r != nil {
		rs := *r
		return c.revertNext(RevertNext{Restore: &rs})
	}
	return Ready{}
}

// finalizeRevert is what a drain's start writes over a revert: a
// committed revert's messages leave the history for good, a staged one
// is dropped, and a restore still owed is given up (RevertFinalized).
// Every StartDrain has it in its Append (Step).
func (c *Core) finalizeRevert() []messages.Event {
	if c.State.Reverts.Open != nil || c.State.Reverts.Restore != nil {
		return []messages.Event{messages.RevertFinalized{}}
	}
	return nil
}
