package cluster

import (
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/sessionrt/sessionrt/actors"
)

// TestIdleSessionGrainStopsWithoutARacingTimer: a session grain that
// received nothing for IdleAfter stops (the next call activates it again),
// and its idle timer races with nothing when it fires as a command arrives.
// Under -race this fails with protoactor's SetReceiveTimeout, whose timer
// goroutine writes the actor context the mailbox goroutine reads.
func TestIdleSessionGrainStopsWithoutARacingTimer(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	// The grains are sent an unknown command, refused without the facade.
	kind, err := SessionGrain(SessionGrainConfig{Sessions: &actors.Sessions{}, Logger: log, IdleAfter: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	counts := &grainCounts{}
	props, err := kind.props(SessionRegistry(), log, counts)
	if err != nil {
		t.Fatal(err)
	}
	props = props.Clone(actor.WithOnInit(func(ctx actor.Context) {
		pcluster.SetClusterIdentity(ctx, pcluster.NewClusterIdentity("ses_idle", SessionKind))
	}))
	deadline := time.Now().Add(time.Minute) // a backstop
	for i := range 20 {
		pid := system.Root.Spawn(props)
		// Commands about one idle period apart, so the timer fires
		// between and during them (the pauses pace, they synchronize
		// nothing). One behind the grain's stop is a dead letter, as for
		// any stopped grain.
		for j := range 200 {
			system.Root.Send(pid, &actors.Done{})
			if j%2 == 0 {
				time.Sleep(time.Millisecond - time.Duration(j)*time.Microsecond)
			}
		}
		// Started then Stopped: two placement changes per grain.
		for counts.active.Load() != 0 || counts.changes.Load() != int64(2*(i+1)) {
			if time.Now().After(deadline) {
				t.Fatalf("%d grains active, %d starts and stops after %d grains: an idle grain must stop",
					counts.active.Load(), counts.changes.Load(), i+1)
			}
			time.Sleep(time.Millisecond) // polling a condition with a deadline
		}
	}
}
