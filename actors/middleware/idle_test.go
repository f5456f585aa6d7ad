package middleware

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
	it := NewIdleTimer(5 * time.Millisecond)
	// current reads ticks until one reports the latest activity: a timer
	// that fired between touches (a slow machine may pause 5 ms anywhere)
	// reports the older count it was armed with, which fired calls stale.
	current := func(want uint64) {
		t.Helper()
		backstop := time.After(time.Minute)
		for {
			select {
			case tick := <-ticks:
				if it.fired(tick) {
					if tick.activity != want {
						t.Fatalf("current tick %d, want %d", tick.activity, want)
					}
					return
				}
				if tick.activity >= want {
					t.Fatalf("stale tick %d reports activity %d or later", tick.activity, want)
				}
			case <-backstop:
				t.Fatalf("no tick for activity %d", want)
			}
		}
	}
	for range 5 {
		it.touch(system, pid)
	}
	current(5)
	it.touch(system, pid)
	current(6)
	it.Stop()
	quiet := time.After(20 * time.Millisecond) // a bound on a negative, not synchronization
	for {
		select {
		case tick := <-ticks:
			if tick.activity >= 6 { // a late stale tick from before the 6th touch is fine
				t.Fatalf("tick %d after stop", tick.activity)
			}
		case <-quiet:
			return
		}
	}
}

// Touching an armed timer re-arms it in place: every message of a session touches it.
func TestIdleTouchReusesTheTimer(t *testing.T) {
	system, pid, _ := idleProbe(t)
	it := NewIdleTimer(time.Hour)
	defer it.Stop()
	it.touch(system, pid)
	if n := testing.AllocsPerRun(100, func() { it.touch(system, pid) }); n != 0 {
		t.Fatalf("touch allocates %v times", n)
	}
}

func BenchmarkIdleTouch(b *testing.B) {
	system, pid, _ := idleProbe(b)
	it := NewIdleTimer(time.Hour)
	defer it.Stop()
	b.ReportAllocs()
	for b.Loop() {
		it.touch(system, pid)
	}
}
