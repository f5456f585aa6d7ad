package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// idleProbe spawns an actor that forwards its idle ticks to a channel.
func idleProbe(t testing.TB) (*actor.ActorSystem, *actor.PID, chan idleTick) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(quietLogger))
	ticks := make(chan idleTick, 16)
	pid := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(idleTick); ok {
			ticks <- m
		}
	}))
	t.Cleanup(func() { system.Root.Stop(pid) })
	return system, pid, ticks
}

// A re-armed timer reports the latest activity, once; after it fired, touching arms a
// timer that reports the new activity (the fired one cannot report it early).
func TestIdleTimerReportsTheActivityItWasArmedWith(t *testing.T) {
	system, pid, ticks := idleProbe(t)
	it := idleTimer{after: 5 * time.Millisecond}
	for range 5 {
		it.touch(system, pid)
	}
	if tick := <-ticks; !it.fired(tick) || tick.activity != 5 {
		t.Fatalf("tick %d after 5 touches (fired %v)", tick.activity, it.fired(tick))
	}
	it.touch(system, pid)
	if tick := <-ticks; !it.fired(tick) || tick.activity != 6 {
		t.Fatalf("tick %d after the 6th touch (fired %v)", tick.activity, it.fired(tick))
	}
	it.stop()
	select {
	case tick := <-ticks:
		t.Fatalf("extra tick %d", tick.activity)
	case <-time.After(20 * time.Millisecond): // a bound on a negative, not synchronization
	}
}

// Touching an armed timer re-arms it in place: every message of a session touches it.
func TestIdleTouchReusesTheTimer(t *testing.T) {
	system, pid, _ := idleProbe(t)
	it := idleTimer{after: time.Hour}
	defer it.stop()
	it.touch(system, pid)
	if n := testing.AllocsPerRun(100, func() { it.touch(system, pid) }); n != 0 {
		t.Fatalf("touch allocates %v times", n)
	}
}

func BenchmarkIdleTouch(b *testing.B) {
	system, pid, _ := idleProbe(b)
	it := idleTimer{after: time.Hour}
	defer it.stop()
	b.ReportAllocs()
	for b.Loop() {
		it.touch(system, pid)
	}
}
