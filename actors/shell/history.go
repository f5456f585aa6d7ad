package shell

import (
	"github.com/sessionrt/sessionrt/messages"
)

// The actor keeps the journal's model-visible history in a.core.State.History
// (session.History), between turns, so that building a request reads
// nothing. It is complete from the session's creation by this actor, else
// loaded from the journal once per activation (or after anything made it
// doubtful), and advanced by the events this actor itself appends through
// the one fold, session.State.Apply. The actor is the session's only
// writer, so the copy cannot miss an event; when in doubt (an append that
// failed, an event a loaded copy cannot model) it is unloaded and read
// again.

// history returns the model-visible history, reading it from the journal
// when the in-memory copy is not loaded. The slice is the actor's own: use
// it on the actor goroutine only, and do not keep it.
func (a *sessionActor) history() ([]messages.Message, error) {
	if !a.core.State.History.Loaded {
		h, err := a.journal.History()
		if err != nil {
			return nil, err
		}
		a.core.State.History = h
	}
	return a.core.State.History.Msgs, nil
}

// historyAhead is the history with what the core carries applied at the
// seqs the very next append gives it (session.Core.ApplyCarryAhead): the
// turn's request shows what its TurnStarted makes durable.
func (a *sessionActor) historyAhead() ([]messages.Message, error) {
	if _, err := a.history(); err != nil {
		return nil, err
	}
	return a.core.ApplyCarryAhead(), nil
}
