package shell

import (
	"errors"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/session"
)

// errorCode is the code a client hears for err: a journal call's by what
// its failure means (effect.JournalError), any other's protocol.ErrorCode.
func errorCode(err error) string {
	if je, ok := errors.AsType[*effect.JournalError](err); ok {
		return journalCode[je.Fault]
	}
	return protocol.ErrorCode(err)
}

var journalCode = [...]string{
	effect.JournalRefused:   protocol.CodeInternal,
	effect.JournalStale:     protocol.CodeFenced,
	effect.JournalFailed:    protocol.CodeJournal,
	effect.JournalDuplicate: protocol.CodeConflict,
	effect.JournalFull:      protocol.CodeBacklog,
}

// stale reports a journal call refused because another activation owns
// the session.
func stale(err error) bool {
	je, ok := errors.AsType[*effect.JournalError](err)
	return ok && je.Fault == effect.JournalStale
}

// commandError is how a failure of kind code is recorded (observe.Observer.Fail).
func commandError(code, msg string) error { return &protocol.CommandError{Code: code, Msg: msg} }

func invalidf(msg string) error { return &protocol.CommandError{Code: protocol.CodeInvalid, Msg: msg} }

// failed is the Outcome of a drain that ends with err.
func failed(err error) *protocol.Outcome {
	return &protocol.Outcome{Err: err.Error(), Kind: session.OutcomeKind(errorCode(err))}
}
