package node

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/config"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/catalog"
)

// providerCatalog is the provider catalog with the configuration's
// providers on top (OpenCode's "provider", "model", "enabled_providers"
// and "disabled_providers"): base is the built-in catalog or the
// SESSIONRT_CATALOG file, and the environment variables that configure it
// keep working. A configured provider is an OpenAI-compatible server
// unless its npm package is Anthropic's; its key is options.apiKey
// (usually "{env:VAR}", substituted when the file was read) or the first
// set variable of its env list; a provider listing no models serves any
// model its server has. options.chunkTimeout (milliseconds, or false) is
// the stream's idle timeout; unset, there is none, as the spec says. A
// model's "id" is the ID sent to the provider (the key is then an alias);
// "whitelist" and "blacklist" name the models kept or removed.
func providerCatalog(base *catalog.Catalog, info config.Info, getenv func(string) string) (*catalog.Catalog, error) {
	c := &catalog.Catalog{Providers: make(map[string]catalog.Provider, len(base.Providers)+len(info.Provider)), Default: base.Default}
	for id, p := range base.Providers {
		c.Providers[id] = p
	}
	for id, pc := range info.Provider {
		p, known := c.Providers[id]
		if !known {
			p = catalog.Provider{Kind: catalog.KindOpenAI}
			if strings.Contains(pc.NPM, "anthropic") {
				p.Kind = catalog.KindAnthropic
			}
			p.AllowUnlisted = len(pc.Models) == 0
		}
		if pc.Name != "" {
			p.Name = pc.Name
		}
		switch {
		case pc.Options.BaseURL != "":
			p.BaseURL = pc.Options.BaseURL
		case pc.API != "":
			p.BaseURL = pc.API
		}
		p.APIKey = pc.Options.APIKey
		for _, env := range pc.Env {
			if p.APIKey == "" && getenv(env) != "" {
				p.APIKey = getenv(env)
			}
		}
		if t := pc.Options.ChunkTimeout; t.Set {
			// OpenCode's chunkTimeout is the catalog's idle timeout;
			// false (or unset, over a catalog that sets none) is none.
			p.IdleTimeout = ""
			if d := t.Duration(); d > 0 {
				p.IdleTimeout = d.String()
			}
		}
		if len(pc.Options.Headers) > 0 {
			h := make(map[string]string, len(p.Headers)+len(pc.Options.Headers))
			for k, v := range p.Headers {
				h[k] = v
			}
			for k, v := range pc.Options.Headers {
				h[k] = v
			}
			p.Headers = h
		}
		models := make(map[string]catalog.Model, len(p.Models)+len(pc.Models))
		for mid, m := range p.Models {
			models[mid] = m
		}
		for mid, mc := range pc.Models {
			m, ok := models[mid]
			if !ok {
				m = catalog.Unlisted()
			}
			if mc.Name != "" {
				m.Name = mc.Name
			}
			if mc.ID != "" && mc.ID != mid {
				m.APIID = mc.ID // an alias of the provider's model
			}
			if mc.Limit != nil {
				m.ContextWindow, m.OutputLimit = mc.Limit.Context, mc.Limit.Output
			}
			if mc.ToolCall != nil {
				m.Tools = *mc.ToolCall
			}
			if mc.Reasoning != nil {
				m.Reasoning = *mc.Reasoning
			}
			if mc.Attachment != nil {
				m.Attachments = *mc.Attachment
			}
			for name, v := range mc.Variants {
				if m.Variants == nil {
					m.Variants = map[string]map[string]json.RawMessage{}
				}
				// OpenCode's "disabled": true hides a variant (one of
				// DefaultVariants too); it is no request option.
				var off struct {
					Disabled bool `json:"disabled"`
				}
				if d, ok := v["disabled"]; ok && json.Unmarshal(d, &off.Disabled) == nil && off.Disabled {
					m.Variants[name] = nil
					continue
				}
				m.Variants[name] = v
			}
			if len(mc.Options) > 0 {
				m.Params = mc.Options
				var err error
				if m, err = catalog.ApplyParams(m); err != nil {
					return nil, fmt.Errorf("provider %q model %q options: %w", id, mid, err)
				}
			}
			models[mid] = m
		}
		// OpenCode's blacklist and whitelist name model IDs (the keys):
		// a blacklisted one is gone, and with a whitelist only its models
		// are left. A provider serving unlisted models refuses the
		// blacklisted ones, and serves only the whitelisted ones.
		for mid := range models {
			if slices.Contains(pc.Blacklist, mid) || (len(pc.Whitelist) > 0 && !slices.Contains(pc.Whitelist, mid)) {
				delete(models, mid)
			}
		}
		p.Blocked = append(slices.Clone(p.Blocked), pc.Blacklist...)
		if len(pc.Whitelist) > 0 {
			p.Whitelist = slices.Clone(pc.Whitelist)
		}
		if len(pc.Whitelist) > 0 && p.AllowUnlisted {
			for _, mid := range pc.Whitelist {
				if _, ok := models[mid]; !ok && !slices.Contains(pc.Blacklist, mid) {
					models[mid] = catalog.Unlisted()
				}
			}
			p.AllowUnlisted = false
		}
		p.Models = models
		c.Providers[id] = p
	}
	for id := range c.Providers {
		if id == catalog.KindScripted {
			continue // the demo keeps sessionrt startable
		}
		if slices.Contains(info.DisabledProviders, id) || (len(info.EnabledProviders) > 0 && !slices.Contains(info.EnabledProviders, id)) {
			delete(c.Providers, id)
		}
	}
	if info.Model != "" {
		p, m, err := config.ParseModel(info.Model)
		if err != nil {
			return nil, err
		}
		ref := provider.ModelRef{Provider: p, Model: m}
		if _, err := c.Resolve(ref); err != nil {
			return nil, fmt.Errorf("model %q: %w", info.Model, err)
		}
		c.Default = &ref
	}
	return c, c.Validate()
}

// registryModels are the models a registry serves, as the Session runtime
// asks for them: the provider of a model (refusing an unknown model, or a
// variant the model lacks, when selected rather than at the request) and
// its limits.
func registryModels(reg *catalog.Registry) *actors.Models {
	return &actors.Models{
		Providers: func(m messages.ModelRef) (provider.Provider, error) {
			ref := provider.ModelRef{Provider: m.Provider, Model: m.ID}
			p, err := reg.For(ref)
			if err == nil {
				err = reg.CheckVariant(ref, m.Variant)
			}
			return p, err
		},
		Limits: func(m messages.ModelRef) (int, int) {
			d, err := reg.Model(provider.ModelRef{Provider: m.Provider, Model: m.ID})
			if err != nil {
				return 0, 0 // the turn itself fails with the catalog's error
			}
			return d.ContextWindow, d.OutputLimit
		},
	}
}

// registries are the provider registries of Locations. Providers are
// configured per Location like everything else (a project's opencode.json
// may add a provider or change a model's options); Locations whose
// configuration gives the same providers share one registry, and the
// node's own (Config.ProviderDir's) serves every Location configured as
// it is.
type registries struct {
	open func(config.Info) (*catalog.Registry, error)
	mu   sync.Mutex
	// byKey holds the registries built, by providersKey; bounded by
	// maxRegistries (an edited file makes a new one; the old ones are
	// dropped wholesale, rebuilt when asked again).
	byKey map[string]*catalog.Registry
	node  string // the node registry's key
	reg   *catalog.Registry
}

const maxRegistries = 64

func newRegistries(open func(config.Info) (*catalog.Registry, error), info config.Info, reg *catalog.Registry) *registries {
	return &registries{open: open, byKey: map[string]*catalog.Registry{}, node: providersKey(info), reg: reg}
}

// providersKey is what of a configuration the providers depend on.
func providersKey(info config.Info) string {
	b, _ := json.Marshal(struct {
		Provider          map[string]config.ProviderConfig
		Model             string
		Enabled, Disabled []string
	}{info.Provider, info.Model, info.EnabledProviders, info.DisabledProviders})
	return string(b)
}

// at returns the registry for a Location configured as info says.
func (r *registries) at(info config.Info) (*catalog.Registry, error) {
	key := providersKey(info)
	if key == r.node {
		return r.reg, nil
	}
	r.mu.Lock()
	reg := r.byKey[key]
	r.mu.Unlock()
	if reg != nil {
		return reg, nil
	}
	reg, err := r.open(info)
	if err != nil {
		return nil, fmt.Errorf("providers: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.byKey) >= maxRegistries {
		clear(r.byKey)
	}
	r.byKey[key] = reg
	return reg, nil
}
