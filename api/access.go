package api

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/sessionrt/sessionrt/api/wire"
)

// The doors of the server, in the order ServeHTTP opens them:
//
//  1. Origin. A browser names the page that sends a request; a page of
//     another origin is refused (403) unless Config.CORSOrigins names it, in
//     which case it gets CORS headers and its preflights are answered.
//  2. Host. A page on a name the attacker controls can rebind that name to
//     127.0.0.1 (DNS rebinding): the browser then sends the attacker's name
//     as Host and Origin, same-origin to it. A request that carries no token
//     must therefore name this server: the address it arrived on, a loopback
//     address, localhost or one of Config.Hosts (403 otherwise). A token is
//     not rebindable, so a request that carries one may use any name (a
//     reverse proxy's, say).
//  3. Credentials: the token in any scheme of credentialSchemes, or, with
//     Insecure, a loopback peer (401 otherwise).

// credentialSchemes are the ways a request may present the token; each
// returns the token it found. Another scheme is one more entry.
var credentialSchemes = []func(*http.Request) (string, bool){bearer, basicPassword}

// hasToken reports whether r presents the server's token in any scheme.
func (s *Server) hasToken(r *http.Request) bool {
	if s.cfg.Token == "" {
		return false
	}
	for _, scheme := range credentialSchemes {
		if tok, ok := scheme(r); ok && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1 {
			return true
		}
	}
	return false
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const p = "Bearer "
	if len(h) > len(p) && strings.EqualFold(h[:len(p)], p) {
		return strings.TrimSpace(h[len(p):]), true
	}
	return "", false
}

// basicPassword is the password of HTTP Basic. OpenCode's clients (opencode
// attach, run --attach) send only HTTP Basic: OPENCODE_SERVER_USERNAME
// (default "opencode") and OPENCODE_SERVER_PASSWORD. The password is the
// secret; the user name names no account here, so any is accepted.
func basicPassword(r *http.Request) (string, bool) {
	_, pass, ok := r.BasicAuth()
	return pass, ok
}

// admit opens the doors for r, or answers it and returns false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	cors := origin != "" && s.origins[canonicalOrigin(origin)]
	if origin != "" && !cors && !sameOrigin(origin, r.Host) {
		writeError(w, http.StatusForbidden, wire.Error{Tag: wire.TagUnauthorized,
			Message: fmt.Sprintf("requests from origin %q are refused (not this server's %q; serve --cors adds an origin)", origin, r.Host)})
		return false
	}
	if cors {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			// Browsers send no credentials with a preflight: answer it
			// before asking for them. The request that follows is checked
			// like any other.
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
			if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" {
				h.Set("Access-Control-Allow-Headers", rh)
			}
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return false
		}
	}
	token := s.hasToken(r)
	if !token && !knownHost(r, s.hosts) {
		writeError(w, http.StatusForbidden, wire.Error{Tag: wire.TagUnauthorized,
			Message: fmt.Sprintf("Host %q does not name this server: use its address, localhost, a name given with serve --allow-host, or send the token", r.Host)})
		return false
	}
	if !token && !(s.cfg.Insecure && loopback(r.RemoteAddr)) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sessionrt"`)
		writeError(w, http.StatusUnauthorized, wire.Error{Tag: wire.TagUnauthorized,
			Message: "missing or wrong token: send Authorization: Bearer <token>, or HTTP Basic with the token as password (OpenCode's OPENCODE_SERVER_PASSWORD); the token is SESSIONRT_TOKEN or the token file in the server's data directory"})
		return false
	}
	return true
}

// sameOrigin reports whether a browser's Origin names this server. Other origins are
// refused on every route: with Insecure no token is asked, so a page the user visits
// could otherwise post a prompt (a "simple" text/plain request needs no preflight) and
// start tool turns through their loopback.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, host)
}

// knownHost reports whether r's Host names this server: a name nobody else
// can point at it. The port is not compared: rebinding changes the name,
// and a name that resolves here reaches this port only through this server.
// An empty Host (HTTP/1.0) comes from no browser, and passes.
func knownHost(r *http.Request, hosts map[string]bool) bool {
	if r.Host == "" {
		return true
	}
	name := hostName(r.Host)
	if strings.EqualFold(name, "localhost") || hosts[strings.ToLower(name)] {
		return true
	}
	ip := net.ParseIP(name)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if tcp, ok := local.(*net.TCPAddr); ok {
		return tcp.IP.Equal(ip)
	}
	return false
}

// hostName is a Host header's name or address, without port or brackets.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// canonicalOrigin is an origin as browsers send it: scheme://host[:port],
// lower case, no trailing slash.
func canonicalOrigin(o string) string {
	return strings.ToLower(strings.TrimSuffix(o, "/"))
}

// accessLists checks Config.Hosts and Config.CORSOrigins and indexes them.
func (c *Config) accessLists() (hosts, origins map[string]bool, err error) {
	hosts = map[string]bool{}
	for _, h := range c.Hosts {
		name := hostName(h)
		if name == "" || strings.ContainsAny(h, "/@ ") || strings.Contains(name, ":") && net.ParseIP(name) == nil {
			return nil, nil, fmt.Errorf("api: allowed host %q (Config.Hosts) is not a host name (want e.g. devbox.lan)", h)
		}
		hosts[strings.ToLower(name)] = true
	}
	origins = map[string]bool{}
	for _, o := range c.CORSOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, nil, fmt.Errorf("api: CORS origin %q (Config.CORSOrigins) is not an origin (want scheme://host[:port], e.g. https://app.example)", o)
		}
		origins[canonicalOrigin(o)] = true
	}
	return hosts, origins, nil
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LocalOnly serves h only to requests that name this server in their Host
// (its address, a loopback address or localhost) and come from no browser
// page of another origin; others get a 403. It guards loopback listeners
// that ask for no credentials (pprof) against DNS rebinding.
func LocalOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); !knownHost(r, nil) || o != "" && !sameOrigin(o, r.Host) {
			writeError(w, http.StatusForbidden, wire.Error{Tag: wire.TagUnauthorized,
				Message: fmt.Sprintf("Host %q or Origin %q does not name this server", r.Host, o)})
			return
		}
		h.ServeHTTP(w, r)
	})
}
