package middleware

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// Every message passes the middleware, so each costs one type switch and an
// interface assertion on the actor, and allocates nothing
// (TestMiddlewareAllocatesNothing; BenchmarkMiddleware: the three cost about
// 100 ns a message more than the idle timer's re-arm, which an actor would
// pay without them too). protoactor itself, once props have receiver
// middleware, wraps a message sent without an envelope (no sender, no
// header: stream parts, tool results, an actor's async results) in one
// (actorContext.processMessage, WrapEnvelope): one small allocation beside
// the message's own, which no middleware can avoid.

// PanicAnswerer is an actor that answers whoever waits on it when one of
// its handlers panics.
type PanicAnswerer interface {
	AnswerPanic(c actor.ReceiverContext, env *actor.MessageEnvelope, r any)
}

// RecoverPanics turns a handler's panic into error replies (the caller of
// the message, and whoever the actor says waits: no one waits for a
// timeout), then panics again so the supervisor restarts the actor, whose
// state is rebuilt from the journal, the only truth. The supervisor's
// restart never takes the process down.
func RecoverPanics(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		defer func() {
			if r := recover(); r != nil {
				if a, ok := c.Actor().(PanicAnswerer); ok {
					a.AnswerPanic(c, env, r)
				}
				panic(r)
			}
		}()
		next(c, env)
	}
}

// CountActive keeps g at the number of live incarnations: a restart
// (Restarting, then Started on the new one) leaves it as it was, a stop
// takes one off.
func CountActive(g *metrics.Gauge) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			switch env.Message.(type) {
			case *actor.Started:
				g.Inc()
			case *actor.Restarting, *actor.Stopped:
				g.Dec()
			}
			next(c, env)
		}
	}
}

// Idler is an actor that passivates once it received nothing for a while,
// behind TrackIdle (the Session actor; the cluster's grain shell).
type Idler interface {
	IdleTimer() *IdleTimer
	// IdleFor is told its timer fired with nothing received since. It
	// stops itself, or stays: rearm says whether the timer must be armed
	// again (false when what it waits for arrives as a message, which
	// arms it).
	IdleFor(c actor.ReceiverContext) (rearm bool)
}

// Passive is a message that is not activity (a read-only inspection):
// TrackIdle lets it through without arming the timer.
type Passive interface{ Passive() }

// TrackIdle arms the actor's idle timer at every message but a Passive
// one, stops it when the actor stops, and turns its current tick into
// IdleFor; the actor never sees an idleTick. An actor that is no Idler
// passes through.
func TrackIdle(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		a, ok := c.Actor().(Idler)
		if !ok {
			next(c, env)
			return
		}
		t := a.IdleTimer()
		switch m := env.Message.(type) {
		case idleTick:
			if t.fired(m) && a.IdleFor(c) {
				t.touch(c.ActorSystem(), c.Self())
			}
			return
		case Passive:
		case *actor.Stopping, *actor.Restarting, *actor.Stopped:
			t.Stop()
		default:
			t.touch(c.ActorSystem(), c.Self())
		}
		next(c, env)
	}
}
