package protocol

import "fmt"

// FaultPoint names a place in the drain where a chaos run may kill the
// Session actor (a panic: protoactor drops the message and restarts the
// actor, which rebuilds itself from the journal).
type FaultPoint string

// The named fault points, in the order a turn passes them.
const (
	FaultAfterAdmission  FaultPoint = "after-admission"   // the prompt is durable, the receipt not yet sent
	FaultAfterPromotion  FaultPoint = "after-promotion"   // the user message is durable (with the TurnStarted it opens, or the previous turn's end), the request not sent
	FaultMidStream       FaultPoint = "mid-stream"        // a provider stream is open
	FaultAfterToolCalled FaultPoint = "after-tool-called" // the call is durable, not yet started
	FaultMidTool         FaultPoint = "mid-tool"          // a tool runs
	FaultAfterSettlement FaultPoint = "after-settlement"  // the result is durable (a turn's last one with its TurnEnded and the next TurnStarted)
	FaultBeforeTurnEnd   FaultPoint = "before-turn-end"   // everything settled; the last results and TurnEnded, written together later, are not
)

// FaultPoints lists every fault point.
var FaultPoints = []FaultPoint{FaultAfterAdmission, FaultAfterPromotion, FaultMidStream, FaultAfterToolCalled, FaultMidTool, FaultAfterSettlement, FaultBeforeTurnEnd}

// InjectedFault is the panic value of an injected fault.
type InjectedFault struct {
	Point   FaultPoint
	Session string
}

func (f InjectedFault) String() string {
	return fmt.Sprintf("injected fault %s in session %s", f.Point, f.Session)
}
