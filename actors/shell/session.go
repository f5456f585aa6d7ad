package shell

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/actors/middleware"
	"github.com/sessionrt/sessionrt/actors/observe"
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/session"
)

// tokens are process-wide so that a continuation registered by a previous
// incarnation of an actor (protoactor keeps the PID across a restart) can
// never match the new incarnation's work.
var tokens atomic.Uint64

func nextToken() uint64 { return tokens.Add(1) }

// sessionActor is one Session. Its mailbox serializes everything the session
// does; every decision is the core's (session.Core.Step), the actor only
// writes what a Ready appends and hands its effects to the executors of
// actors/effect, whose results come back to the mailbox as inputs.
type sessionActor struct {
	id     string
	rt     *Deps
	self   *actor.PID
	system *actor.ActorSystem
	log    *slog.Logger

	loaded bool
	// journal is the session's journal as this activation owns it: the
	// ownership epoch that fences every write, the stream's last seq.
	journal effect.Journal
	// core is the session as a state machine: core.State is the session
	// as its events left it (the row, the pending inbox, the Context
	// Epoch, the model-visible history: history.go), advanced by the one
	// fold session.State.Apply after every append; core.Carry are events
	// decided but not yet appended (a Ready's Append writes them first, in
	// one transaction with its own: session/carry.go); core.Drain is the pure
	// part of the drain in progress (drain.Drain, set by setDrain). The
	// actor executes the Ready its Step returns (drain.go execute).
	core session.Core

	drain *drain
	obs   observe.Observer // the drains' spans and metrics
	// drainTrace is the traceparent of the prompt whose admission is
	// starting a drain right now (set around its wake): the drain's span
	// joins that trace.
	drainTrace string
	// lastOutcome is how the last drain of this activation ended.
	lastOutcome *protocol.Outcome
	idle        middleware.IdleTimer
	perms       effect.PermissionWaits // the running calls' permission asks waiting for a reply
	stopping    bool                   // the actor is stopping: no fault injection
}

// Receive handles one message. Panic recovery, the active-session gauge
// and idle tracking wrap it as receiver middleware (middleware.go).
func (a *sessionActor) Receive(ctx actor.Context) {
	if !a.core.Stopping && a.rt.Stopping.Load() {
		// The server began shutting down: the core hears it as an input
		// before this message, and stops every drain at its next safe
		// boundary.
		a.core.Step(session.Stopping{})
	}
	switch ctx.Message().(type) {
	case *actor.Started:
		a.self, a.system = ctx.Self(), ctx.ActorSystem()
		if err := a.activate(ctx); err != nil {
			a.log.Error("session activation failed", "session", a.id, "err", err)
		}
		return
	case *actor.Stopping:
		if a.loaded {
			// What is staged for the next turn is written, so that a
			// stopped drain is found mid-drain and resumed by the next
			// start, but a promotion: its turn never starts here, so the
			// prompt stays pending for the next start (as Ready.Stop
			// leaves it). No chaos fault fires while the actor stops.
			a.stopping = true
			_ = a.write(a.core.Leave())
		}
		a.abandon("session actor stopping", session.Fenced)
		return
	case *actor.Restarting:
		// The dying incarnation's stream and tools must not outlive it.
		a.abandon("session actor restarting", session.Fenced)
		return
	case *actor.Stopped:
		a.rt.Stopped(a.id, a.self)
		return
	case *protocol.Inspect:
		// Read-only: it neither activates nor counts as activity.
		ctx.Respond(a.inspection())
		return
	}
	if !a.loaded {
		if err := a.activate(ctx); err != nil {
			switch ctx.Message().(type) {
			case *protocol.Wake, *protocol.RecoverSession:
				// Owed work (a wake, start-up recovery): nobody else
				// would ask again.
				a.stop(err, true)
			}
			a.respond(ctx, err)
			return
		}
	}
	a.handle(ctx)
	// What the core says must be durable before the next message is.
	if err := a.write(a.core.Flush()); err != nil {
		a.log.Error("session append failed", "session", a.id, "err", err)
		if a.drain != nil {
			a.endDrain(failed(err))
		}
	}
}

func (a *sessionActor) handle(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *protocol.Create:
		a.respond(ctx, a.create(m))
	case *protocol.Prompt:
		a.respond(ctx, a.prompt(m))
	case *protocol.Run:
		a.run(ctx)
	case *protocol.Wake:
		a.execute(a.core.Step(session.Wake{Owed: m.Owed}))
		a.respond(ctx, &protocol.Done{LastSeq: a.journal.Seq()})
	case *protocol.Interrupt:
		a.interrupt(ctx)
	case *protocol.Move:
		a.respond(ctx, a.move(m))
	case *protocol.SwitchAgent:
		a.respond(ctx, a.switchAgent(m))
	case *protocol.SwitchModel:
		a.respond(ctx, a.switchModel(m))
	case *protocol.Rename:
		a.respond(ctx, a.rename(m))
	case *protocol.Delete:
		a.respond(ctx, a.deleteSession())
	case *protocol.ReplyPermission:
		a.respond(ctx, a.replyPermission(m))
	case *protocol.Revert:
		a.respond(ctx, a.revert(m))
	case *protocol.WaitIdle:
		if a.drain == nil {
			out := protocol.Outcome{LastSeq: a.journal.Seq()}
			if a.lastOutcome == nil {
				a.lastOutcome = a.journaledOutcome()
			}
			if a.lastOutcome != nil {
				out = *a.lastOutcome
				out.LastSeq = a.journal.Seq()
			}
			a.respond(ctx, &out)
			return
		}
		a.drain.waiters = append(a.drain.waiters, ctx.Sender())
	case *protocol.Compact:
		// A drain of its own (the core's StartDrain, Manual), which the
		// client waits for; its Append finalizes an open revert.
		rd := a.core.Step(session.CompactCommand{})
		if r := rd.Refused; r != nil {
			a.respond(ctx, refused(r))
		} else if err := a.write(rd.Append); err != nil {
			a.respond(ctx, err)
		} else {
			a.startDrain(*rd.StartDrain, ctx.Sender())
		}
	case *effect.Titled:
		a.onTitled(m)
	case *protocol.RecoverSession:
		a.respond(ctx, a.recoverAfterRestart(m.Policy, protocol.RestartNote))
	case *midTool:
		if d := a.drain; d != nil && d.fx.TurnToken() == m.token && d.Turn != nil && d.Turn.Unsettled > 0 {
			a.fault(protocol.FaultMidTool)
		}
	default:
		a.onDrainMessage(ctx, m)
	}
}

// respond answers the sender, if any; errors travel as values.
func (a *sessionActor) respond(ctx actor.Context, res any) {
	if ctx.Sender() == nil {
		return
	}
	if err, ok := res.(error); ok && err != nil {
		ctx.Respond(&protocol.CommandError{Msg: err.Error(), Code: errorCode(err)})
		return
	}
	ctx.Respond(res)
}

// AnswerPanic answers the sender of the message a handler panicked on and
// the drain's waiters with the error (recoverPanics, which then lets the
// supervisor restart the actor).
func (a *sessionActor) AnswerPanic(c actor.ReceiverContext, env *actor.MessageEnvelope, r any) {
	a.log.Error("session actor panicked", "session", a.id, "panic", r, "stack", string(debug.Stack()))
	root := c.ActorSystem().Root
	if env.Sender != nil {
		root.Send(env.Sender, &protocol.CommandError{Msg: fmt.Sprintf("session %s: internal error: %v", a.id, r), Code: protocol.CodeInternal})
	}
	if a.drain != nil {
		for _, w := range a.drain.waiters {
			root.Send(w, &protocol.Outcome{Err: fmt.Sprintf("internal error: %v", r), Kind: "internal", LastSeq: a.journal.Seq()})
		}
		a.drain.waiters = nil
	}
}

// write appends events (a Ready's Append, which begins with what the
// core carried; what it Flushes or Leaves) in one transaction fenced by
// this activation's ownership (effect.Journal), folds them into the
// state, publishes them and fires the chaos faults their facts stand for.
// When the journal stops the activation (stale, or failed), it stops.
func (a *sessionActor) write(events []messages.Event) error {
	if len(events) == 0 {
		return nil
	}
	first, err := a.journal.Append(events...)
	if err != nil {
		// Nothing was written (or, on an ambiguous failure, the next append
		// conflicts): either way the in-memory history may be ahead.
		a.core.State.History.Unload()
		a.stop(err, false)
		return err
	}
	promoted, settled := false, false
	for i, ev := range events {
		seq := first + int64(i)
		a.fold(seq, ev)
		a.publish(seq, ev)
		switch ev.(type) {
		case messages.PromptPromoted:
			promoted = true
		case messages.ToolSucceeded, messages.ToolFailed:
			settled = true
		}
	}
	// Chaos faults fire once the fact is durable, whatever it was batched with.
	if promoted {
		a.fault(protocol.FaultAfterPromotion)
	}
	if settled && a.drain != nil {
		a.fault(protocol.FaultAfterSettlement)
	}
	return nil
}

// fold applies an event the journal took at seq to the state. The journal
// checked it against the same rows, so a refusal means this copy is wrong:
// it is read again.
func (a *sessionActor) fold(seq int64, ev messages.Event) {
	if err := a.core.State.Apply(seq, ev); err != nil {
		a.log.Error("session state does not fold a written event; reading it again", "session", a.id, "err", err)
		if err := a.reload(); err != nil {
			a.log.Error("session reload failed", "session", a.id, "err", err)
		}
	}
}

// row is the session's row as the API shows it.
func (a *sessionActor) row() persistence.Session { return Row(&a.core.State) }

// Row is the sessions row of a session's state, as the API shows it.
func Row(st *session.State) persistence.Session {
	r := st.Row
	return persistence.Session{ID: r.ID, Location: r.Location, Agent: r.Agent, Model: r.Model, Title: r.Title, Status: persistence.Status(r.Status),
		CreatedSeq: r.CreatedSeq, HistorySeq: r.HistorySeq, LastSeq: r.LastSeq}
}

func (a *sessionActor) publish(seq int64, ev messages.Event) {
	if a.rt.Publish == nil {
		return
	}
	a.rt.Publish(protocol.Live{SessionID: a.id, Event: &messages.Envelope{SessionID: a.id, Seq: seq, Type: ev.EventType(), Event: ev}})
}

func (a *sessionActor) IdleTimer() *middleware.IdleTimer { return &a.idle }

// IdleFor passivates the session when nothing runs and nothing is asked of
// it: a drain or a permission request waits for messages, which re-arm the
// timer; a request in flight keeps it (the timer is armed again).
func (a *sessionActor) IdleFor(c actor.ReceiverContext) (rearm bool) {
	if a.drain != nil || a.perms.Len() > 0 {
		return false
	}
	if a.rt.TryPassivate(a.id, c.Self()) {
		a.idle.Stop()
		c.ActorSystem().Root.Stop(c.Self())
		return false
	}
	return true
}

// journaledOutcome is how the session's last drain ended as its journal
// says (effect.Ended), for a WaitIdle on an activation that ran no drain
// itself (after a restart or a passivation); nil when it ended normally
// or cannot be read.
func (a *sessionActor) journaledOutcome() *protocol.Outcome {
	if !a.core.State.Exists {
		return nil
	}
	if msg, kind, ok := a.journal.Ended(); ok {
		return &protocol.Outcome{Err: msg, Kind: kind, LastSeq: a.journal.Seq()}
	}
	return nil
}
