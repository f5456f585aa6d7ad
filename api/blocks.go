package api

import (
	"time"

	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
)

// OpenCode's V2 wire opens every streamed block before its deltas and its
// end: session.next.text.started with a textID that the deltas and
// text.ended repeat (OpenCode's own reducer appends deltas by textID), the
// same for reasoning, and tool.input.started/ended before tool.called. The
// runtime journals only a block's end (TextEnded, ToolCalled) and streams
// deltas live, so the streams open the blocks themselves, once per block,
// from the events they carry.
//
// A turn has one text block and one reasoning block (the drain joins a
// turn's fragments), so their IDs derive from the assistant message ID:
// the same on a delta, on the durable end, in a replay and after a restart,
// and equal to the V1 part ID of the block.

func textID(assistantMessageID string) string { return v1PartID(assistantMessageID, v1PartText) }

func reasoningID(assistantMessageID string) string {
	return v1PartID(assistantMessageID, v1PartReasoning)
}

// turnBlocks is what one stream has opened of one turn.
type turnBlocks struct {
	text, reasoning bool
	inputs          map[string]uint8 // call ID → inputStarted | inputEnded
}

const (
	inputStarted uint8 = 1 << iota
	inputEnded
)

// blocks is one stream's record of open blocks, per assistant message;
// a turn's entry goes when the turn ends.
type blocks map[string]*turnBlocks

func (b blocks) turn(am string) *turnBlocks {
	t := b[am]
	if t == nil {
		t = &turnBlocks{inputs: map[string]uint8{}}
		b[am] = t
	}
	return t
}

// synthetic builds an opening event (no durable position: it is derived).
func synthetic(id, typ string, at time.Time, sessionID, am string, more ...field) wire.Event {
	var arr [6]field
	d := append(append(arr[:0], field{"timestamp", millis(at)}, field{"sessionID", sessionID}, field{"assistantMessageID", am}), more...)
	data, _ := appendFields(nil, d)
	return wire.Event{ID: id, Type: typ, Data: data}
}

// beforeDurable returns the opening events to write before env.
func (b blocks) beforeDurable(env messages.Envelope, now time.Time) []wire.Event {
	at := env.Time
	if at.IsZero() {
		at = now
	}
	id := func(n int) string { return eventID(env.SessionID, env.Seq) + "_open" + string(rune('0'+n)) }
	switch e := env.Event.(type) {
	case messages.TextEnded:
		t := b.turn(e.AssistantMessageID)
		if t.text {
			return nil
		}
		t.text = true
		return []wire.Event{synthetic(id(0), "session.next.text.started", at, env.SessionID, e.AssistantMessageID, field{"textID", textID(e.AssistantMessageID)})}
	case messages.ReasoningEnded:
		t := b.turn(e.AssistantMessageID)
		if t.reasoning {
			return nil
		}
		t.reasoning = true
		return []wire.Event{synthetic(id(0), "session.next.reasoning.started", at, env.SessionID, e.AssistantMessageID, field{"reasoningID", reasoningID(e.AssistantMessageID)})}
	case messages.ToolInputStarted:
		b.turn(e.AssistantMessageID).inputs[e.CallID] |= inputStarted
	case messages.ToolInputEnded:
		b.turn(e.AssistantMessageID).inputs[e.CallID] |= inputStarted | inputEnded
	case messages.ToolCalled:
		t := b.turn(e.AssistantMessageID)
		st := t.inputs[e.CallID]
		var out []wire.Event
		if st&inputStarted == 0 {
			out = append(out, synthetic(id(0), "session.next.tool.input.started", at, env.SessionID, e.AssistantMessageID, field{"callID", e.CallID}, field{"name", e.Tool}))
		}
		if st&inputEnded == 0 {
			out = append(out, synthetic(id(1), "session.next.tool.input.ended", at, env.SessionID, e.AssistantMessageID, field{"callID", e.CallID}, field{"text", string(e.Input)}))
		}
		delete(t.inputs, e.CallID)
		return out
	case messages.TurnEnded:
		delete(b, e.AssistantMessageID)
	case messages.TurnFailed:
		delete(b, e.AssistantMessageID)
	case messages.Idle, messages.Interrupted:
		clear(b)
	}
	return nil
}

// beforeDelta returns the opening event of the block d is the first
// fragment of.
func (b blocks) beforeDelta(d messages.Delta, now time.Time) []wire.Event {
	if d.AssistantMessageID == "" {
		return nil
	}
	switch d.Kind {
	case messages.TextDelta:
		t := b.turn(d.AssistantMessageID)
		if t.text {
			return nil
		}
		t.text = true
		return []wire.Event{synthetic(messages.NewID("evt"), "session.next.text.started", now, d.SessionID, d.AssistantMessageID, field{"textID", textID(d.AssistantMessageID)})}
	case messages.ReasoningDelta:
		t := b.turn(d.AssistantMessageID)
		if t.reasoning {
			return nil
		}
		t.reasoning = true
		return []wire.Event{synthetic(messages.NewID("evt"), "session.next.reasoning.started", now, d.SessionID, d.AssistantMessageID, field{"reasoningID", reasoningID(d.AssistantMessageID)})}
	}
	return nil
}
