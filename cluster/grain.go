package cluster

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/sessionrt/sessionrt/actors/middleware"
)

// SessionKind is the grain kind of Session actors; its identity is the
// session ID.
const SessionKind = "session"

// Kind is one grain kind this member hosts. Produce builds the actor for an
// identity: protoactor's producers know nothing of the identity, so the
// grain shell asks for it at Started and only then builds the real actor.
type Kind struct {
	Name    string
	Produce func(identity string) actor.Actor
	// Options are extra props options (supervisor, mailbox...). The wire
	// middleware is added by the cluster package.
	Options []actor.PropsOption
	// IdleAfter stops a grain that received nothing for this long (zero:
	// never): protoactor's cluster passivates nothing itself, and the next
	// call activates the grain again. The shell does it with the Session
	// actor's idle middleware (middleware.TrackIdle), not protoactor's
	// SetReceiveTimeout, whose timer writes the actor context from its own
	// goroutine (a data race).
	IdleAfter time.Duration
}

func (k Kind) build(reg *Registry, log *slog.Logger, active *grainCounts) (*pcluster.Kind, error) {
	props, err := k.props(reg, log, active)
	if err != nil {
		return nil, err
	}
	return pcluster.NewKind(k.Name, props), nil
}

// props are the grain's props before protoactor's cluster adds its own
// middleware (which needs a running cluster).
func (k Kind) props(reg *Registry, log *slog.Logger, active *grainCounts) (*actor.Props, error) {
	if k.Name == "" || k.Produce == nil {
		return nil, fmt.Errorf("cluster kind %q: name and Produce are required", k.Name)
	}
	produce, idle := k.Produce, k.IdleAfter
	opts := append(wireProps(reg, log), k.Options...)
	if idle > 0 {
		// After the wire's decoding: any message, decoded or not, is activity.
		opts = append(opts, actor.WithReceiverMiddleware(middleware.TrackIdle))
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &grainShell{produce: produce, log: log, active: active, idle: middleware.NewIdleTimer(idle)}
	}, opts...), nil
}

// grainShell learns its identity at Started and then hands every message to
// the actor built for that identity. A restart makes a new shell (protoactor
// calls the producer again), so the inner actor is rebuilt too.
type grainShell struct {
	produce func(identity string) actor.Actor
	inner   actor.Actor
	log     *slog.Logger
	active  *grainCounts // activations of the kind on this member (metrics)
	counted bool
	idle    middleware.IdleTimer // armed by middleware.TrackIdle when the kind has IdleAfter
}

func (g *grainShell) IdleTimer() *middleware.IdleTimer { return &g.idle }

// IdleFor stops the grain: what it runs off its mailbox (a Run waiting for
// its drain) answers its caller without it.
func (g *grainShell) IdleFor(c actor.ReceiverContext) (rearm bool) {
	c.ActorSystem().Root.Stop(c.Self())
	return false
}

// grainCounts are a kind's grains on this member, for the metrics: how
// many are active, and how often one started or stopped here (placement
// changes).
type grainCounts struct{ active, changes atomic.Int64 }

func (g *grainShell) count(d int64) {
	g.active.active.Add(d)
	g.active.changes.Add(1)
}

func (g *grainShell) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		if !g.counted {
			g.counted = true
			g.count(1)
		}
	case *actor.Stopped:
		if g.counted {
			g.counted = false
			g.count(-1)
		}
	}
	if g.inner == nil {
		id := pcluster.GetClusterIdentity(ctx)
		if id == nil {
			g.log.Error("cluster: grain started without a cluster identity", "self", ctx.Self())
			ctx.Stop(ctx.Self())
			return
		}
		g.inner = g.produce(id.Identity)
	}
	if _, ok := ctx.Message().(*pcluster.ClusterInit); ok {
		return // the inner actor knows its identity already
	}
	g.inner.Receive(ctx)
}
