package cli

import (
	"net/http"

	"github.com/sessionrt/sessionrt/node"
)

// apiHandler mounts the HTTP API of a node. Until the api package lands it
// serves health and metrics only.
func apiHandler(n *node.Node, token string, insecure bool) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"healthy":true}`))
	})
	mux.Handle("GET /metrics", n.Telemetry.Registry.Handler())
	return mux, nil
}
