package actors

import (
	"context"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
)

// Compact asks for a manual compaction; the reply is the Outcome of the
// drain that runs it. Input admitted meanwhile waits, and is released by
// the follow-up drain whether the compaction succeeded or not.
type Compact struct{}

// limits returns the session's model's limits (zero when unknown).
func (a *sessionActor) limits() session.Limits {
	w, out, _ := a.rt.modelLimits(a.drain.agent.models, a.core.State.Row.Model)
	return session.Limits{Window: w, Output: out}
}

// compactionFacts hands the core what the compaction it decided is planned
// from (Ready.Compact): the history loaded, the model's limits, and an ID;
// the core plans it and writes its CompactionStarted (Ready.Summarize), or
// decides what its failure means. The summary's provider is looked up
// here, as a missing one fails the planning.
func (a *sessionActor) compactionFacts() {
	d := a.drain
	if _, err := a.history(); err != nil {
		a.endDrain(&Outcome{Err: err.Error(), Kind: session.Internal})
		return
	}
	in := session.CompactionFacts{Limits: a.limits()}
	prov, err := a.rt.provider(d.agent.models, a.core.State.Row.Model)
	if err != nil {
		in.Err = err.Error()
	} else {
		in.ID = messages.NewID("cmp")
		d.summarizer = prov
	}
	a.execute(a.core.Step(in))
}

// summarize runs the summary request of the compaction whose
// CompactionStarted the core just wrote, off the mailbox (effect.Summarize);
// its Summarized comes back through the mailbox (onCompactionDone).
func (a *sessionActor) summarize(sm *session.Summarize) {
	d := a.drain
	prov, plan, id := d.summarizer, sm.Plan, sm.ID
	d.summarizer = nil
	if prov == nil || plan == nil {
		a.endDrain(&Outcome{Err: "compaction " + id + " was not planned", Kind: session.Internal})
		return
	}
	ctx, cancel := context.WithCancel(a.rt.ctx)
	d.compacting = cancel
	d.busy = true
	bus, sid := a.rt.bus, a.id
	effect.Summarize(ctx, prov, plan, d.token, id, func(delta string) {
		if bus != nil {
			bus.Publish(Live{SessionID: sid, Delta: &messages.Delta{SessionID: sid, Kind: messages.CompactionDelta, Text: delta}})
		}
	}, a.post())
}

// onCompactionDone hands the summary's result to the core: it stores a
// completed compaction (the only event that changes the model-visible
// history) or nothing at all.
func (a *sessionActor) onCompactionDone(m *effect.Summarized) {
	d := a.drain
	d.busy = false
	d.compacting()
	d.compacting = nil
	in := session.CompactionDone{ID: m.ID, Summary: m.Summary, RecentContext: m.Recent}
	if m.Err != nil {
		in.Err = m.Err.Error()
	}
	a.execute(a.core.Step(in))
}
