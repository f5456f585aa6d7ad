// Package apitest starts a real sessionrt runtime (node.Start on a temporary
// data directory: embedded journal, actor tree, span store) behind the real
// API handler on a loopback httptest server, with a scripted provider the
// test drives. Tests of the API, its client and the CLI use it; it is not
// for production code.
package apitest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// Token is the bearer token of every test server.
const Token = "apitest-token"

// Model is the model sessions start with.
var Model = messages.ModelRef{Provider: "scripted", ID: "test-model"}

// TurnFunc scripts provider turn n (0-based, counted over the runtime).
type TurnFunc func(req *provider.Request, n int) (scripted.Turn, error)

// Options configure Start; zero values take the defaults documented.
type Options struct {
	// Turns scripts the provider; default: every turn answers "ok".
	Turns TurnFunc
	// Agents replaces the default "build" agent that allows every tool.
	Agents       map[string]actors.Agent
	DefaultAgent string
	// API adjusts the handler's config (Sessions, Journal, Bus, Telemetry,
	// Locations and Token are filled in).
	API func(*api.Config)
	// Env is the environment of the runtime's configuration (HOME,
	// XDG_CONFIG_HOME, OPENCODE_CONFIG, {env:…}); default: HOME is a fresh
	// temporary directory and nothing else is set, so no file of the
	// machine's user is read.
	Env map[string]string
	// ConfigFile is read after every other configuration file (serve --config).
	ConfigFile string
	// ConfiguredProviders builds the providers as sessionrt serve does
	// (environment and the configuration of Loc) instead of the scripted
	// one; Turns is not used then.
	ConfiguredProviders bool
	// Titles names untitled sessions from their first prompt, as sessionrt
	// serve does (node.Config.Titles): one more provider request per
	// session, which the tests that count requests do not expect.
	Titles bool
	// Data and Loc, when set, are the data directory and the default Location
	// (default: fresh temporary directories); a test restarts a runtime by
	// stopping it and starting another on the same Data.
	Data, Loc string
}

// Runtime is one running process under test.
type Runtime struct {
	Node   *node.Node
	API    *api.Server
	Server *httptest.Server
	URL    string // the server's base URL
	Token  string
	Loc    string // a Location directory for sessions

	mu    sync.Mutex
	turns TurnFunc
	stop  sync.Once
}

// SetTurns replaces the provider script.
func (r *Runtime) SetTurns(f TurnFunc) {
	r.mu.Lock()
	r.turns = f
	r.mu.Unlock()
}

// Start builds the runtime and serves the API; t.Cleanup stops both.
func Start(t testing.TB, o Options) *Runtime {
	t.Helper()
	rt := &Runtime{Token: Token, Loc: o.Loc, turns: o.Turns}
	if rt.Loc == "" {
		rt.Loc = t.TempDir()
	}
	data := o.Data
	if data == "" {
		data = t.TempDir()
	}
	if rt.turns == nil {
		rt.turns = func(*provider.Request, int) (scripted.Turn, error) { return scripted.Turn{Text: "ok"}, nil }
	}
	prov, err := scripted.New(scripted.Config{Func: func(ctx context.Context, req *provider.Request, n int) (scripted.Turn, error) {
		rt.mu.Lock()
		f := rt.turns
		rt.mu.Unlock()
		return f(req, n)
	}})
	if err != nil {
		t.Fatal(err)
	}
	env := o.Env
	if env == nil {
		env = map[string]string{"HOME": t.TempDir()}
	}
	quiet := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	providers, model := func(messages.ModelRef) (provider.Provider, error) { return prov, nil }, Model
	if o.ConfiguredProviders {
		providers, model = nil, messages.ModelRef{}
	}
	rt.Node, err = node.Start(ctx, node.Config{
		Data:         data,
		Providers:    providers,
		DefaultModel: model,
		ProviderDir:  rt.Loc,
		Agents:       o.Agents,
		DefaultAgent: o.DefaultAgent,
		Getenv:       func(k string) string { return env[k] },
		ConfigFile:   o.ConfigFile,
		Logger:       quiet,
		Titles:       o.Titles,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{Sessions: rt.Node.Sessions, Journal: rt.Node.Journal, Bus: rt.Node.Bus, Telemetry: rt.Node.Telemetry,
		Locations: rt.Node.Locations, Token: Token, DefaultLocation: rt.Loc, Logger: quiet, Catalog: rt.Node.Catalog}
	if o.API != nil {
		o.API(&cfg)
	}
	rt.API, err = api.New(cfg)
	if err != nil {
		rt.Node.Stop(context.Background())
		t.Fatal(err)
	}
	rt.Server = httptest.NewServer(rt.API)
	rt.URL = rt.Server.URL
	t.Cleanup(rt.Stop)
	return rt
}

// Stop closes the API and stops the node, once; Start's cleanup calls it too.
func (r *Runtime) Stop() {
	r.stop.Do(func() {
		r.API.Close()
		r.Server.CloseClientConnections()
		r.Server.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.Node.Stop(sctx)
	})
}
