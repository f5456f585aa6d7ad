package middleware

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// IdleTimer tells an actor when it has received nothing for a while.
//
// protoactor's own SetReceiveTimeout mutates the actor context from its timer
// goroutine (a data race under -race, seen in v0.0.0-20240822202345) and is
// never re-armed after firing, so actors here use this instead: the timer only
// posts an idleTick into the mailbox, and the actor checks the tick against
// its activity count on its own goroutine. TrackIdle drives it for an Idler;
// the cluster's grains use it too.
type IdleTimer struct {
	after    time.Duration
	activity uint64
	arm      *idleArm
}

// idleArm is one timer and the activity count it reports. touch re-arms it in place
// (no timer and closure per message) when Stop caught it before it fired; a timer that
// already fired, or whose callback is running, is left to report its own count and a new
// one is made, so a late callback never reports a newer count than it was armed with.
type idleArm struct {
	timer *time.Timer
	seen  atomic.Uint64
}

// NewIdleTimer reports a silence of after; zero or less never fires.
func NewIdleTimer(after time.Duration) IdleTimer { return IdleTimer{after: after} }

// idleTick is posted by the timer; it is stale when activity moved on since.
type idleTick struct{ activity uint64 }

// touch records activity and re-arms the timer; call it for every message
// except idleTick itself.
func (t *IdleTimer) touch(system *actor.ActorSystem, self *actor.PID) {
	t.activity++
	if t.after <= 0 {
		return
	}
	if a := t.arm; a != nil && a.timer.Stop() {
		a.seen.Store(t.activity)
		a.timer.Reset(t.after)
		return
	}
	a := &idleArm{}
	a.seen.Store(t.activity)
	a.timer = time.AfterFunc(t.after, func() { system.Root.Send(self, idleTick{activity: a.seen.Load()}) })
	t.arm = a
}

// fired reports whether tick is current: nothing happened since it was armed.
func (t *IdleTimer) fired(tick idleTick) bool { return tick.activity == t.activity }

// Stop stops the timer: an actor that leaves (fenced, passivated) is never
// told it is idle.
func (t *IdleTimer) Stop() {
	if t.arm != nil {
		t.arm.timer.Stop()
	}
}
