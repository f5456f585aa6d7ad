package session

import (
	"slices"

	"github.com/sessionrt/sessionrt/messages"
)

// What the core carries (Core.Carry) and when it must be durable. Every
// Ready's Append begins with what it takes of the carry; the rest waits:
//
//   - for the TurnStarted of the turn a boundary decided to call, from the
//     Ready that says so (Observe, not Init, or StartTurn) until that
//     turn's Append (Drain.Carrying): a promotion, a context update, the
//     last turn's results and TurnEnded, a generated title;
//   - for the end of the turn in flight once it is over (Ready.TurnOver:
//     its last results and final text wait for the CloseTurn the owner
//     steps next);
//   - otherwise, a promotion and context updates alone still wait (only a
//     turn's request acts on them), and anything else is written before
//     the owner takes its next input: Flush hands it over.
//
// A promotion is written only with the TurnStarted of the turn that
// answers it (takeCarry): a drain that ends or stops before drops it
// (Step), and the prompt stays pending. An owner that builds the turn's
// request applies the carry to the history ahead of its append
// (ApplyCarryAhead); the core unloads that history when the promotion it
// shows is dropped, and when the owner abandons the drain (Abandon).

// Flush hands the owner what of the carry must be written before it takes
// its next input (the rule above): every carried event, unless a turn is
// being prepared or is over, or the carry is a promotion and context
// updates alone (nil: nothing to write).
func (c *Core) Flush() []messages.Event {
	if d := c.Drain; d != nil && (d.carrying || d.Turn != nil && !d.Turn.Streaming && d.Turn.Unsettled == 0) {
		return nil
	}
	for _, ev := range c.Carry {
		switch ev.(type) {
		case messages.PromptPromoted, messages.ContextUpdated, messages.ContextEpochReplaced:
		default:
			return c.takeCarryForTurn()
		}
	}
	return nil
}

// Leave hands the owner what to write as it stops (its actor is
// stopping), mid-drain or not: the carry, less a promotion, whose turn
// never starts here (the prompt stays pending for the next start, as
// Ready.Stop leaves it), so that a stopped drain is found mid-drain and
// resumed by the next start.
func (c *Core) Leave() []messages.Event {
	evs := withoutPromotion(c.Carry)
	c.Carry = nil
	return evs
}

// Abandon: the owner drops the drain without writing (it stops, lost
// ownership, or the journal refused a write). The carry is never written;
// a history that shows it applied ahead is unloaded (read again).
func (c *Core) Abandon() {
	h := &c.State.History
	if h.Through > c.State.Row.LastSeq || c.Drain != nil && c.Drain.promotedAhead {
		h.Unload()
	}
	c.Carry = nil
}

// ApplyCarryAhead applies the carry to the loaded history at the seqs the
// very next append gives it (State.ApplyAhead), for the request of the
// turn being prepared, whose TurnStarted writes it; it returns the
// history. If that append fails the owner unloads the history; if the
// drain ends before it, the core does (a promotion it shows is dropped).
func (c *Core) ApplyCarryAhead() []messages.Message {
	if len(c.Carry) > 0 {
		c.State.ApplyAhead(c.State.Row.LastSeq+1, c.Carry)
		if d := c.Drain; d != nil && slices.ContainsFunc(c.Carry, isPromotion) {
			d.promotedAhead = true
		}
	}
	return c.State.History.Msgs
}

// Carrying reports whether what is carried waits for the TurnStarted of
// the turn being prepared (the rule above).
func (d *Drain) Carrying() bool { return d.carrying }

// track keeps the drain's carry state after a step decided rd: a Ready
// that prepares a turn makes the carry wait for its TurnStarted, until an
// Append takes all of it; the turn's TurnStarted (Stream) writes a
// promotion applied ahead, and a drain that ends or stops drops it (the
// history that shows it is unloaded).
func (c *Core) track(rd Ready) {
	d := c.Drain
	if d == nil {
		return
	}
	if len(rd.Append) > 0 && len(c.Carry) == 0 {
		d.carrying = false
	}
	if rd.StartTurn != nil || rd.Observe != nil && !rd.Observe.Init {
		d.carrying = true
	}
	if rd.Stream {
		d.promotedAhead = false
	}
	if (rd.Outcome != nil || rd.Stop) && d.promotedAhead {
		d.promotedAhead = false
		c.State.History.Unload()
	}
}

// withoutPromotion is evs without its PromptPromoted events: what of the
// carried events an Append other than a turn's writes (takeCarry).
func withoutPromotion(evs []messages.Event) []messages.Event {
	out := evs[:0:0]
	for _, ev := range evs {
		if _, ok := ev.(messages.PromptPromoted); !ok {
			out = append(out, ev)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// takeCarry hands the carried events to an Append, less a promotion: a
// prompt is promoted only in the transaction of the TurnStarted that
// answers it (openTurn, takeCarryForTurn). A promotion written earlier
// (with a compaction's CompactionStarted or CompactionEnded, or a fresh
// baseline) would be durable with no turn answering it if the drain then
// ended (a failed compaction), and a compaction would summarize the prompt
// its turn is about to answer. It stays carried; an end of the drain
// before the turn drops it (Step), and the prompt stays pending.
func (c *Core) takeCarry() []messages.Event {
	evs := c.Carry
	c.Carry = nil
	if !slices.ContainsFunc(evs, isPromotion) {
		return evs
	}
	var out []messages.Event
	for _, ev := range evs {
		if isPromotion(ev) {
			c.Carry = append(c.Carry, ev)
		} else {
			out = append(out, ev)
		}
	}
	return out
}

func isPromotion(ev messages.Event) bool {
	_, ok := ev.(messages.PromptPromoted)
	return ok
}

// takeCarryForTurn hands every carried event, a promotion too, to the
// Append of the turn's TurnStarted.
func (c *Core) takeCarryForTurn() []messages.Event {
	evs := c.Carry
	c.Carry = nil
	return evs
}
