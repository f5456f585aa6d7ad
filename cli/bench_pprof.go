package cli

import (
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// PprofEnv, when set in a sessionrt process's environment, serves
// net/http/pprof on that loopback address. `sessionrt bench --profile`
// sets it for the `sessionrt serve` it measures, so the benchmark can take
// the server's CPU and heap profiles; nothing else sets it.
const PprofEnv = "SESSIONRT_PPROF_ADDR"

func init() {
	addr := os.Getenv(PprofEnv)
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ListenAndServe() }()
}
