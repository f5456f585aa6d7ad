package effect

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/provider"
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

// Config is the session's agent as the Location's configuration gives it
// at a boundary: Agent is the shell's own, handed back as it is; Context
// and Rules are what an observation and a catalog need of it.
type Config[A any] struct {
	Agent   A
	Context []contextsources.SystemContext
	Rules   []permission.Rule
}

// Observed is a boundary's context observation, with the agent it was
// made for (ConfigErr: the configuration does not give the agent; nothing
// was observed) and the tool catalog when it was asked for too.
type Observed[A any] struct {
	Token       uint64
	Init        bool
	Agent       A
	ConfigErr   error
	Observation contextsources.Observation
	Err         error
	Catalog     *Catalog // nil: not asked for
}

// Catalog is the tool catalog listed for a turn, as the provider's tools.
type Catalog struct {
	Token uint64
	Tools []provider.Tool
	Err   error
}

// Observe reads the session's agent from the configuration (config: a
// changed configuration takes effect at a boundary), then asks the
// Location's context registry for an observation with the agent's
// sources and, withCatalog, its tool registry for the catalog under the
// agent's rules at the same time: two independent reads in one round trip
// instead of two in a row. It posts Observed, on its own goroutine.
func Observe[A any](reg Registries, token uint64, init, withCatalog bool, config func() (Config[A], error), post Post) {
	Go(post, func() any {
		cfg, err := config()
		if err != nil {
			return &Observed[A]{Token: token, Init: init, ConfigErr: err}
		}
		start := time.Now()
		of := reg.System.Root.RequestFuture(reg.Context, &supervisor.ObserveContext{Extra: cfg.Context}, reg.Timeout)
		var cf *actor.Future
		if withCatalog {
			cf = reg.requestCatalog(cfg.Rules)
		}
		obs, err := reg.observed(start, of)
		m := &Observed[A]{Token: token, Init: init, Agent: cfg.Agent, Observation: obs, Err: err}
		if cf != nil {
			tools, err := cataloged(cf)
			m.Catalog = &Catalog{Token: token, Tools: tools, Err: err}
		}
		return m
	}, func(err error) any { return &Observed[A]{Token: token, Init: init, Err: err} })
}

// ListCatalog lists the tool catalog under rules for a turn whose
// observation did not bring it, and posts it (Catalog), on its own
// goroutine.
func ListCatalog(reg Registries, token uint64, rules []permission.Rule, post Post) {
	Go(post, func() any {
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
