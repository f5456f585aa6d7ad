package shell

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

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

	loaded    bool
	seq       int64 // the stream's last seq as this owner knows it
	ownership int64 // journal ownership epoch: every append is fenced by it
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
			a.owedWhileJournalFails(ctx.Message(), err)
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
		a.respond(ctx, &protocol.Done{LastSeq: a.seq})
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
			out := protocol.Outcome{LastSeq: a.seq}
			if a.lastOutcome == nil {
				a.lastOutcome = a.journaledOutcome()
			}
			if a.lastOutcome != nil {
				out = *a.lastOutcome
				out.LastSeq = a.seq
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
			a.respond(ctx, &protocol.CommandError{Code: refusalCode[r.Kind], Msg: r.Err})
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
		ctx.Respond(&protocol.CommandError{Msg: err.Error(), Code: protocol.ErrorCode(err)})
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
			root.Send(w, &protocol.Outcome{Err: fmt.Sprintf("internal error: %v", r), Kind: "internal", LastSeq: a.seq})
		}
		a.drain.waiters = nil
	}
}

// activate acquires journal ownership and loads the session's state.
func (a *sessionActor) activate(ctx actor.Context) error {
	// The sessions row comes with the ownership, read in its transaction
	// (a new stream: none to read); the rest of the state is read below.
	own, sess, found, err := a.rt.Journal.AcquireSession(a.rt.Ctx, a.id, a.rt.Owner)
	if err != nil {
		if journalFailed(err) && a.rt.Ctx.Err() == nil {
			return &protocol.CommandError{Code: protocol.CodeJournal, Msg: fmt.Sprintf("session %s: acquire: %v", a.id, err)}
		}
		return fmt.Errorf("session %s: acquire: %w", a.id, err)
	}
	a.ownership, a.seq = own.Epoch, own.LastSeq
	if err := a.load(sess, found); err != nil {
		return err
	}
	a.loaded = true
	if a.core.State.Exists {
		// A previous incarnation may have died mid-turn: settle what it
		// left before anything else can call a provider.
		why, policy, note := "session restarted", a.rt.Recovery, protocol.RestartNote
		if a.rt.DrainStopped(a.id) {
			// A journal failure stopped its drain here: it resumes
			// whatever the restart policy, which is about restarts. (A
			// session whose activation the journal refused at start-up
			// or a takeover waits too, but its owner died: the policy
			// applies.)
			why, policy, note = "the journal refused a write", protocol.RecoverResume, protocol.JournalNote
		}
		if err := a.failLeftovers(why); err != nil {
			return err
		}
		// A revert that died between its event and its files finishes now.
		if err := a.runRestore(); err != nil {
			a.log.Error("owed file restore failed; the next revert command retries it", "session", a.id, "err", err)
		}
		if a.core.State.Row.Status == session.StatusBusy {
			// Its owner died mid-drain (this actor's previous incarnation,
			// or another process): apply the restart policy once, now, so
			// that no command queued behind the activation sees it idle.
			if res, ok := a.recoverAfterRestart(policy, note).(error); ok {
				return res
			}
		}
	}
	return nil
}

// reload reads the projections this actor keeps in memory.
func (a *sessionActor) reload() error {
	sess, found, err := effect.Row(a.rt.Ctx, a.rt.Journal, a.id)
	if err != nil {
		return fmt.Errorf("session %s: %w", a.id, err)
	}
	return a.load(sess, found)
}

// load takes sess (found false: the session was never created) as the
// sessions row and reads the rest of what this actor keeps in memory
// (effect.Load).
func (a *sessionActor) load(sess persistence.Session, found bool) error {
	if !found {
		a.core.State.Exists = false
		return nil
	}
	if sess.LastSeq > a.seq {
		a.seq = sess.LastSeq
	}
	st, err := effect.Load(a.rt.Ctx, a.rt.Journal, sess)
	if err != nil {
		return fmt.Errorf("session %s: %w", a.id, err)
	}
	a.core.State = st
	if st.History.Loaded {
		a.rt.HistoryLoads.Add(1)
	}
	return nil
}

// write appends events (a Ready's Append, which begins with what the
// core carried; what it Flushes or Leaves) in one transaction fenced by
// this activation's ownership, and applies them to the in-memory state. On
// a fence or conflict the activation is stale: it stops, and the next
// command re-activates from the journal.
func (a *sessionActor) write(events []messages.Event) error {
	if len(events) == 0 {
		return nil
	}
	start := time.Now()
	last, err := a.rt.Journal.Append(a.rt.Ctx, a.id, a.seq, a.ownership, events...)
	if m := a.rt.Metrics; m != nil {
		m.JournalAppended(time.Since(start))
		if err == nil {
			m.JournalBatch(len(events))
		} else if errors.Is(err, persistence.ErrFenced) {
			m.JournalFenced()
		}
	}
	if err != nil {
		// Nothing was written (or, on an ambiguous failure, the next append
		// conflicts): either way the in-memory history may be ahead.
		a.core.State.History.Unload()
		if errors.Is(err, persistence.ErrFenced) || errors.Is(err, persistence.ErrConflict) {
			a.log.Warn("session activation fenced; stopping", "session", a.id, "err", err)
			a.stopFenced()
			return fmt.Errorf("session %s: %w: %v", a.id, protocol.ErrOwnershipMoved, err)
		}
		if journalFailed(err) && a.rt.Ctx.Err() == nil {
			a.stopJournalFailed(err)
			return &protocol.CommandError{Code: protocol.CodeJournal, Msg: fmt.Sprintf("session %s: append: %v", a.id, err)}
		}
		return fmt.Errorf("session %s: append: %w", a.id, err)
	}
	a.rt.Appends.Add(1)
	first := a.seq + 1
	a.seq = last
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

// stopJournalFailed stops an activation whose append the journal refused
// (a full disk, a lost database): it cannot know what the journal holds
// (an ambiguous commit may even have written), so, like a fenced one, it
// leaves the facade and stops without writing. A session that owes work —
// its drain was running, or the journal shows it mid-drain — waits for the
// journal (Deps.WaitJournal), which resumes it as after a restart once the
// journal accepts writes again.
func (a *sessionActor) stopJournalFailed(err error) {
	drained := a.drain != nil
	owed := drained || a.core.State.Row.Status == session.StatusBusy
	if owed {
		a.log.Error("session drain stopped: the journal refused a write; it resumes once the journal accepts writes again", "session", a.id, "err", err)
	} else {
		a.log.Warn("session append failed: the journal refused a write", "session", a.id, "err", err)
	}
	a.loaded = false
	a.abandon("journal: "+err.Error(), session.Journal)
	a.rt.Forget(a.id, a.self)
	a.idle.Stop()
	a.system.Root.Stop(a.self)
	if owed {
		// Without a drain, the write that failed was this activation's
		// settling of a dead owner's drain: the restart policy still
		// applies when the journal comes back.
		a.rt.WaitJournal(a.id, err, drained)
	}
}

// stopFenced stops an activation that lost ownership. It leaves the facade
// first, so the next command activates afresh and takes ownership back.
func (a *sessionActor) stopFenced() {
	a.loaded = false
	a.abandon("fenced", session.Fenced)
	a.rt.Forget(a.id, a.self)
	a.idle.Stop()
	a.system.Root.Stop(a.self)
}

// journaledOutcome is how the session's last drain ended as its journal
// says (effect.Ended), for a WaitIdle on an activation that ran no drain
// itself (after a restart or a passivation); nil when it ended normally
// or cannot be read.
func (a *sessionActor) journaledOutcome() *protocol.Outcome {
	if !a.core.State.Exists {
		return nil
	}
	if msg, kind, ok := effect.Ended(a.rt.Ctx, a.rt.Journal, a.id, a.seq); ok {
		return &protocol.Outcome{Err: msg, Kind: kind, LastSeq: a.seq}
	}
	return nil
}
