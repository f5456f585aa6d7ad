package actors

import (
	"context"
	"errors"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/render"
	"github.com/sessionrt/sessionrt/session"
)

// compactionDone is posted when a summary request finished (or failed).
type compactionDone struct {
	token   uint64
	id      string
	recent  string
	summary string
	err     error
}

// Compact asks for a manual compaction; the reply is the Outcome of the
// drain that runs it. Input admitted meanwhile waits, and is released by
// the follow-up drain whether the compaction succeeded or not.
type Compact struct{}

// modelLimits returns the context window and output allowance of the session's model.
func (a *sessionActor) modelLimits(req *provider.Request) (window, allowance int) {
	w, out, ok := a.rt.modelLimits(a.drain.agent.models, a.core.State.Row.Model)
	if !ok {
		return 0, 0
	}
	return w, compaction.OutputAllowance(req.Controls.MaxOutputTokens, out)
}

// overBudget reports whether req is over the model's budget with
// automatic compaction on (the core compacts once per logical turn).
func (a *sessionActor) overBudget(req *provider.Request) bool {
	if a.rt.cfg.Compaction == nil || !a.rt.cfg.Compaction.Auto {
		return false
	}
	window, allowance := a.modelLimits(req)
	return compaction.Needed(compaction.Estimate(req), window, allowance, *a.rt.cfg.Compaction)
}

// plannedCompaction is a compaction the core is about to start.
type plannedCompaction struct {
	id   string
	plan *compaction.Plan
	prov provider.Provider
}

// planCompaction plans the compaction the core asked for, from the
// history as it is once what the core carries is written (before a turn:
// the request built for it; after an overflow or for a manual compaction:
// the history without tools), and reports it to the core, which writes
// its CompactionStarted (Ready.Summarize) or decides what its failure
// means.
func (a *sessionActor) planCompaction(cause session.CompactionCause) {
	d := a.drain
	var history []messages.Message
	var req *provider.Request
	if b := d.next; cause == session.CompactBeforeTurn && b != nil {
		// The request was built with the carried promotion applied
		// ahead; the compaction's CompactionStarted is written without it
		// (the prompt follows the summary, promoted with its turn), so it
		// summarizes the history as written, without the prompt.
		history, req = a.withoutCarriedPromotion(b.tr.History), b.req
	} else {
		var err error
		if history, err = a.history(); err != nil {
			a.endDrain(&Outcome{Err: err.Error(), Kind: session.Internal})
			return
		}
		baseline := ""
		if a.core.State.Epoch != nil {
			baseline = a.core.State.Epoch.Baseline
		}
		req = render.Request(render.Turn{Model: a.core.State.Row.Model, Baseline: baseline, History: history})
	}
	window, allowance := a.modelLimits(req)
	cfg := *a.rt.cfg.Compaction
	if cause == session.CompactManual {
		cfg.Auto = true // a manual compaction is asked for explicitly
	}
	var in session.CompactionPlanned
	plan, err := compaction.NewPlan(compaction.Input{History: history, Model: req.Model, Window: window, OutputAllowance: allowance, Config: cfg})
	var prov provider.Provider
	if err == nil {
		prov, err = a.rt.provider(d.agent.models, a.core.State.Row.Model)
	}
	switch {
	case err != nil:
		in.Err, in.Nothing = err.Error(), errors.Is(err, compaction.ErrNothingToCompact)
	default:
		in.ID = messages.NewID("cmp")
		d.plan = &plannedCompaction{id: in.ID, plan: plan, prov: prov}
	}
	a.execute(a.core.Step(in))
}

// summarize runs the summary request of the compaction whose
// CompactionStarted the core just wrote, off the mailbox; its
// compactionDone comes back through the mailbox.
func (a *sessionActor) summarize(id string) {
	d := a.drain
	pc := d.plan
	d.plan = nil
	if pc == nil || pc.id != id {
		a.endDrain(&Outcome{Err: "compaction " + id + " was not planned", Kind: session.Internal})
		return
	}
	ctx, cancel := context.WithCancel(a.rt.ctx)
	d.compacting = cancel
	d.busy = true
	token, system, self, bus, sid := d.token, a.system, a.self, a.rt.bus, a.id
	prov, plan := pc.prov, pc.plan
	recent := plan.RecentContext
	go func() {
		summary, err := func() (s string, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = errors.New("summary request panicked")
				}
			}()
			return compaction.Summarize(ctx, prov, plan, func(delta string) {
				if bus != nil {
					bus.Publish(Live{SessionID: sid, Delta: &messages.Delta{SessionID: sid, Kind: messages.CompactionDelta, Text: delta}})
				}
			})
		}()
		system.Root.Send(self, &compactionDone{token: token, id: id, recent: recent, summary: summary, err: err})
	}()
}

// onCompactionDone hands the summary's result to the core: it stores a
// completed compaction (the only event that changes the model-visible
// history) or nothing at all.
func (a *sessionActor) onCompactionDone(m *compactionDone) {
	d := a.drain
	d.busy = false
	d.compacting()
	d.compacting = nil
	in := session.CompactionDone{ID: m.id, Summary: m.summary, RecentContext: m.recent}
	if m.err != nil {
		in.Err = m.err.Error()
	}
	a.execute(a.core.Step(in))
}
