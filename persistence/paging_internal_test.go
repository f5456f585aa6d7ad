package persistence

import (
	"math/rand/v2"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
)

// visibleSpans is the complement of what Reverts.Hides hides, for random
// revert states: finalized ranges in any order, overlapping, empty or
// nested, with or without a committed (or only staged) revert.
func TestVisibleSpansAreWhatTheRevertsLeave(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 59))
	for n := 0; n < 5000; n++ {
		var rv messages.Reverts
		for i := rng.IntN(4); i > 0; i-- {
			rv.Hidden = append(rv.Hidden, messages.HiddenRange{FromSeq: rng.Int64N(20), FromIndex: rng.IntN(3), ToSeq: rng.Int64N(22)})
		}
		if rng.IntN(3) > 0 {
			rv.Open = &messages.Revert{BoundarySeq: rng.Int64N(22), BoundaryIndex: rng.IntN(3), Committed: rng.IntN(3) > 0}
		}
		spans := visibleSpans(&rv)
		for i := 1; i < len(spans); i++ {
			if !cursorBefore(spans[i-1].to, spans[i].from) || !spans[i-1].bounded {
				t.Fatalf("%+v: spans %+v not ordered and apart", rv, spans)
			}
		}
		for seq := int64(0); seq < 24; seq++ {
			for idx := 0; idx < 4; idx++ {
				at := Cursor{Seq: seq, Index: idx}
				in := 0
				for _, s := range spans {
					if !cursorBefore(at, s.from) && (!s.bounded || cursorBefore(at, s.to)) {
						in++
					}
				}
				if hidden := rv.Hides(messages.Message{Seq: seq, Index: idx}); (in == 1) == hidden || in > 1 {
					t.Fatalf("%+v: %v in %d of spans %+v, hidden %v", rv, at, in, spans, hidden)
				}
			}
		}
	}
}
