package shell

import (
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
)

// summarize runs the summary request of the compaction whose
// CompactionStarted the core just wrote, off the mailbox
// (effect.Drain.Summarize), its text published live as it streams; its
// CompactionDone comes back through the mailbox.
func (a *sessionActor) summarize(sm *session.Summarize) {
	d := a.drain
	publish, sid := a.rt.Publish, a.id
	err := d.fx.Summarize(a.rt.Ctx, sm, func(delta string) {
		if publish != nil {
			publish(protocol.Live{SessionID: sid, Delta: &messages.Delta{SessionID: sid, Kind: messages.CompactionDelta, Text: delta}})
		}
	})
	if err != nil {
		a.endDrain(&protocol.Outcome{Err: err.Error(), Kind: session.Internal})
	}
}
