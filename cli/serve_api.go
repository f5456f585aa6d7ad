package cli

import (
	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/node"
)

// apiHandler mounts the HTTP API of a node; sessions is the node's own
// facade, or a cluster router in cluster mode.
func apiHandler(n *node.Node, sessions api.Sessions, token string, insecure bool) (*api.Server, error) {
	return api.New(api.Config{Sessions: sessions, Journal: n.Journal, Bus: n.Bus, Telemetry: n.Telemetry, Locations: n.Locations, Token: token, Insecure: insecure, Logger: n.Config.Logger})
}
