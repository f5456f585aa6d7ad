package supervisor

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/contextsources"
)

// ContextRegistryName is the Location child that owns the System Context Registry.
const ContextRegistryName = "context"

// ObserveContext asks a Location's context registry for one observation of
// its sources, with Extra (the selected agent's skill guidance) composed just
// before admission. The reply is a *ContextObserved.
type ObserveContext struct {
	Extra []contextsources.SystemContext
}

// ContextObserved answers ObserveContext.
type ContextObserved struct {
	Observation contextsources.Observation
	Err         error
}

// RegisterContext adds or replaces a contribution in a Location's registry;
// the reply is a *ContextRegistered.
type RegisterContext struct {
	Key     string
	Sources contextsources.SystemContext
}

// UnregisterContext removes a contribution; its sources leave the context at
// the next safe provider-turn boundary. The reply is a *ContextRegistered.
type UnregisterContext struct{ Key string }

// ContextRegistered answers RegisterContext and UnregisterContext.
type ContextRegistered struct{ Err error }

// ContextContribution builds one contribution of every Location's registry.
type ContextContribution struct {
	Key     string
	Sources func(dir string) (contextsources.SystemContext, error)
}

// ContextRegistryChild is the ChildSpec of the context registry: a registry
// per Location seeded with contributions (built-in sources, instructions).
func ContextRegistryChild(cfg contextsources.RegistryConfig, contributions []ContextContribution) ChildSpec {
	return ChildSpec{Name: ContextRegistryName, Props: func(dir string) *actor.Props {
		return actor.PropsFromProducer(func() actor.Actor {
			return &contextRegistry{dir: dir, cfg: cfg, seed: contributions}
		})
	}}
}

// contextRegistry wraps a contextsources.Registry. Observations run off the
// mailbox (loaders have timeouts of their own) so that one slow source never
// delays registration or another Session's observation.
type contextRegistry struct {
	dir  string
	cfg  contextsources.RegistryConfig
	seed []ContextContribution
	reg  *contextsources.Registry
}

func (c *contextRegistry) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.reg = contextsources.NewRegistry(c.cfg)
		for _, s := range c.seed {
			sc, err := s.Sources(c.dir)
			if err == nil {
				_, err = c.reg.Register(s.Key, sc)
			}
			if err != nil {
				// A seed that cannot build is a configuration error: fail
				// loudly so supervision reports it.
				panic(fmt.Errorf("context registry %s: contribution %s: %w", c.dir, s.Key, err))
			}
		}
	case *ObserveContext:
		reply, system, reg := ctx.Sender(), ctx.ActorSystem(), c.reg
		if reply == nil {
			return
		}
		go func() {
			obs, err := reg.ObserveWith(context.Background(), m.Extra...)
			system.Root.Send(reply, &ContextObserved{Observation: obs, Err: err})
		}()
	case *RegisterContext:
		_, err := c.reg.Register(m.Key, m.Sources)
		ctx.Respond(&ContextRegistered{Err: err})
	case *UnregisterContext:
		c.reg.Unregister(m.Key)
		ctx.Respond(&ContextRegistered{})
	}
}
