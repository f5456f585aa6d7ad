package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/wire"
)

// door sends one request as a browser would, with the Host and Origin given
// (empty: Go's defaults, the server's address and no Origin), and the test
// token when withToken. It returns the response with its body closed.
func door(t *testing.T, rt *apitest.Runtime, method, path, host, origin string, withToken bool, hdr ...string) *http.Response {
	t.Helper()
	var body *strings.Reader
	if method == "POST" || method == "PUT" {
		body = strings.NewReader(`{}`)
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, rt.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if withToken {
		req.Header.Set("Authorization", "Bearer "+rt.Token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// everyRoute lists one request per route of the handler (plus an unknown
// path), with real session and terminal IDs so that a request that gets
// through would act.
func everyRoute(sid, pid string) [][2]string {
	s, p := "/api/session/"+sid, "/api/pty/"+pid
	return [][2]string{
		{"GET", "/api/health"}, {"GET", "/api/session"}, {"POST", "/api/session"}, {"GET", "/api/session/active"},
		{"GET", s}, {"POST", s + "/agent"}, {"POST", s + "/model"}, {"POST", s + "/prompt"}, {"POST", s + "/compact"},
		{"POST", s + "/wait"}, {"POST", s + "/run"}, {"POST", s + "/move"}, {"POST", s + "/interrupt"},
		{"GET", s + "/context"}, {"GET", s + "/history"}, {"GET", s + "/event"}, {"GET", s + "/message"},
		{"GET", s + "/message/msg_x"}, {"GET", s + "/permission"}, {"GET", s + "/permission/per_x"},
		{"POST", s + "/permission/per_x/reply"}, {"GET", s + "/question"}, {"POST", s + "/question/que_x/reply"},
		{"POST", s + "/question/que_x/reject"}, {"GET", s + "/trace"}, {"POST", s + "/permission"},
		{"POST", s + "/revert/stage"}, {"GET", "/api/event"}, {"GET", "/metrics"},
		{"GET", "/api/pty"}, {"POST", "/api/pty"}, {"GET", p}, {"PUT", p}, {"DELETE", p},
		{"POST", p + "/input"}, {"GET", p + "/output"}, {"GET", p + "/connect"},
		{"GET", "/api/nowhere"}, {"OPTIONS", "/api/session"},
	}
}

// wsHandshake are the headers of a WebSocket upgrade, as a browser sends them.
var wsHandshake = []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}

// A page on a name the attacker controls, rebound to 127.0.0.1, sends its own
// name as Host and Origin (same-origin to the browser). Without a token it
// gets nowhere: 403 on every route, the terminal's WebSocket included.
func TestDNSRebindingIsRefusedOnEveryRoute(t *testing.T) {
	for _, mode := range []string{"insecure", "token"} {
		t.Run(mode, func(t *testing.T) {
			rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) {
				if mode == "insecure" {
					c.Token, c.Insecure = "", true
				}
			}})
			auth := mode == "token"
			c := newClient(t, rt)
			sid := create(t, c, rt).ID
			pid := createPTY(t, c, wire.CreatePTYRequest{Command: "/bin/sh"}).ID
			port := rt.Server.Listener.Addr().String()
			port = port[strings.LastIndex(port, ":"):]
			evil := "rebind.evil.example" + port
			for _, r := range everyRoute(sid, pid) {
				for _, origin := range []string{"", "http://" + evil} {
					var hdr []string
					if strings.HasSuffix(r[1], "/connect") {
						hdr = wsHandshake
					}
					resp := door(t, rt, r[0], r[1], evil, origin, false, hdr...)
					if resp.StatusCode != http.StatusForbidden {
						t.Errorf("%s %s Host %s Origin %q: %d, want 403", r[0], r[1], evil, origin, resp.StatusCode)
					}
				}
			}
			// The terminal is untouched and answers its own clients.
			if _, err := c.PTY(ctxT(t), pid); err != nil {
				t.Fatal(err)
			}
			// Names that cannot be rebound, and a token, get in.
			for _, host := range []string{"", "localhost" + port, "127.0.0.1" + port, "LOCALHOST" + port} {
				if resp := door(t, rt, "GET", "/api/session", host, "", auth); resp.StatusCode != http.StatusOK {
					t.Errorf("Host %q: %d, want 200", host, resp.StatusCode)
				}
			}
			if resp := door(t, rt, "GET", "/api/session", evil, "", true); auth && resp.StatusCode != http.StatusOK {
				t.Errorf("token with Host %s: %d, want 200 (a token is not rebindable)", evil, resp.StatusCode)
			}
		})
	}
}

func TestConfiguredHostNamesAreAdmitted(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) {
		c.Token, c.Insecure, c.Hosts = "", true, []string{"devbox.lan"}
	}})
	if resp := door(t, rt, "GET", "/api/session", "DevBox.lan:4096", "", false); resp.StatusCode != http.StatusOK {
		t.Errorf("configured name: %d, want 200", resp.StatusCode)
	}
	if resp := door(t, rt, "GET", "/api/session", "devbox.lan.evil.example", "", false); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a name that only starts with the configured one: %d, want 403", resp.StatusCode)
	}
}

func TestHostListMustHoldNames(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	for _, bad := range [][]string{{""}, {"http://devbox.lan"}, {"devbox.lan/x"}} {
		if _, err := api.New(api.Config{Sessions: rt.Node.Sessions, Token: "t", Hosts: bad}); err == nil || !strings.Contains(err.Error(), "Hosts") {
			t.Errorf("Hosts %q: %v, want an error naming Hosts", bad, err)
		}
	}
	for _, bad := range [][]string{{"*"}, {"app.example"}, {"https://app.example/path"}, {"ftp://app.example"}} {
		if _, err := api.New(api.Config{Sessions: rt.Node.Sessions, Token: "t", CORSOrigins: bad}); err == nil || !strings.Contains(err.Error(), "CORSOrigins") {
			t.Errorf("CORSOrigins %q: %v, want an error naming CORSOrigins", bad, err)
		}
	}
}

// Cross-origin reads need the server's consent: none by default, and only
// the configured origins otherwise (preflight answered without a token,
// since browsers send none with it).
func TestCORSOnlyForConfiguredOrigins(t *testing.T) {
	const app = "https://app.example"
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.CORSOrigins = []string{app + "/"} }})
	preflight := []string{"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type"}
	resp := door(t, rt, "OPTIONS", "/api/session", "", app, false, preflight...)
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != app ||
		!strings.Contains(strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "authorization") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight from %s: %d %v, want 204 allowing it", app, resp.StatusCode, resp.Header)
	}
	resp = door(t, rt, "POST", "/api/session", "", app, true)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != app || resp.Header.Get("Vary") == "" {
		t.Fatalf("request from %s: %d %v, want 200 with its Access-Control-Allow-Origin", app, resp.StatusCode, resp.Header)
	}
	if resp = door(t, rt, "POST", "/api/session", "", app, false); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a configured origin still needs the token: %d, want 401", resp.StatusCode)
	}
	for _, other := range []string{"https://evil.example", "http://app.example", "null"} {
		resp := door(t, rt, "OPTIONS", "/api/session", "", other, false, preflight...)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from %s: %d %q, want 403 without CORS headers", other, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	// The server's own origin needs no CORS, and gets none.
	u, _ := url.Parse(rt.URL)
	if resp := door(t, rt, "GET", "/api/session", "", "http://"+u.Host, true); resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("own origin: %d %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	// Without configured origins, no CORS at all.
	plain := apitest.Start(t, apitest.Options{})
	if resp := door(t, plain, "OPTIONS", "/api/session", "", app, false, preflight...); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight without configured origins: %d %q, want 403", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}
