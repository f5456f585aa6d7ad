package session

import (
	"testing"

	"github.com/sessionrt/sessionrt/messages"
)

// pendingCore is a session with an epoch and one pending prompt u1, its
// history loaded, between drains.
func pendingCore(t *testing.T) *Core {
	t.Helper()
	c := &Core{State: NewState("ses_1")}
	evs := []messages.Event{
		messages.SessionCreated{Location: "/p", Agent: "build"},
		messages.ContextEpochInitialized{Revision: 2, Baseline: "b", Location: "/p"},
		messages.PromptAdmitted{MessageID: "u1", Prompt: messages.Prompt{Text: "u1"}, Delivery: messages.Steer},
	}
	for i, ev := range evs {
		if err := c.State.Apply(int64(i+1), ev); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// carryCore is pendingCore in a drain.
func carryCore(t *testing.T) *Core {
	t.Helper()
	c := pendingCore(t)
	c.Drain = &Drain{Location: "/p"}
	return c
}

// TestFlushWritesWhatNoTurnWaitsFor: outside a turn being prepared, a
// promotion and context updates alone wait (only a turn's request acts on
// them); anything else carried is handed over, all of it. While a turn is
// prepared, or over and not closed yet, everything waits.
func TestFlushWritesWhatNoTurnWaitsFor(t *testing.T) {
	c := carryCore(t)
	c.Carry = []messages.Event{messages.PromptPromoted{MessageIDs: []string{"u1"}}, messages.ContextUpdated{MessageID: "ctx", Text: "s"}}
	if evs := c.Flush(); evs != nil || len(c.Carry) != 2 {
		t.Fatalf("a promotion and a context update alone: flushed %v, carry %v", evs, c.Carry)
	}
	c.Carry = append(c.Carry, messages.SessionRenamed{Title: "T"})
	c.Drain.carrying = true
	if evs := c.Flush(); evs != nil {
		t.Fatalf("while a turn is prepared: flushed %v", evs)
	}
	c.Drain.carrying = false
	c.Drain.Turn = &Turn{AssistantMessageID: "a1"} // over: its stream ended, nothing unsettled
	if evs := c.Flush(); evs != nil {
		t.Fatalf("while the turn is over and not closed: flushed %v", evs)
	}
	c.Drain.Turn = nil
	if evs := c.Flush(); len(evs) != 3 || c.Carry != nil {
		t.Fatalf("a title with them: flushed %v, carry %v", evs, c.Carry)
	}
}

// TestATurnBeingPreparedCarriesUntilItsTurnStarted: the boundary that
// calls makes the carry wait (Carrying) until the TurnStarted's Append
// takes it.
func TestATurnBeingPreparedCarriesUntilItsTurnStarted(t *testing.T) {
	c := carryCore(t)
	rd := c.Step(AtBoundary{})
	if rd.Observe == nil || !c.Drain.Carrying() || len(c.Carry) != 1 {
		t.Fatalf("the boundary promotes u1 and observes: %+v, carrying %v, carry %v", rd, c.Drain.Carrying(), c.Carry)
	}
	if rd := c.Step(ContextObserved{TurnLimit: 10}); rd.StartTurn == nil || !c.Drain.Carrying() {
		t.Fatalf("observed: %+v, carrying %v", rd, c.Drain.Carrying())
	}
	rd = c.Step(TurnBuilt{Started: messages.TurnStarted{AssistantMessageID: "a1"}, Limits: Limits{Window: 1 << 20}, Estimate: 1})
	if !rd.Stream || len(rd.Append) != 2 || c.Drain.Carrying() || c.Carry != nil {
		t.Fatalf("the TurnStarted takes the carry: %+v, carrying %v, carry %v", rd, c.Drain.Carrying(), c.Carry)
	}
}

// TestAHistoryAppliedAheadIsReadAgainWhenItsPromotionIsDropped: the owner
// built the turn's request from the history with the carried promotion
// applied ahead; the drain ends before the TurnStarted writes it (the
// prompt stays pending), so the history is unloaded. Written with its
// turn, it stays.
func TestAHistoryAppliedAheadIsReadAgainWhenItsPromotionIsDropped(t *testing.T) {
	for _, end := range []string{"interrupt", "abandon", "turn"} {
		c := carryCore(t)
		c.Step(AtBoundary{})
		c.Step(ContextObserved{TurnLimit: 10})
		if msgs := c.ApplyCarryAhead(); len(msgs) != 1 || msgs[0].ID != "u1" {
			t.Fatalf("the history applied ahead: %+v", msgs)
		}
		switch end {
		case "interrupt":
			rd := c.Step(Interrupt{})
			if rd.Outcome == nil || len(rd.Append) != 2 {
				t.Fatalf("interrupted: %+v", rd)
			}
		case "abandon":
			c.Abandon()
			if c.Carry != nil {
				t.Fatalf("abandoned with a carry: %v", c.Carry)
			}
		case "turn":
			rd := c.Step(TurnBuilt{Started: messages.TurnStarted{AssistantMessageID: "a1"}, Limits: Limits{Window: 1 << 20}, Estimate: 1})
			if !rd.Stream {
				t.Fatalf("the turn: %+v", rd)
			}
			c.Drain.Turn = nil
			c.Step(Interrupt{})
		}
		if loaded := c.State.History.Loaded; loaded != (end == "turn") {
			t.Fatalf("%s: history loaded %v", end, loaded)
		}
	}
}
