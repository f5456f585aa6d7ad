package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// idleTimer tells an actor when it has received nothing for a while.
//
// protoactor's own SetReceiveTimeout mutates the actor context from its timer
// goroutine (a data race under -race, seen in v0.0.0-20240822202345) and is
// never re-armed after firing, so actors here use this instead: the timer only
// posts an idleTick into the mailbox, and the actor checks the tick against
// its activity count on its own goroutine.
type idleTimer struct {
	after    time.Duration
	activity uint64
	timer    *time.Timer
}

// idleTick is posted by the timer; it is stale when activity moved on since.
type idleTick struct{ activity uint64 }

// touch records activity and re-arms the timer; call it for every message
// except idleTick itself.
func (t *idleTimer) touch(system *actor.ActorSystem, self *actor.PID) {
	t.activity++
	if t.after <= 0 {
		return
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	seen := t.activity
	t.timer = time.AfterFunc(t.after, func() { system.Root.Send(self, idleTick{activity: seen}) })
}

// fired reports whether tick is current: nothing happened since it was armed.
func (t *idleTimer) fired(tick idleTick) bool { return tick.activity == t.activity }

func (t *idleTimer) stop() {
	if t.timer != nil {
		t.timer.Stop()
	}
}
