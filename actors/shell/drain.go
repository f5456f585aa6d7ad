package shell

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/render"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/telemetry"
)

// drain is the process-local span that promotes input and runs provider turns
// until nothing needs continuation. It has no durable identity. Its pure
// part (session.Drain: the Location it is fenced to, the turn allowance,
// continuation, interruption) is the core's (setDrain); the rest is what
// the shell needs to carry out the core's decisions.
type drain struct {
	session.Drain
	waiters      []*actor.PID // Run and WaitIdle callers
	interrupters []*actor.PID // Interrupt callers waiting for cleanup
	// fx is what the drain's executors keep between the core's effects
	// (its Location's registries, its agent as of the last boundary, the
	// catalog, the turn built and the turn in flight, the compaction, the
	// result it waits for), and its token.
	fx effect.Drain
}

// onDrainMessage takes the results the effect executors (actors/effect)
// post back. Each carries the token of the drain or turn that started the
// work; stale ones are dropped.
func (a *sessionActor) onDrainMessage(ctx actor.Context, msg any) {
	d := a.drain
	switch m := msg.(type) {
	case effect.Result:
		// The input it makes for the drain that asked for it
		// (effect.Drain.Take: the Location resolved, the context observed,
		// the catalog listed, the turn's snapshot taken, the summary done).
		if d == nil {
			return
		}
		if in := d.fx.Take(m); in != nil {
			a.execute(a.core.Step(in))
		}
	case *effect.ToolSnapshotted:
		a.execute(a.core.Step(m.In())) // dropped if its turn was abandoned
	case *effect.StreamPart:
		if d == nil || m.Token != d.fx.TurnToken() {
			return
		}
		a.onPart(m.Part)
	case *effect.StreamEnded:
		if d == nil || m.Token != d.fx.TurnToken() {
			return
		}
		a.onStreamEnded(m)
	case *toolSettled:
		a.onToolSettled(m)
	case *effect.PermissionAsk:
		a.onPermissionAsk(m)
	}
}

// startDrain starts the drain the core decided (waiter: the client that
// waits for its end, if any).
func (a *sessionActor) startDrain(sd session.StartDrain, waiter *actor.PID) {
	d := &drain{Drain: session.Drain{Location: a.core.State.Row.Location, RunOwed: sd.Run, Continuation: sd.Continue, Manual: sd.Manual}}
	rt, dir := a.rt, d.Location
	d.fx = effect.Drain{Token: nextToken(), Session: a.id, Location: dir, Post: effect.To(a.system, a.self), ReplyTo: a.self, Log: a.log, Publish: rt.Publish,
		Config:     func(agent string) (effect.Agent, error) { return rt.DrainAgent(dir, agent) },
		Registries: effect.Registries{System: a.system, Timeout: rt.RequestTimeout, Metrics: rt.Metrics}}
	if rt.TakesSnapshots {
		d.fx.Snapshots = rt.Snapshots
	}
	a.log.Debug("drain start", "session", a.id, "token", d.fx.Token, "run", sd.Run, "manual", sd.Manual, "pending", len(a.core.State.Pending))
	a.obs.DrainStarted(telemetry.WithTraceParent(a.rt.Ctx, a.drainTrace), a.core.State.Row.Agent, a.core.State.Row.Model)
	if waiter != nil {
		d.waiters = append(d.waiters, waiter)
	}
	a.setDrain(d)
	d.fx.Locate(func() (*actor.PID, *actor.PID, error) { return rt.ResolveLocation(dir) }, a.core.State.Row.Agent)
}

// setDrain makes d the drain in progress (nil: none), for the actor and
// for its core.
func (a *sessionActor) setDrain(d *drain) {
	a.drain = d
	if d == nil {
		a.core.Drain = nil
		return
	}
	a.core.Drain = &d.Drain
}

// execute carries out a Ready, in the order its durability rule asks: its
// Append in one journal transaction, then, only once the journal took it,
// the one effect it names. A failed append ends the drain with the error
// (or finds it already abandoned, when the append lost ownership).
func (a *sessionActor) execute(rd session.Ready) {
	d := a.drain
	err := a.write(rd.Append)
	a.obs.Settled(rd.Settled)
	for _, id := range rd.Closed {
		a.perms.Release(id) // its call settled first: nothing waits for a reply
	}
	if err != nil {
		a.appendFailed(d, rd, err)
		return
	}
	if te := rd.TurnEnd; d != nil && te != nil {
		d.fx.EndTurn(te.AssistantMessageID) // ended as the core says
	}
	a.obs.Ready(rd)
	a.publishLive(rd.Live)
	a.askTitle(rd.Title) // beside the turn, never in its way
	if rd.StartDrain != nil {
		a.startDrain(*rd.StartDrain, nil)
		return
	}
	if d == nil {
		return
	}
	for _, call := range rd.StartTools {
		a.startTool(call)
		if a.drain != d {
			return
		}
	}
	if rd.Cancel {
		// An interrupt is under way: the stream's end and the
		// settlements (or the compaction's CompactionDone, which stores
		// nothing) finish it.
		d.fx.Interrupt()
	}
	if rd.TurnOver {
		a.finishTurn()
		return
	}
	switch {
	case rd.Stop:
		// Shutting down: stop at this safe boundary without Idle, so the
		// session is found mid-drain and resumed by the next start.
		a.abandon("server shutting down", session.Fenced)
	case rd.Outcome != nil:
		// Its last events (Idle, after DrainFailed or Interrupted) are
		// written.
		a.closeDrain(&protocol.Outcome{Err: rd.Outcome.Err, Kind: rd.Outcome.Kind}, true)
	case rd.Stream:
		a.stream()
	case rd.Compact != nil:
		// The core plans it and writes its CompactionStarted
		// (Ready.Summarize), or decides what its failure means.
		a.execute(a.core.Step(d.fx.CompactionFacts(a.core.State.Row.Model, a.history)))
	case rd.Summarize != nil:
		// Off the mailbox, its text published live as it streams; its
		// CompactionDone comes back through the mailbox.
		if err := d.fx.Summarize(a.rt.Ctx, rd.Summarize); err != nil {
			a.endDrain(&protocol.Outcome{Err: err.Error(), Kind: session.Internal})
		}
	case rd.StartTurn != nil:
		// The last allowed turn is sent without tools; a turn whose
		// observation did not bring the catalog waits for it (Catalog).
		if tools, ok := d.fx.TurnTools(rd.StartTurn.Tools); ok {
			a.startTurn(tools)
		}
	case rd.Observe != nil:
		// The first complete observation (Init) initializes the epoch
		// before any input becomes model-visible: blocked context leaves
		// it pending.
		a.obs.Boundary(d.fx.Token, rd.Observe.Init, a.core.Carry)
		d.fx.Observe(rd.Observe.Init, rd.Observe.WithCatalog, a.core.State.Row.Agent)
	}
}

// appendFailed ends drain d (the one in progress when the append of rd
// began) with the append's error, or finds it already abandoned when the
// append lost ownership or the journal failed (abandon told its callers).
// If rd ended the drain, its last events were refused: the drain ends
// without them.
func (a *sessionActor) appendFailed(d *drain, rd session.Ready, err error) {
	if d == nil || a.drain != d {
		return
	}
	if out := rd.Outcome; out != nil {
		if out.Err != "" {
			a.closeDrain(&protocol.Outcome{Err: out.Err, Kind: out.Kind}, true)
		} else {
			a.closeDrain(failed(err), true)
		}
		return
	}
	a.endDrain(failed(err))
}

// startTurn builds the turn's request (effect.Drain.StartTurn) from the
// history as it is once what is carried is written (the very next append,
// TurnStarted, CompactionStarted or Idle, writes it) and hands it to the
// core with its file snapshot (TurnBuilt): it opens the turn (Ready.Stream:
// its TurnStarted is written with what was carried), compacts first when
// the request is over budget, or finishes an interrupt that came meanwhile.
// The snapshot is taken off the mailbox: no revert runs meanwhile (refused
// while a drain runs), and an interrupt finishes when it comes back.
func (a *sessionActor) startTurn(tools []provider.Tool) {
	d, st := a.drain, &a.core.State
	tr := render.Turn{Model: st.Row.Model, Baseline: st.Epoch.Baseline, Tools: tools, LastTurn: d.LastTurn}
	if in := d.fx.StartTurn(st.Row.Agent, tr, a.historyAhead); in != nil {
		a.execute(a.core.Step(in))
	}
}

// stream sends the built turn's request, once its TurnStarted is durable
// (effect.Drain.Stream: the turn is in flight until the core ends it).
func (a *sessionActor) stream() {
	d := a.drain
	if check := a.rt.CheckTurn; check != nil {
		b := d.fx.Built()
		check(a.id, a.journal.Seq(), &a.core.State, b.Turn, b.Req)
	}
	ts := d.fx.Stream(a.rt.Ctx, nextToken())
	a.obs.TurnStarted(ts.AssistantMessageID, ts.Agent, ts.Model)
}

// onPart hands a part of the stream, as effect.Stream decoded it, to the
// core: what is published live, what the turn accumulates and which calls
// are recorded and started is the core's (StreamPart).
func (a *sessionActor) onPart(p session.StreamPart) {
	a.fault(protocol.FaultMidStream)
	if p.Kind == 0 {
		return // nothing the core uses (effect.Decode)
	}
	a.execute(a.core.Step(p))
}

// publishLive hands the core's live deltas (Ready.Live) to the session's
// subscribers; they are never journaled.
func (a *sessionActor) publishLive(live []messages.Delta) {
	if a.rt.Publish == nil {
		return
	}
	for i := range live {
		a.rt.Publish(protocol.Live{SessionID: a.id, Delta: &live[i]})
	}
}

// startTool starts a call the journal recorded: the question tool is the
// session's own (the core journals the request, or fails the call: denied,
// or input that is not a list of questions; the call counts as settled for
// the turn), any other runs in the Location's tool registry, its one
// settlement coming back to this actor (onToolSettled).
func (a *sessionActor) startTool(ev messages.ToolCalled) {
	d := a.drain
	a.fault(protocol.FaultAfterToolCalled)
	if ev.Tool == protocol.QuestionTool {
		a.execute(a.core.Step(d.fx.Question(ev)))
		return
	}
	d.fx.StartTool(ev, a.obs.ToolStarted(ev.CallID, ev.Tool))
	if a.rt.Faults != nil {
		a.system.Root.Send(a.self, &midTool{token: d.fx.TurnToken()})
	}
}

// midTool gives a chaos run its chance to kill the actor while a tool runs.
type midTool struct{ token uint64 }

// onStreamEnded hands the stream's end to the core with the error the
// stream met, as its provider classified it: how the turn ends is the
// core's, once every call settled (finishTurn).
func (a *sessionActor) onStreamEnded(m *effect.StreamEnded) {
	a.drain.fx.EndStream()
	a.obs.StreamEnded(m.Err)
	a.execute(a.core.Step(m.In))
}

// finishTurn closes the turn once its stream is over and every tool
// settled: what to write and what follows is the core's (CloseTurn:
// TurnEnded, TurnFailed, an overflow's compaction); its chat span ends
// once that is written (execute: obs.Ready).
func (a *sessionActor) finishTurn() {
	if !a.drain.Interrupted {
		a.fault(protocol.FaultBeforeTurnEnd)
	}
	a.execute(a.core.Step(session.CloseTurn{}))
}

// endDrain ends the drain with an outcome the shell met (no provider for
// the model, a history it could not read): the core writes its end as any
// other (Abort), and closeDrain follows.
func (a *sessionActor) endDrain(out *protocol.Outcome) {
	if a.drain == nil {
		// A fenced append already abandoned the drain and stopped this
		// activation (stopFenced): nothing is left to end.
		return
	}
	if !a.loaded {
		a.abandon(out.Err, out.Kind)
		return
	}
	a.execute(a.core.Step(session.Abort{Outcome: session.Outcome{Kind: out.Kind, Err: out.Err}}))
}

// interrupt stops the active drain and answers when its cleanup is done.
func (a *sessionActor) interrupt(ctx actor.Context) {
	d := a.drain
	if d == nil {
		a.respond(ctx, &protocol.Done{LastSeq: a.journal.Seq()})
		return
	}
	if ctx.Sender() != nil {
		d.interrupters = append(d.interrupters, ctx.Sender())
	}
	if !d.Interrupted {
		a.execute(a.core.Step(session.Interrupt{Waiting: d.fx.Busy()}))
	}
}

// closeDrain is the one end of a drain, once its last events are written
// (written: the Ready's Append that ended it, Idle among them) or with
// nothing written (abandon): a turn or compaction still in flight stops,
// the spans and metrics close (obs.DrainEnded), and the drain's callers and
// interrupters are answered with out. A written end then steps
// DrainEnded: a wake that arrived meanwhile starts at most one follow-up
// drain (an interrupt suppressed those that came before it).
func (a *sessionActor) closeDrain(out *protocol.Outcome, written bool) {
	d := a.drain
	if d == nil {
		return
	}
	a.log.Debug("drain end", "session", a.id, "token", d.fx.Token, "outcome", out)
	d.fx.Stop()
	out.LastSeq = a.journal.Seq()
	a.setDrain(nil)
	a.obs.DrainEnded(session.Outcome{Kind: out.Kind, Err: out.Err}, d.Drain.Turn)
	a.lastOutcome = out
	for _, w := range d.waiters {
		a.system.Root.Send(w, out)
	}
	for _, w := range d.interrupters {
		a.system.Root.Send(w, &protocol.Done{LastSeq: a.journal.Seq()})
	}
	d.waiters, d.interrupters = nil, nil
	if !written {
		a.perms.CloseAll()
		return
	}
	// After an interrupt too: the interrupt cleared the wakes that came
	// before it (stepInterrupt), so what DrainEnded finds arrived during
	// its cleanup, e.g. a prompt admitted with resume, which nothing else
	// would wake.
	a.execute(a.core.Step(session.DrainEnded{}))
}

// abandon drops the drain without writing (the actor stops or lost
// ownership): work in flight is cancelled, callers are told with an
// Outcome of kind (session.Fenced, or session.Journal when the journal
// failed).
func (a *sessionActor) abandon(why string, kind session.OutcomeKind) {
	a.core.Abandon()
	a.closeDrain(&protocol.Outcome{Err: why, Kind: kind}, false)
}
