package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/actors/shell"
	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/render"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/telemetry"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// Agent is one agent's configuration as the Session uses it.
type Agent struct {
	// TurnLimit is the provider-turn allowance per activity; 0 means DefaultTurnLimit.
	TurnLimit int
	// Rules are the agent's permission rules, in order (last match wins,
	// no match asks).
	Rules []permission.Rule
	// Context are extra Context Sources of this agent (its prompt, its
	// skill guidance), composed with the Location's sources just before
	// admission.
	Context []contextsources.SystemContext
	// Model is the agent's model, zero for none: a session created with
	// the agent and no model of its own, or switched to the agent, runs on
	// it (OpenCode's agent "model" and "variant").
	Model messages.ModelRef
	// Request are the agent's request settings (its temperature, top_p and
	// provider options): over the model's catalog defaults, under the
	// selected variant's, as OpenCode merges them.
	Request RequestSettings

	// models are the Location's models (Setup.Models), set by Setup.agent:
	// a drain resolves its agent at every turn boundary, so a changed
	// provider configuration reaches the next turn with it.
	models *Models
}

// Models are the models a Location's configuration gives: its providers
// (a project's opencode.json may add one or change a model's options) and
// their limits. Nil hooks fall back to Config.Providers and
// Config.ModelLimits.
type Models struct {
	// Providers returns the provider for a model, or an error naming the
	// known ones.
	Providers func(messages.ModelRef) (provider.Provider, error)
	// Limits returns a model's context window and output limit in tokens.
	Limits func(messages.ModelRef) (window, outputLimit int)
}

// RequestSettings are request settings in the provider request's three
// domains (render.Settings: the renderer puts them in every request).
type RequestSettings = render.Settings

// Setup is what a Location's configuration gives its sessions: the agents
// they may run, the one they start with, and the model they start with.
type Setup struct {
	Agents       map[string]Agent
	DefaultAgent string
	// DefaultModel is the model new sessions start with; zero means
	// Config.DefaultModel.
	DefaultModel messages.ModelRef
	// Models, when set, are the Location's own models; nil: the
	// runtime's (Config.Providers, Config.ModelLimits).
	Models *Models
	// TitleModel names sessions (OpenCode's agent.title.model, else its
	// small_model); zero: SmallModels' model of the session's provider;
	// neither, or a model Models do not serve: the session's own model,
	// as OpenCode falls back. NoTitles: titles are off here (OpenCode's
	// agent.title.disable).
	TitleModel messages.ModelRef
	NoTitles   bool
	// SmallModels are, by provider ID, the small model OpenCode picks
	// when none is configured (catalog.SmallModel): a title costs a
	// small model's price, not the session's model's.
	SmallModels map[string]messages.ModelRef
}

// agent returns the named agent, or an error naming the known ones.
func (s Setup) agent(name, location string) (Agent, error) {
	if a, ok := s.Agents[name]; ok {
		a.models = s.Models
		return a, nil
	}
	names := make([]string, 0, len(s.Agents))
	for n := range s.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return Agent{}, &CommandError{Code: CodeInvalid, Msg: fmt.Sprintf("unknown agent %q in %s (agents: %s)", name, location, strings.Join(names, ", "))}
}

// Config is what Sessions needs. Journal, Locations and Providers are required.
type Config struct {
	Journal   *persistence.Journal
	Locations *supervisor.Locations
	// ToolPlacement, when set, may name another actor for a Location's
	// tool registry (a cluster proxy to the member holding the directory).
	ToolPlacement ToolPlacement
	// Providers returns the provider for a model.
	Providers func(messages.ModelRef) (provider.Provider, error)
	// Owner names this process in journal ownership records. Default: host:pid.
	Owner string
	// Agents by name; DefaultAgent (default "build") must be one of them.
	// Default: a "build" agent that allows every tool. Unused when Setup
	// is set.
	Agents       map[string]Agent
	DefaultAgent string
	// Setup, when set, returns a Location's agents and defaults as its
	// configuration says now. It is asked when a session is created or
	// switches agent, at the start of a drain and at every safe
	// provider-turn boundary (off the mailbox), so a changed configuration
	// takes effect at the next turn, never in the middle of one; an error
	// (a malformed file) ends that drain with it. It must be cheap: cache.
	Setup        func(location string) (Setup, error)
	DefaultModel messages.ModelRef
	// InboxLimit refuses admissions beyond this many pending prompts. Default 1000.
	InboxLimit int
	// IdleAfter passivates a session with no drain after this long. Default 1 minute.
	IdleAfter time.Duration
	// RequestTimeout bounds short commands (prompt, create, switches). Default 30 s.
	RequestTimeout time.Duration
	// Recovery is applied to sessions found mid-drain. Default RecoverResume.
	Recovery Recovery
	// Bus receives live events; nil publishes nothing.
	Bus    *Bus
	Logger *slog.Logger
	// Tracer records invoke_agent, chat and execute_tool spans; nil records nothing.
	Tracer *telemetry.Tracer
	// Faults, when set, is asked at every FaultPoint whether to kill the
	// actor there (chaos runs only).
	Faults func(FaultPoint, string) bool
	// Compaction configures automatic compaction. Default compaction.DefaultConfig().
	Compaction *compaction.Config
	// Metrics receives the runtime's counters; nil records nothing.
	Metrics *metrics.Runtime
	// Snapshots keeps the file snapshots of Locations (taken off the
	// mailbox at every provider turn's start and after every tool that
	// changes files) that reverts restore; nil takes none, and a revert
	// then changes the history only.
	Snapshots *filesnap.Store
	// SnapshotPlacement, when set, may name the SnapshotStore of a
	// Location another member holds (its snapshots are taken and restored
	// there). Used only when Snapshots is set.
	SnapshotPlacement SnapshotPlacement
	// ModelLimits returns a model's context window and output limit in
	// tokens (0: unknown, which turns automatic compaction off).
	ModelLimits func(messages.ModelRef) (window, outputLimit int)
	// Titles names each untitled session from its first prompt, as
	// OpenCode does: a request to the Location's small model (else the
	// session's) beside the first turn (title.go). Off: a session without
	// a client's title keeps its default (the first prompt's start).
	Titles bool

	// checkTurn, when set (tests), is called on the actor goroutine right
	// after each TurnStarted is durable, with the request that turn sends
	// and what it was built from.
	checkTurn func(id string, seq int64, st *session.State, tr render.Turn, req *provider.Request)
}

func (c *Config) withDefaults() error {
	if c.Journal == nil || c.Locations == nil || c.Providers == nil {
		return errors.New("sessions: Journal, Locations and Providers are required")
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		c.Owner = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if c.DefaultAgent == "" {
		c.DefaultAgent = "build"
	}
	if c.Agents == nil {
		c.Agents = map[string]Agent{"build": {Rules: []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Allow}}}}
	}
	if _, ok := c.Agents[c.DefaultAgent]; !ok && c.Setup == nil {
		return fmt.Errorf("sessions: default agent %q is not configured", c.DefaultAgent)
	}
	if c.Setup == nil {
		static := Setup{Agents: c.Agents, DefaultAgent: c.DefaultAgent}
		c.Setup = func(string) (Setup, error) { return static, nil }
	}
	if c.InboxLimit <= 0 {
		c.InboxLimit = 1000
	}
	if c.IdleAfter <= 0 {
		c.IdleAfter = time.Minute
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.Recovery == "" {
		c.Recovery = RecoverResume
	}
	if c.Recovery != RecoverResume && c.Recovery != RecoverInterrupt {
		return fmt.Errorf("sessions: recovery policy %q: want resume or interrupt", c.Recovery)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Compaction == nil {
		def := compaction.DefaultConfig()
		c.Compaction = &def
	}
	return nil
}

// runtime is what every Session actor of a process shares.
type runtime struct {
	cfg     Config
	ctx     context.Context // cancelled when Sessions stops
	journal *persistence.Journal
	bus     *Bus
	owner   string
	system  *actor.ActorSystem
	acts    *activations
	// stopping makes every drain end at its next safe boundary.
	stopping atomic.Bool
	// historyLoads counts model histories read from the journal (once per
	// activation when the in-memory copy holds).
	historyLoads atomic.Int64
	// appends counts the journal appends the Session actors made.
	appends atomic.Int64
	// waits resumes drains a journal failure stopped.
	waits journalWaits
	// deps are what the Session actors use of all this.
	deps *shell.Deps
}

// newDeps is what the Session actors use of the runtime (shell.Deps).
func (rt *runtime) newDeps() *shell.Deps {
	c := &rt.cfg
	d := &shell.Deps{Ctx: rt.ctx, Journal: rt.journal, Owner: rt.owner, Logger: c.Logger, Metrics: c.Metrics, Tracer: c.Tracer,
		Faults: c.Faults, Compaction: *c.Compaction, IdleAfter: c.IdleAfter, InboxLimit: c.InboxLimit,
		RequestTimeout: c.RequestTimeout, Recovery: c.Recovery, Titles: c.Titles, TakesSnapshots: c.Snapshots != nil,
		Snapshots: func(dir string) (effect.Snapshots, error) {
			st, err := rt.snapshots(dir)
			if st == nil {
				return nil, err
			}
			return st, err
		},
		Stopping: &rt.stopping, HistoryLoads: &rt.historyLoads, Appends: &rt.appends,
		Stopped: rt.acts.stopped, Forget: rt.acts.forget, TryPassivate: rt.acts.tryPassivate,
		WaitJournal: rt.waits.add, DrainStopped: rt.waits.drainStopped,
		Creation: rt.creation, AgentSwitch: rt.agentSwitch, ModelSwitch: rt.modelSwitch, ResolveLocation: rt.resolveLocation, DrainAgent: rt.drainAgent, TitleModel: rt.titleModel,
		CheckTurn: c.checkTurn}
	if rt.bus != nil {
		d.Publish = rt.bus.Publish
	}
	return d
}

// ask sends msg to id's activation and waits for the reply. A fenced
// activation has stopped and left the facade; the command is idempotent,
// so one retry reaches a fresh activation that owns the session again.
func (rt *runtime) ask(ctx context.Context, id string, msg any, timeout time.Duration) (any, error) {
	if id == "" {
		return nil, invalidf("empty session ID")
	}
	for attempt := 0; ; attempt++ {
		res, err := rt.acts.request(ctx, id, msg, timeout)
		if err != nil && (!errors.Is(err, ErrFenced) || attempt > 0) {
			return nil, err
		}
		if err == nil {
			return res, nil
		}
	}
}

// setup returns a Location's setup with its defaults filled in.
func (rt *runtime) setup(location string) (Setup, error) {
	s, err := rt.cfg.Setup(location)
	if err != nil {
		return Setup{}, &CommandError{Code: CodeInvalid, Msg: fmt.Sprintf("configuration of %s: %v", location, err)}
	}
	if s.DefaultModel.ID == "" {
		s.DefaultModel = rt.cfg.DefaultModel
	}
	return s, nil
}

// creation resolves what a new session starts with in its Location (the
// create command m), as the SessionCreated to write: the Location's
// canonical path, the agent (m's, else the Location's default), the model
// (m's, else the agent's own, else the Location's default; one named must
// be served there). A bad Location, configuration, agent or model is a
// CodeInvalid error.
func (rt *runtime) creation(m *Create) (messages.SessionCreated, error) {
	loc, err := supervisor.Canonical(m.Location)
	if err != nil {
		return messages.SessionCreated{}, invalidf(err.Error())
	}
	setup, err := rt.setup(loc)
	if err != nil {
		return messages.SessionCreated{}, err
	}
	agent := m.Agent
	if agent == "" {
		agent = setup.DefaultAgent
	}
	ag, err := setup.agent(agent, loc)
	if err != nil {
		return messages.SessionCreated{}, err
	}
	model := m.Model
	if model.ID == "" && ag.Model.ID != "" {
		model = ag.Model
	}
	if model.ID == "" {
		model = setup.DefaultModel
	} else if err := rt.knownModel(setup.Models, model); err != nil {
		return messages.SessionCreated{}, err
	}
	return messages.SessionCreated{Location: loc, Agent: agent, Model: model, Title: m.Title}, nil
}

// agentSwitch resolves a switch to agent of a session in location, as the
// core's input: the agent must exist there; its own model comes with it
// (ModelErr when the Location does not serve it: the core refuses the
// switch only if it would take the model).
func (rt *runtime) agentSwitch(location, agent string) (session.SwitchAgent, error) {
	setup, err := rt.setup(location)
	if err != nil {
		return session.SwitchAgent{}, err
	}
	ag, err := setup.agent(agent, location)
	if err != nil {
		return session.SwitchAgent{}, err
	}
	in := session.SwitchAgent{Agent: agent}
	if ag.Model.ID != "" {
		in.Model = &ag.Model
		if err := rt.knownModel(setup.Models, ag.Model); err != nil {
			in.ModelErr = err.Error()
		}
	}
	return in, nil
}

// modelSwitch resolves a switch to model of a session in location, as the
// core's input (ModelErr when the Location does not serve it).
func (rt *runtime) modelSwitch(location string, model messages.ModelRef) (session.SwitchModel, error) {
	setup, err := rt.setup(location)
	if err != nil {
		return session.SwitchModel{}, err
	}
	in := session.SwitchModel{Model: model}
	if err := rt.knownModel(setup.Models, model); err != nil {
		in.ModelErr = err.Error()
	}
	return in, nil
}

// drainAgent resolves a session's agent (name) in its Location now, as a
// drain's executors use it (effect.Agent: its models looked up in the
// Location's). It blocks on the configuration (file stats): call it off
// the mailbox.
func (rt *runtime) drainAgent(location, name string) (effect.Agent, error) {
	s, err := rt.setup(location)
	if err != nil {
		return effect.Agent{}, err
	}
	ag, err := s.agent(name, location)
	models := ag.models
	return effect.Agent{TurnLimit: ag.TurnLimit, Rules: ag.Rules, Context: ag.Context, Request: ag.Request,
		Provider: func(m messages.ModelRef) (provider.Provider, error) { return rt.provider(models, m) },
		Limits: func(m messages.ModelRef) session.Limits {
			w, out, _ := rt.modelLimits(models, m)
			return session.Limits{Window: w, Output: out}
		}}, err
}

// knownModel refuses a model no provider of the Location (ms: its
// Setup.Models, nil for the runtime's) serves, naming the known ones (the
// Providers hook's error says which).
func (rt *runtime) knownModel(ms *Models, m messages.ModelRef) error {
	if _, err := rt.providers(ms)(m); err != nil {
		return &CommandError{Code: CodeInvalid, Msg: fmt.Sprintf("model %s/%s: %v", m.Provider, m.ID, err)}
	}
	return nil
}

// provider returns the provider serving m in the Location whose models
// are ms (nil: the runtime's).
func (rt *runtime) provider(ms *Models, m messages.ModelRef) (provider.Provider, error) {
	p, err := rt.providers(ms)(m)
	if err != nil {
		return nil, fmt.Errorf("provider for %s/%s: %w", m.Provider, m.ID, err)
	}
	return p, nil
}

func (rt *runtime) providers(ms *Models) func(messages.ModelRef) (provider.Provider, error) {
	if ms != nil && ms.Providers != nil {
		return ms.Providers
	}
	return rt.cfg.Providers
}

// modelLimits returns m's context window and output limit in the Location
// whose models are ms (nil: the runtime's); ok is false when no limits
// are known at all (no hook).
func (rt *runtime) modelLimits(ms *Models, m messages.ModelRef) (window, outputLimit int, ok bool) {
	if ms != nil && ms.Limits != nil {
		w, o := ms.Limits(m)
		return w, o, true
	}
	if rt.cfg.ModelLimits == nil {
		return 0, 0, false
	}
	w, o := rt.cfg.ModelLimits(m)
	return w, o, true
}

// titleModel is the model that names a session of loc running on model:
// the Location's title model, else (none configured) its provider's small
// model, when the Location's providers serve it; else the session's own
// (OpenCode falls back the same way).
func (rt *runtime) titleModel(loc string, model messages.ModelRef) (messages.ModelRef, provider.Provider, error) {
	s, err := rt.setup(loc)
	if err != nil {
		return model, nil, err
	}
	if s.NoTitles {
		return model, nil, protocol.ErrNoTitles
	}
	small := s.TitleModel
	if small.ID == "" {
		small = s.SmallModels[model.Provider]
	}
	if small.ID != "" {
		if p, err := rt.provider(s.Models, small); err == nil {
			return small, p, nil
		}
	}
	p, err := rt.provider(s.Models, model)
	return model, p, err
}

// resolveLocation returns the Location children a drain talks to: its
// context registry, then its tool registry. It blocks: call it off the
// mailbox.
func (rt *runtime) resolveLocation(dir string) (*actor.PID, *actor.PID, error) {
	ctx, cancel := context.WithTimeout(rt.ctx, rt.cfg.RequestTimeout)
	defer cancel()
	// Both children at once: one round trip to the Location, not two.
	var t *actor.PID
	var terr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		t, terr = rt.cfg.Locations.Child(ctx, dir, ToolRegistryName)
	}()
	c, err := rt.cfg.Locations.Child(ctx, dir, supervisor.ContextRegistryName)
	<-done
	if err != nil {
		return nil, nil, err
	}
	if terr != nil {
		return nil, nil, terr
	}
	if place := rt.cfg.ToolPlacement; place != nil {
		remote, err := place(ctx, dir, t)
		if err != nil {
			return nil, nil, err
		}
		if remote != nil {
			t = remote
		}
	}
	return c, t, nil
}

// ToolRegistryName is the Location child that runs tools.
const ToolRegistryName = "tools"
