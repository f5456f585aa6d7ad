package shell

import (
	"context"
	"errors"

	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/session"
)

// journalFailed reports an append error that is the journal's own failure
// (the database refused or lost the write), as opposed to a refusal of
// what was written (fenced, conflicting, an event a projection refuses,
// one that does not encode), which would fail the same way again.
func journalFailed(err error) bool {
	switch {
	case errors.Is(err, persistence.ErrFenced), errors.Is(err, persistence.ErrConflict),
		errors.Is(err, persistence.ErrProjection), errors.Is(err, persistence.ErrInvalidEvent),
		errors.Is(err, persistence.ErrPromptConflict), errors.Is(err, persistence.ErrBacklogFull),
		errors.Is(err, context.Canceled):
		return false
	}
	return true
}

// commandError is how a failure of kind code is recorded (observe.Observer.Fail).
func commandError(code, msg string) error { return &protocol.CommandError{Code: code, Msg: msg} }

func invalidf(msg string) error { return &protocol.CommandError{Code: protocol.CodeInvalid, Msg: msg} }

// failed is the Outcome of a drain that ends with err.
func failed(err error) *protocol.Outcome {
	return &protocol.Outcome{Err: err.Error(), Kind: session.OutcomeKind(protocol.ErrorCode(err))}
}
