package cli

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/sessionrt/sessionrt/api"
)

// servePprof serves net/http/pprof on a loopback address until the returned stop is
// called, and says where it listens. Profiles show memory contents and call stacks, so like --insecure it is
// refused on any other address, and requests naming another host (DNS rebinding) are refused.
func servePprof(addr string) (bound string, stop func(), err error) {
	if !loopback(addr) {
		return "", nil, fmt.Errorf("--pprof is only allowed on a loopback address, not %s", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--pprof listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: api.LocalOnly(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}
