package protocol

import (
	"errors"

	"github.com/sessionrt/sessionrt/persistence"
)

// Error codes callers (the HTTP API, the CLI) branch on.
const (
	CodeInvalid  = "invalid"   // malformed command
	CodeNotFound = "not_found" // no such session or request
	CodeConflict = "conflict"  // an ID reused with other content
	CodeBacklog  = "backlog"   // the inbox is full
	CodeFenced   = "fenced"    // the activation lost ownership; retry
	CodeBusy     = "busy"      // the session is running and the command needs it idle
	CodeJournal  = "journal"   // the journal refused a write (full disk, lost database); retry later
	CodeInternal = "internal"
)

// CommandError is how a Session actor refuses a command. It is a value so
// that it crosses the mailbox (and later the cluster) intact.
type CommandError struct {
	Code string
	Msg  string
}

func (e *CommandError) Error() string { return e.Msg }

// Is lets callers match with the sentinels below.
func (e *CommandError) Is(target error) bool {
	t, ok := target.(*CommandError)
	return ok && t.Msg == "" && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrInvalid  = &CommandError{Code: CodeInvalid}
	ErrNotFound = &CommandError{Code: CodeNotFound}
	ErrConflict = &CommandError{Code: CodeConflict}
	ErrBacklog  = &CommandError{Code: CodeBacklog}
	ErrFenced   = &CommandError{Code: CodeFenced}
	ErrBusy     = &CommandError{Code: CodeBusy}
	ErrJournal  = &CommandError{Code: CodeJournal}
)

// ErrNoTitles: the Location's configuration turns titles off
// (Deps.TitleModel answers it).
var ErrNoTitles = errors.New("titles are off (agent.title.disable)")

// ErrOwnershipMoved stops an activation that lost ownership: another
// activation (a cluster member, or a newer incarnation here) appended
// since.
var ErrOwnershipMoved = errors.New("session ownership moved to another activation")

// ErrorCode is the code of err callers branch on (CodeInternal when it
// is none of the others).
func ErrorCode(err error) string {
	var ce *CommandError
	switch {
	case errors.As(err, &ce):
		return ce.Code
	case errors.Is(err, persistence.ErrNotFound):
		return CodeNotFound
	case errors.Is(err, persistence.ErrPromptConflict):
		return CodeConflict
	case errors.Is(err, persistence.ErrBacklogFull):
		return CodeBacklog
	case errors.Is(err, ErrOwnershipMoved), errors.Is(err, persistence.ErrFenced), errors.Is(err, persistence.ErrConflict):
		return CodeFenced
	}
	return CodeInternal
}
