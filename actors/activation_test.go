package actors

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors/middleware"
)

// counter answers each request with how many it has seen in this incarnation
// and passivates as soon as it has been idle for a millisecond.
type counter struct {
	id    string
	acts  *activations
	seen  int
	idle  middleware.IdleTimer
	stops *atomic.Int64
}

type ping struct{}

func (c *counter) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Stopped:
		c.acts.stopped(c.id, ctx.Self())
	case ping:
		c.seen++
		ctx.Respond(c.seen)
	}
}

// The counter is an Idler behind TrackIdle, which arms its timer at every
// message and tells it when the timer fired with nothing received since.
func (c *counter) IdleTimer() *middleware.IdleTimer { return &c.idle }

func (c *counter) IdleFor(ctx actor.ReceiverContext) bool {
	if c.acts.tryPassivate(c.id, ctx.Self()) {
		c.stops.Add(1)
		ctx.ActorSystem().Root.Stop(ctx.Self())
		return false
	}
	return true
}

func newCounterActivations(t *testing.T) (*activations, *atomic.Int64) {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(quietLogger))
	var stops atomic.Int64
	var acts *activations
	acts = newActivations(system, "counter", func(id string) *actor.Props {
		return actor.PropsFromProducer(func() actor.Actor {
			return &counter{id: id, acts: acts, stops: &stops, idle: middleware.NewIdleTimer(time.Millisecond)}
		}, actor.WithReceiverMiddleware(middleware.TrackIdle))
	})
	t.Cleanup(acts.stopAll)
	return acts, &stops
}

func TestActivationsNeverLoseARequestToPassivation(t *testing.T) {
	acts, stops := newCounterActivations(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				// Gaps shape the load so that passivations race new requests;
				// correctness never depends on them.
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
				if _, err := acts.request(ctx, "s1", ping{}, 5*time.Second); err != nil {
					t.Errorf("request: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if stops.Load() == 0 {
		t.Fatal("no activation ever passivated: the test exercised nothing")
	}
}

func TestPassivationRefusedWhileARequestIsInFlight(t *testing.T) {
	acts, _ := newCounterActivations(t)
	pid, err := acts.acquire("s1")
	if err != nil {
		t.Fatal(err)
	}
	if acts.tryPassivate("s1", pid) {
		t.Fatal("passivated with a request in flight")
	}
	acts.release("s1", pid)
	if !acts.tryPassivate("s1", pid) {
		t.Fatal("refused to passivate while idle")
	}
	if got := acts.active(); len(got) != 0 {
		t.Fatalf("still active after passivation: %v", got)
	}
}
