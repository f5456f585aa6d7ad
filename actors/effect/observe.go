package effect

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// Registries are the registries of a drain's Location that a boundary
// asks, through System, each answering within Timeout.
type Registries struct {
	System  *actor.ActorSystem
	Context *actor.PID // the context registry
	Tools   *actor.PID // the tool registry
	Timeout time.Duration
	// Metrics, when set, records how long a complete observation took and
	// the sources it found unavailable.
	Metrics *metrics.Runtime
}

// Observed is a boundary's context observation, as the core takes it
// (In: ConfigErr, the configuration does not give the agent and nothing
// was observed; Err, the observation failed), with the agent it was made
// for and the tool catalog when it was asked for too. Take keeps the
// agent (when In has no error) and the catalog.
type Observed struct {
	Token   uint64
	In      session.ContextObserved
	Agent   Agent
	Catalog *Catalog // nil: not asked for
}

// Catalog is the tool catalog listed for a turn, as the provider's tools.
// Take keeps it for the turn and makes it the core's CatalogLoaded.
type Catalog struct {
	Token uint64
	Tools []provider.Tool
	Err   error
}

// Observe reads the session's agent from the configuration (Config: a
// changed configuration takes effect at a boundary), then asks the
// Location's context registry for an observation with the agent's
// sources and, withCatalog, its tool registry for the catalog under the
// agent's rules at the same time: two independent reads in one round trip
// instead of two in a row. It posts Observed, on its own goroutine; a
// changed source's ContextUpdated gets In.UpdateID.
func (x *Drain) Observe(init, withCatalog bool, agent string) {
	reg, token, config := x.Registries, x.Token, x.Config
	x.busy = true
	Go(x.Post, func() any {
		m := &Observed{Token: token, In: session.ContextObserved{Init: init}}
		ag, err := config(agent)
		if err != nil {
			m.In.ConfigErr = err.Error()
			return m
		}
		m.Agent, m.In.TurnLimit = ag, ag.TurnLimit
		start := time.Now()
		of := reg.System.Root.RequestFuture(reg.Context, &supervisor.ObserveContext{Extra: ag.Context}, reg.Timeout)
		var cf *actor.Future
		if withCatalog {
			cf = reg.requestCatalog(ag.Rules)
		}
		if obs, err := reg.observed(start, of); err != nil {
			m.In.Err = err.Error()
		} else {
			m.In.Observation, m.In.UpdateID = obs, messages.NewID("ctx")
		}
		if cf != nil {
			tools, err := cataloged(cf)
			m.Catalog, m.In.Catalog = &Catalog{Token: token, Tools: tools, Err: err}, true
			if err != nil {
				m.In.CatalogErr = err.Error()
			}
		}
		return m
	}, func(err error) any {
		return &Observed{Token: token, In: session.ContextObserved{Init: init, Err: err.Error()}}
	})
}

// ListCatalog lists the tool catalog under the agent's rules for a turn
// whose observation did not bring it, and posts it (Catalog), on its own
// goroutine.
func (x *Drain) ListCatalog() {
	reg, token, rules := x.Registries, x.Token, x.Agent.Rules
	x.busy = true
	Go(x.Post, func() any {
		tools, err := cataloged(reg.requestCatalog(rules))
		return &Catalog{Token: token, Tools: tools, Err: err}
	}, func(err error) any { return &Catalog{Token: token, Err: err} })
}

func (reg Registries) requestCatalog(rules []permission.Rule) *actor.Future {
	return reg.System.Root.RequestFuture(reg.Tools, &toolactors.CatalogRequest{Rules: rules}, reg.Timeout)
}

// observed waits for an observation requested at start.
func (reg Registries) observed(start time.Time, f *actor.Future) (contextsources.Observation, error) {
	res, err := f.Result()
	if err != nil {
		return contextsources.Observation{}, err
	}
	o, ok := res.(*supervisor.ContextObserved)
	if !ok {
		return contextsources.Observation{}, fmt.Errorf("context registry answered %T", res)
	}
	if m := reg.Metrics; m != nil && o.Err == nil {
		m.ContextObserved("all", time.Since(start))
		for _, key := range o.Observation.Unavailable() {
			m.SourceUnavailable(key)
		}
	}
	return o.Observation, o.Err
}

// cataloged waits for a requested catalog and lowers it to provider tools.
func cataloged(f *actor.Future) ([]provider.Tool, error) {
	res, err := f.Result()
	if err != nil {
		return nil, err
	}
	cat, ok := res.(*toolactors.Catalog)
	if !ok {
		return nil, fmt.Errorf("tool registry answered %T", res)
	}
	return lowerCatalog(cat)
}

// lowerCatalog turns a tool catalog into the provider's tool list.
func lowerCatalog(cat *toolactors.Catalog) ([]provider.Tool, error) {
	out := make([]provider.Tool, 0, len(cat.Tools))
	for _, d := range cat.Tools {
		schema, err := d.InputJSON()
		if err != nil {
			return nil, fmt.Errorf("tool %s schema: %w", d.Name, err)
		}
		out = append(out, provider.Tool{Name: d.Name, Description: d.Description, Schema: schema})
	}
	return out, nil
}
