package node

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sessionrt/sessionrt/config"
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
// the stream's idle timeout; unset, there is none, as the spec says.
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
