package protocol

import (
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
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
