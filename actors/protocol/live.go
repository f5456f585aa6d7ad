package protocol

import (
	"time"

	"github.com/sessionrt/sessionrt/messages"
)

// Live is one item of the live stream: a durable event just committed, a
// live-only Delta that is never stored, or a live-only session status.
type Live struct {
	SessionID string
	Event     *messages.Envelope // set for durable events
	Delta     *messages.Delta    // set for live-only fragments
	Status    *SessionStatus     // set for live-only status notes (journal retries)
}

// SessionStatus is a live-only note about a session that no durable event
// can carry, because the journal is what failed: Type "retry" while its
// drain waits for the journal (Attempt attempts failed so far, the next one
// is due at Next), then "busy" once it was resumed.
type SessionStatus struct {
	Type    string
	Attempt int
	Message string
	Next    time.Time
}
