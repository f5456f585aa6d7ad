package session

import (
	"errors"
	"fmt"

	"github.com/sessionrt/sessionrt/messages"
)

// Pending is one admitted, not yet promoted input as the decisions see it.
type Pending struct {
	MessageID string
	Seq       int64
	Delivery  messages.Delivery
}

// Boundary is what the drain knows at a safe provider-turn boundary: after
// input promotion would happen and every started tool has settled.
type Boundary struct {
	Pending      []Pending // admission order
	Continuation bool      // the last provider turn needs an answer (tool results to send back)
	RunOwed      bool      // an explicit run has not had its provider attempt yet
	TurnsUsed    int       // provider turns since the allowance was last reset
	TurnLimit    int       // the effective agent's limit; <= 0 means DefaultTurnLimit
}

// DefaultTurnLimit is OpenCode's per-agent provider-turn allowance per activity.
const DefaultTurnLimit = 25

// ErrTurnLimit ends a drain that still has work after its last allowed turn.
var ErrTurnLimit = errors.New("maximum provider turns reached with work remaining")

// Step is the decision taken at a boundary.
type Step struct {
	Promote   []string // message IDs to promote now, in admission order
	TurnsUsed int      // the allowance after promotion (reset once when anything is promoted)
	Call      bool     // make a provider request
	LastTurn  bool     // the request is the last allowed: no tools, tell the model the maximum was reached
	Err       error    // the drain must fail with this error instead of calling
}

// Decide is the drain's boundary rule, free of I/O:
//   - every pending steer is promoted, together, in admission order;
//   - a queued input is promoted only when the activity has settled (no
//     continuation) and no steer is pending, and then only the oldest one;
//   - promoting anything resets the turn allowance once;
//   - the provider is called when there is a continuation, a promotion, or an
//     explicit run still owed its attempt; otherwise the drain stops;
//   - the last allowed turn is sent without tools; past it, remaining work fails.
func Decide(b Boundary) Step {
	limit := b.TurnLimit
	if limit <= 0 {
		limit = DefaultTurnLimit
	}
	var promote []string
	for _, p := range b.Pending {
		if p.Delivery == messages.Steer {
			promote = append(promote, p.MessageID)
		}
	}
	if len(promote) == 0 && !b.Continuation {
		for _, p := range b.Pending {
			if p.Delivery == messages.Queue {
				promote = append(promote, p.MessageID)
				break
			}
		}
	}
	s := Step{Promote: promote, TurnsUsed: b.TurnsUsed}
	if len(promote) > 0 {
		s.TurnsUsed = 0
	}
	if !b.Continuation && len(promote) == 0 && !b.RunOwed {
		return s
	}
	if s.TurnsUsed >= limit {
		s.Err = fmt.Errorf("%w (limit %d)", ErrTurnLimit, limit)
		return s
	}
	s.Call = true
	s.LastTurn = s.TurnsUsed == limit-1
	return s
}

// MaxStepsInstruction is appended to the last allowed provider turn, which is sent without tools.
const MaxStepsInstruction = "Maximum steps reached for this activity. Tools are disabled: reply with a summary of what was done and what remains, without calling tools."
