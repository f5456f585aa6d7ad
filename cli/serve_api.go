package cli

import (
	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/node"
)

// apiHandler mounts the HTTP API of a node; sessions is the node's own
// facade, or a cluster router in cluster mode. access holds who may come in
// (Token, Insecure, Hosts, CORSOrigins); the rest is the node's, including
// the catalog of each Location (agents, commands, providers).
func apiHandler(n *node.Node, sessions api.Sessions, access api.Config) (*api.Server, error) {
	cfg := access
	cfg.Sessions, cfg.Journal, cfg.Bus, cfg.Telemetry, cfg.Locations, cfg.Logger = sessions, n.Journal, n.Bus, n.Telemetry, n.Locations, n.Config.Logger
	cfg.Catalog = n.Catalog
	return api.New(cfg)
}
