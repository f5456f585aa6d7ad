package node

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/config"
	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/contextsources/skills"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/catalog"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// located is one Location's configuration turned into what the runtime
// uses, kept while the Loader answers with the same *config.Config.
type located struct {
	cfg    *config.Config
	agents config.Agents
	setup  actors.Setup
	// reg serves the Location's models; nil when the node's providers are
	// given (Config.Providers).
	reg *catalog.Registry
	err error
}

// configured resolves Locations' configuration for the Session runtime
// and the API's catalog, once per change of their files.
type configured struct {
	loader  *config.Loader
	managed string // the managed tool-output folder, reachable by every agent
	// registries are the Locations' provider registries; nil when the
	// node's providers are given (Config.Providers).
	registries *registries
	// limitsGiven: Config.ModelLimits was given and wins over the
	// Locations' catalogs.
	limitsGiven bool
	mu          sync.Mutex
	byDir       map[string]*located
}

func newConfigured(loader *config.Loader, managed string) *configured {
	return &configured{loader: loader, managed: managed, byDir: map[string]*located{}}
}

func (c *configured) env() config.AgentEnv {
	return config.AgentEnv{Home: c.loader.Getenv("HOME"), External: []string{c.managed}}
}

// at resolves dir: its configuration, agents and the Session runtime's
// Setup. The configuration's error is the *config.FileError to report.
func (c *configured) at(dir string) *located {
	cfg, err := c.loader.Load(dir)
	c.mu.Lock()
	l := c.byDir[dir]
	c.mu.Unlock()
	if l != nil && l.cfg == cfg && cfg != nil {
		return l
	}
	l = &located{cfg: cfg, err: err}
	if err == nil {
		l.agents, l.err = cfg.Agents(c.env())
	}
	if l.err == nil {
		l.setup, l.err = c.setupOf(cfg, l.agents)
	}
	if l.err == nil && c.registries != nil {
		if l.reg, l.err = c.registries.at(cfg.Info); l.err == nil {
			l.setup.Models = registryModels(l.reg)
			l.setup.SmallModels = smallModels(l.reg.Catalog())
			if c.limitsGiven {
				l.setup.Models.Limits = nil // the runtime's: Config.ModelLimits
			}
			if l.setup.DefaultModel.ID == "" {
				def := l.reg.Default()
				l.setup.DefaultModel = messages.ModelRef{Provider: def.Provider, ID: def.Model}
			}
		}
	}
	if cfg != nil {
		c.mu.Lock()
		c.byDir[dir] = l
		c.mu.Unlock()
	}
	return l
}

// setup is the Session runtime's Setup hook.
func (c *configured) setup(dir string) (actors.Setup, error) {
	l := c.at(dir)
	return l.setup, l.err
}

func (c *configured) setupOf(cfg *config.Config, ags config.Agents) (actors.Setup, error) {
	s := actors.Setup{Agents: make(map[string]actors.Agent, len(ags.List)), DefaultAgent: ags.Default}
	for _, a := range ags.List {
		ag := actors.Agent{TurnLimit: a.Steps, Rules: a.Rules}
		req, err := agentRequest(a)
		if err != nil {
			return s, err
		}
		ag.Request = req
		if a.Model != "" {
			p, m, err := config.ParseModel(a.Model)
			if err != nil {
				return s, fmt.Errorf("agent %q model: %w", a.Name, err)
			}
			ag.Model = messages.ModelRef{Provider: p, ID: m, Variant: a.Variant}
		}
		if a.Prompt != "" {
			prompt, err := agentPrompt(a.Prompt)
			if err != nil {
				return s, err
			}
			ag.Context = append(ag.Context, prompt)
		}
		if !permission.Hidden(a.Rules, "skill") {
			guidance, err := skills.Context(skills.Config{Catalog: c.skillCatalog(cfg.Dir), Allowed: func(name string) bool {
				return permission.Evaluate(a.Rules, "skill", name).Effect != permission.Deny
			}})
			if err != nil {
				return s, err
			}
			ag.Context = append(ag.Context, guidance)
		}
		s.Agents[a.Name] = ag
	}
	if p, m, err := config.ParseModel(cfg.Info.Model); err == nil {
		s.DefaultModel = messages.ModelRef{Provider: p, ID: m}
	}
	// Sessions are named by OpenCode's title agent's model, else
	// small_model, else (at) its pick of the session's provider's models.
	title := cfg.Info.SmallModel
	if t := cfg.Info.Agent["title"]; t != nil {
		s.NoTitles = t.Disable
		if t.Model != "" {
			title = t.Model
		}
	}
	if p, m, err := config.ParseModel(title); err == nil {
		s.TitleModel = messages.ModelRef{Provider: p, ID: m}
	}
	return s, nil
}

// smallModels are cat's providers' small models (catalog.SmallModel), by
// provider ID: those that have one.
func smallModels(cat *catalog.Catalog) map[string]messages.ModelRef {
	out := map[string]messages.ModelRef{}
	for id := range cat.Providers {
		if m := cat.SmallModel(id); m != "" {
			out[id] = messages.ModelRef{Provider: id, ID: m}
		}
	}
	return out
}

// agentRequest is an agent's request settings: its options partitioned as
// a model's are (temperature, topP, reasoningEffort, … and raw body
// fields), then its own temperature and top_p over them.
func agentRequest(a config.Agent) (actors.RequestSettings, error) {
	c, o, w, err := catalog.Partition(a.Options)
	if err != nil {
		return actors.RequestSettings{}, fmt.Errorf("agent %q options: %w", a.Name, err)
	}
	if a.Temperature != nil {
		c.Temperature = a.Temperature
	}
	if a.TopP != nil {
		c.TopP = a.TopP
	}
	return actors.RequestSettings{Controls: c, Options: o, Wire: w}, nil
}

// agentPromptKey is the Context Source of the agent's prompt. Every agent
// with a prompt has it under this one key, so a switch between two such
// agents is an update of the model's instructions, and a switch to an
// agent without one removes them.
const agentPromptKey = "agent/prompt"

// agentPrompt is an agent's prompt as a Context Source: part of the
// baseline (OpenCode sends it first, in place of its provider prompt), and
// a change of the prompt or of the agent reaches the model at the next
// turn boundary like any other context change.
func agentPrompt(text string) (contextsources.SystemContext, error) {
	src, err := contextsources.Make(contextsources.Spec[string]{
		Key:      agentPromptKey,
		Load:     func(context.Context) contextsources.Result[string] { return contextsources.Present(text) },
		Baseline: func(t string) string { return t },
		Update: func(t string) string {
			return "Your instructions as the agent have changed. From now on they are:\n" + t
		},
		Removal: func(string) string { return "The previous agent's instructions no longer apply." },
	})
	if err != nil {
		return contextsources.SystemContext{}, err
	}
	return contextsources.New(src)
}

// skillCatalog lists the Location's skills as its configuration says at
// each observation (the skill guidance is observed at every boundary).
func (c *configured) skillCatalog(dir string) func(context.Context) ([]skills.Skill, error) {
	return func(context.Context) ([]skills.Skill, error) {
		cfg, err := c.loader.Load(dir)
		if err != nil {
			return nil, err
		}
		found, err := cfg.Skills(c.loader.Getenv)
		if err != nil {
			return nil, err
		}
		out := make([]skills.Skill, 0, len(found))
		for _, sk := range found {
			out = append(out, skills.Skill{Name: sk.Name, Description: sk.Description})
		}
		return out, nil
	}
}

// Catalog is what clients list for the Location dir (the API's V1 and V2
// catalog routes): its agents and commands from its configuration, and the
// configured providers and models.
func (n *Node) Catalog(_ context.Context, dir string) api.Catalog {
	var out api.Catalog
	if n.configured != nil {
		l := n.configured.at(dir)
		out.Err = l.err
		if l.cfg != nil {
			out.Root = l.cfg.Root
		}
		if l.err == nil {
			out.DefaultAgent = l.agents.Default
			for _, a := range l.agents.List {
				ca := api.CatalogAgent{Name: a.Name, Description: a.Description, Mode: a.Mode, Variant: a.Variant, Prompt: a.Prompt,
					Color: a.Color, Steps: a.Steps, Hidden: a.Hidden, Native: a.Native, Temperature: a.Temperature, TopP: a.TopP, Options: a.Options}
				if p, m, err := config.ParseModel(a.Model); err == nil {
					ca.Model = messages.ModelRef{Provider: p, ID: m}
				}
				for _, r := range a.Rules {
					ca.Permissions = append(ca.Permissions, api.CatalogRule{Action: r.Action, Resource: r.Resource, Effect: string(r.Effect)})
				}
				out.Agents = append(out.Agents, ca)
			}
			names := make([]string, 0, len(l.cfg.Commands))
			for name := range l.cfg.Commands {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				c := l.cfg.Commands[name]
				out.Commands = append(out.Commands, api.CatalogCommand{Name: c.Name, Description: c.Description, Template: c.Template,
					Agent: c.Agent, Model: c.Model, Variant: c.Variant, Subtask: c.Subtask, Source: c.Source})
			}
			out.DefaultModel = l.setup.DefaultModel
			if found, err := l.cfg.Skills(n.configured.loader.Getenv); err == nil {
				for _, sk := range found {
					out.Skills = append(out.Skills, api.CatalogSkill{Name: sk.Name, Description: sk.Description, Location: sk.Location, Content: sk.Content})
				}
			}
			for _, r := range l.cfg.LocalReferences() {
				out.References = append(out.References, api.CatalogReference{Name: r.Name, Path: r.Path, Description: r.Description, Hidden: r.Hidden})
			}
		}
	} else {
		out.DefaultAgent = n.Config.DefaultAgent
		if out.DefaultAgent == "" {
			out.DefaultAgent = "build"
		}
		names := make([]string, 0, len(n.Config.Agents))
		for name := range n.Config.Agents {
			names = append(names, name)
		}
		if len(names) == 0 {
			names = []string{out.DefaultAgent}
		}
		sort.Strings(names)
		for _, name := range names {
			out.Agents = append(out.Agents, api.CatalogAgent{Name: name, Mode: "primary"})
		}
	}
	// The Location's providers; the node's when its configuration is
	// broken (out.Err says why).
	reg := n.Providers
	if n.configured != nil {
		if l := n.configured.at(dir); l.reg != nil {
			reg = l.reg
		}
	}
	n.catalogProviders(&out, reg)
	return out
}

func (n *Node) catalogProviders(out *api.Catalog, reg *catalog.Registry) {
	if reg == nil {
		if out.DefaultModel.ID == "" {
			out.DefaultModel = n.Config.DefaultModel
		}
		if m := n.Config.DefaultModel; m.Provider != "" {
			out.Providers = []api.CatalogProvider{{ID: m.Provider, Name: m.Provider, Source: "builtin", Models: []api.CatalogModel{{ID: m.ID, Name: m.ID, Tools: true, Temperature: true}}}}
		}
		return
	}
	def := reg.Default()
	if out.DefaultModel.ID == "" {
		out.DefaultModel = messages.ModelRef{Provider: def.Provider, ID: def.Model}
	}
	cat := reg.Catalog()
	for _, id := range reg.Configured() {
		p := cat.Providers[id]
		cp := api.CatalogProvider{ID: id, Name: p.Name, Source: "env"}
		if p.Kind == catalog.KindScripted {
			cp.Source = "builtin"
		}
		for _, env := range []string{p.APIKeyEnv, p.BaseURLEnv} {
			if env != "" {
				cp.Env = append(cp.Env, env)
			}
		}
		mids := make([]string, 0, len(p.Models))
		for mid := range p.Models {
			mids = append(mids, mid)
		}
		// A local server's default model may be unlisted: list it too.
		if def.Provider == id {
			if _, ok := p.Models[def.Model]; !ok {
				mids = append(mids, def.Model)
			}
		}
		sort.Strings(mids)
		for _, mid := range mids {
			m, ok := p.Models[mid]
			if !ok {
				m = catalog.Unlisted()
			}
			cm := api.CatalogModel{ID: mid, APIID: m.APIID, Name: m.Name, Context: m.ContextWindow, Output: m.OutputLimit,
				Tools: m.Tools, Reasoning: m.Reasoning, Attachments: m.Attachments, Temperature: true}
			if vs, err := cat.Variants(provider.ModelRef{Provider: id, Model: mid}); err == nil {
				names := make([]string, 0, len(vs))
				for name := range vs {
					names = append(names, name)
				}
				sort.Strings(names)
				for _, name := range names {
					cm.Variants = append(cm.Variants, api.CatalogVariant{ID: name, Options: vs[name]})
				}
			}
			cp.Models = append(cp.Models, cm)
		}
		out.Providers = append(out.Providers, cp)
	}
}
