package middleware

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// middlewareCtx is the little of a receiver context the middleware reads.
type middlewareCtx struct {
	actor.ReceiverContext // nil: only the methods below are called
	a                     actor.Actor
	system                *actor.ActorSystem
	self                  *actor.PID
}

func (c *middlewareCtx) Actor() actor.Actor              { return c.a }
func (c *middlewareCtx) ActorSystem() *actor.ActorSystem { return c.system }
func (c *middlewareCtx) Self() *actor.PID                { return c.self }

// idleActor is an Idler and PanicAnswerer that counts what reaches it.
type idleActor struct {
	idle     IdleTimer
	received int
}

func (a *idleActor) Receive(actor.Context)                                          {}
func (a *idleActor) IdleTimer() *IdleTimer                                          { return &a.idle }
func (a *idleActor) IdleFor(actor.ReceiverContext) bool                             { return true }
func (a *idleActor) AnswerPanic(actor.ReceiverContext, *actor.MessageEnvelope, any) {}

// middlewareChain is the three middleware in the Session actor's order
// (shell.Middleware, with metrics) in front of a receiver that counts,
// over a fake context.
func middlewareChain(t testing.TB) (actor.ReceiverFunc, actor.ReceiverContext, *idleActor) {
	rt, err := metrics.NewRuntime(metrics.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	system, pid, _ := idleProbe(t)
	a := &idleActor{idle: NewIdleTimer(time.Hour)}
	next := func(actor.ReceiverContext, *actor.MessageEnvelope) { a.received++ }
	mw := []actor.ReceiverMiddleware{RecoverPanics, CountActive(rt.SessionsActive), TrackIdle}
	for i := len(mw) - 1; i >= 0; i-- {
		next = mw[i](next)
	}
	return next, &middlewareCtx{a: a, system: system, self: pid}, a
}

// streamPart stands for a message of the hot path (a stream part).
type streamPart struct{ text string }

// TestMiddlewareAllocatesNothing: the hot path. Every message the Session
// actor receives passes the middleware, which must not allocate (the idle
// timer is re-armed in place).
func TestMiddlewareAllocatesNothing(t *testing.T) {
	chain, c, a := middlewareChain(t)
	env := &actor.MessageEnvelope{Message: &streamPart{}}
	chain(c, env) // the first message arms the timer
	if n := testing.AllocsPerRun(1000, func() { chain(c, env) }); n != 0 {
		t.Fatalf("%v allocations per message", n)
	}
	if a.received != 1001+1 || a.idle.activity != 1001+1 {
		t.Fatalf("received %d, activity %d: every message passes and counts as activity", a.received, a.idle.activity)
	}
	// A current tick never reaches the actor.
	chain(c, &actor.MessageEnvelope{Message: idleTick{activity: a.idle.activity}})
	if a.received != 1002 {
		t.Fatalf("an idle tick reached the actor")
	}
}

func BenchmarkMiddleware(b *testing.B) {
	chain, c, _ := middlewareChain(b)
	env := &actor.MessageEnvelope{Message: &streamPart{}}
	b.ReportAllocs()
	for b.Loop() {
		chain(c, env)
	}
}

// quietLogger routes protoactor's own logging to nowhere.
func quietLogger(*actor.ActorSystem) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// passiveMsg is a message that is not activity (as an inspection).
type passiveMsg struct{}

func (passiveMsg) Passive() {}

// A Passive message reaches the actor without counting as activity: an
// inspection does not keep a session from passivating.
func TestPassiveMessageIsNotActivity(t *testing.T) {
	chain, c, a := middlewareChain(t)
	chain(c, &actor.MessageEnvelope{Message: &streamPart{}})
	chain(c, &actor.MessageEnvelope{Message: passiveMsg{}})
	if a.received != 2 || a.idle.activity != 1 {
		t.Fatalf("received %d, activity %d: want both received, one activity", a.received, a.idle.activity)
	}
}
