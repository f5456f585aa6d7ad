package compaction

import (
	"errors"
	"fmt"
)

// Action is what the drain does next.
type Action uint8

const (
	// Proceed: send the request as it is.
	Proceed Action = iota
	// Compact: plan and run a compaction, then rebuild the request from the
	// new history and send it (after an overflow: the one remaining attempt).
	Compact
	// Fail: end the turn with Decision.Err (terminal; nothing is retried).
	Fail
)

func (a Action) String() string {
	switch a {
	case Proceed:
		return "proceed"
	case Compact:
		return "compact"
	case Fail:
		return "fail"
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// Decision is an Action with the terminal error of a Fail.
type Decision struct {
	Action Action
	Err    error
}

// ErrOverflow is the terminal context-overflow failure of a turn; the
// wrapped message says why it was not recovered.
var ErrOverflow = errors.New("context overflow")

// TurnState is what BeforeTurn decides on.
type TurnState struct {
	Estimate        int // Estimate of the complete request about to be sent
	Window          int // the model's context window (0 unknown)
	OutputAllowance int
	// Compacted: a compaction already completed for this logical turn; a
	// second one would not shrink the history further, so the request goes
	// out and an overflow becomes terminal.
	Compacted bool
}

// BeforeTurn is the pre-turn check: Compact when the request is over budget
// and automatic compaction applies and has not yet run for this turn, else
// Proceed. (When NewPlan then answers ErrNothingToCompact, proceed.)
func BeforeTurn(s TurnState, cfg Config) Decision {
	if !s.Compacted && Needed(s.Estimate, s.Window, s.OutputAllowance, cfg) {
		return Decision{Action: Compact}
	}
	return Decision{Action: Proceed}
}

// OverflowState is what OnOverflow decides on.
type OverflowState struct {
	// DurableOutput: assistant output or tool activity of this turn is
	// already in the journal; retrying would replay it.
	DurableOutput bool
	// Compacted: a compaction already completed for this logical turn
	// (automatic or overflow-triggered).
	Compacted bool
}

// OnOverflow decides what a provider context overflow (provider.KindContextOverflow)
// leads to: exactly one compaction and one rebuilt attempt when nothing
// durable was produced, the turn was not compacted yet and Auto is on;
// otherwise a terminal error saying why. It never loops: a second overflow
// of the same logical turn always fails.
func OnOverflow(s OverflowState, cfg Config) Decision {
	switch {
	case s.DurableOutput:
		return fail("the provider rejected the request as too long after this turn had already recorded output; it is not retried, so no recorded work is replayed")
	case s.Compacted:
		return fail("the request still exceeds the model's context window after a compaction; it is not compacted again")
	case !cfg.Auto:
		return fail("the request exceeds the model's context window and compaction.auto is false; compact the session manually or enable compaction.auto")
	}
	return Decision{Action: Compact}
}

func fail(why string) Decision {
	return Decision{Action: Fail, Err: fmt.Errorf("%w: %s", ErrOverflow, why)}
}
