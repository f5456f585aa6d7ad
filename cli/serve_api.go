package cli

import (
	"context"
	"sort"

	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/provider/catalog"
)

// apiHandler mounts the HTTP API of a node; sessions is the node's own
// facade, or a cluster router in cluster mode. access holds who may come in
// (Token, Insecure, Hosts, CORSOrigins); the rest is the node's.
func apiHandler(n *node.Node, sessions api.Sessions, access api.Config) (*api.Server, error) {
	cfg := access
	cfg.Sessions, cfg.Journal, cfg.Bus, cfg.Telemetry, cfg.Locations, cfg.Logger = sessions, n.Journal, n.Bus, n.Telemetry, n.Locations, n.Config.Logger
	cfg.Catalog = nodeCatalog(n)
	return api.New(cfg)
}

// nodeCatalog lists the node's agents and configured providers for
// OpenCode's V1 clients.
func nodeCatalog(n *node.Node) func(context.Context, string) api.Catalog {
	return func(context.Context, string) api.Catalog {
		var out api.Catalog
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
		reg := n.Providers
		if reg == nil {
			out.DefaultModel = n.Config.DefaultModel
			if m := out.DefaultModel; m.Provider != "" {
				out.Providers = []api.CatalogProvider{{ID: m.Provider, Models: []api.CatalogModel{{ID: m.ID}}}}
			}
			return out
		}
		def := reg.Default()
		out.DefaultModel = messages.ModelRef{Provider: def.Provider, ID: def.Model}
		cat := reg.Catalog()
		for _, id := range reg.Configured() {
			p := cat.Providers[id]
			cp := api.CatalogProvider{ID: id, Name: p.Name}
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
				cp.Models = append(cp.Models, api.CatalogModel{ID: mid, Name: m.Name, Context: m.ContextWindow, Output: m.OutputLimit,
					Tools: m.Tools, Reasoning: m.Reasoning, Attachments: m.Attachments, Temperature: true})
			}
			out.Providers = append(out.Providers, cp)
		}
		return out
	}
}
