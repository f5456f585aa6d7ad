package actors

import (
	"context"
	"errors"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
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

// needsCompaction is the pre-turn budget check.
func (a *sessionActor) needsCompaction(req *provider.Request) bool {
	window, allowance := a.modelLimits(req)
	st := compaction.TurnState{Estimate: compaction.Estimate(req), Window: window, OutputAllowance: allowance, Compacted: a.drain.Compacted}
	return compaction.BeforeTurn(st, *a.rt.cfg.Compaction).Action == compaction.Compact
}

// startCompaction records the attempt and runs the summary request off the
// mailbox; its compactionDone comes back through the mailbox.
func (a *sessionActor) startCompaction(history []messages.Message, req *provider.Request, manual bool) error {
	d := a.drain
	window, allowance := a.modelLimits(req)
	cfg := *a.rt.cfg.Compaction
	if manual {
		cfg.Auto = true // a manual compaction is asked for explicitly
	}
	plan, err := compaction.NewPlan(compaction.Input{History: history, Model: req.Model, Window: window, OutputAllowance: allowance, Config: cfg})
	if err != nil {
		return err // nothing appended
	}
	prov, err := a.rt.provider(d.agent.models, a.core.State.Row.Model)
	if err != nil {
		return err
	}
	id := messages.NewID("cmp")
	if err := a.append(messages.CompactionStarted{CompactionID: id}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(a.rt.ctx)
	d.compacting = cancel
	d.busy = true
	token, system, self, bus, sid := d.token, a.system, a.self, a.rt.bus, a.id
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
	return nil
}

// onCompactionDone stores a completed compaction (the only event that
// changes the model-visible history) or nothing at all.
func (a *sessionActor) onCompactionDone(m *compactionDone) {
	d := a.drain
	d.busy = false
	d.compacting()
	d.compacting = nil
	if d.Interrupted {
		a.finishInterrupt()
		return
	}
	if m.err != nil {
		// The previous history boundary stays: no CompactionEnded.
		a.endDrain(&Outcome{Err: "compaction failed: " + m.err.Error(), Kind: "compaction"})
		return
	}
	if err := a.append(messages.CompactionEnded{CompactionID: m.id, Summary: m.summary, RecentContext: m.recent}); err != nil {
		a.endDrain(&Outcome{Err: err.Error(), Kind: errorCode(err)})
		return
	}
	d.Compacted = true
	if d.Manual {
		a.endDrain(nil)
		return
	}
	// The next attempt renders a fresh baseline from current context (the
	// reconcile sees the new history boundary), then sends the turn.
	a.observe(false, !d.LastTurn)
}

// compactOnOverflow decides what a context overflow of the turn t leads to.
// It reports whether a compaction was started (the turn will be retried).
func (a *sessionActor) compactOnOverflow(recorded bool) (bool, error) {
	dec := compaction.OnOverflow(compaction.OverflowState{DurableOutput: recorded, Compacted: a.drain.Compacted}, *a.rt.cfg.Compaction)
	if dec.Action == compaction.Fail {
		return false, dec.Err
	}
	history, err := a.history()
	if err != nil {
		return false, err
	}
	req := buildRequest(turnRequest{Model: a.core.State.Row.Model, Baseline: a.core.State.Epoch.Baseline, History: history})
	if err := a.startCompaction(history, req, false); err != nil {
		return false, errors.Join(compaction.ErrOverflow, err)
	}
	return true, nil
}

// manualCompaction runs a manual compaction as its own drain.
func (a *sessionActor) manualCompaction() {
	history, err := a.history()
	if err != nil {
		a.endDrain(&Outcome{Err: err.Error(), Kind: "internal"})
		return
	}
	baseline := ""
	if a.core.State.Epoch != nil {
		baseline = a.core.State.Epoch.Baseline
	}
	req := buildRequest(turnRequest{Model: a.core.State.Row.Model, Baseline: baseline, History: history})
	if err := a.startCompaction(history, req, true); err != nil {
		a.endDrain(&Outcome{Err: "compaction: " + err.Error(), Kind: "compaction"})
	}
}
