package cli

import (
	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/node"
)

// apiHandler mounts the HTTP API of a node.
func apiHandler(n *node.Node, token string, insecure bool) (*api.Server, error) {
	return api.New(api.Config{Sessions: n.Sessions, Journal: n.Journal, Bus: n.Bus, Telemetry: n.Telemetry, Locations: n.Locations, Token: token, Insecure: insecure, Logger: n.Config.Logger})
}
