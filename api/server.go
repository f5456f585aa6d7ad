package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/ptys"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/telemetry"
)

// Sessions is the runtime's command door: *actors.Sessions in a single
// process, or a cluster.Router that sends each command to the member where
// the session's grain lives.
type Sessions interface {
	Create(ctx context.Context, id string, c actors.Create) (*actors.Info, error)
	Prompt(ctx context.Context, id string, p actors.Prompt) (*actors.Receipt, error)
	Run(ctx context.Context, id string) (*actors.Outcome, error)
	WaitIdle(ctx context.Context, id string) (*actors.Outcome, error)
	Interrupt(ctx context.Context, id string) error
	Compact(ctx context.Context, id string) (*actors.Outcome, error)
	Move(ctx context.Context, id, to string) (*actors.Info, error)
	SwitchAgent(ctx context.Context, id, agent string) (*actors.Info, error)
	Rename(ctx context.Context, id, title string) (*actors.Info, error)
	Delete(ctx context.Context, id string) error
	SwitchModel(ctx context.Context, id string, m messages.ModelRef) (*actors.Info, error)
	ReplyPermission(ctx context.Context, id string, r actors.ReplyPermission) error
	Revert(ctx context.Context, id string, r actors.Revert) (*actors.RevertInfo, error)
}

var _ Sessions = (*actors.Sessions)(nil)

// Config configures New. Sessions is required; the zero value of every
// other field takes the default documented on it.
type Config struct {
	// Sessions is the runtime's command door (required).
	Sessions Sessions
	// Journal serves the reads; default Sessions.Journal() when Sessions
	// is an *actors.Sessions (required otherwise).
	Journal *persistence.Journal
	// Bus feeds GET /api/event; default Sessions.Bus() when Sessions is an
	// *actors.Sessions. Without a bus the global stream answers 503.
	Bus *actors.Bus
	// Locations, when set, supervises the terminals of the /api/pty
	// routes (without it they answer 503). Close kills the terminals.
	Locations *supervisor.Locations
	// PTYScrollback is the output kept per terminal for its readers, in
	// bytes; a reader that falls further behind is cut. Default 256 KiB.
	PTYScrollback int
	// PTYPing is the interval of WebSocket pings on a terminal's
	// connection, which keep proxies and NATs from dropping an idle
	// terminal; a client that sends nothing (no pong, no input) for two
	// intervals is disconnected, the terminal kept. Default 30 s.
	PTYPing time.Duration
	// Telemetry, when set, serves the span store at
	// GET /api/session/{id}/trace and the metrics at GET /metrics.
	Telemetry *telemetry.Telemetry

	// Token is the bearer token every request must carry
	// ("Authorization: Bearer <token>"). Required unless Insecure.
	Token string
	// Insecure lets requests from loopback addresses in without a token
	// (requests from elsewhere still need it). Meant for a server bound
	// to 127.0.0.1 on a single-user machine.
	Insecure bool
	// Hosts are names, besides the address a request arrives on, loopback
	// addresses and localhost, that a request without a token may send as
	// Host (e.g. "devbox.lan"). Any other name is refused: a web page can
	// rebind its own name to this server's address (DNS rebinding).
	Hosts []string
	// CORSOrigins are the browser origins ("https://app.example") allowed
	// to call the API from their pages: they get CORS headers and their
	// preflights answered. Every other origin but the server's own is
	// refused. They still need the token unless Insecure.
	CORSOrigins []string

	// DefaultLocation is the directory of sessions created without one.
	// Default: the process's working directory.
	DefaultLocation string
	// MaxBodyBytes bounds a request body; default 1 MiB.
	MaxBodyBytes int64
	// EventBuffer is the per-subscriber buffer of GET /api/event, in
	// items; a subscriber that falls this far behind is cut. Default 1024.
	EventBuffer int
	// Heartbeat is the interval of SSE comment lines that keep idle
	// streams alive through proxies; default 15 s.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to a stream; a reader that accepts
	// nothing for this long is disconnected. Default 30 s.
	WriteTimeout time.Duration
	// Logger receives server-side failures (5xx); default discards.
	Logger *slog.Logger
	// Catalog answers what OpenCode's V1 clients list for a directory
	// (agents, providers and models, commands, defaults); default: the
	// built-in "build" agent and no providers.
	Catalog func(ctx context.Context, directory string) Catalog
}

func (c *Config) withDefaults() error {
	if c.Sessions == nil {
		return errors.New("api: Config.Sessions is required")
	}
	if c.Token == "" && !c.Insecure {
		return errors.New("api: a Token is required unless Insecure is set")
	}
	if local, ok := c.Sessions.(*actors.Sessions); ok {
		if c.Journal == nil {
			c.Journal = local.Journal()
		}
		if c.Bus == nil {
			c.Bus = local.Bus()
		}
	}
	if c.Journal == nil {
		return errors.New("api: Config.Journal is required when Sessions is not an *actors.Sessions")
	}
	if c.DefaultLocation == "" {
		wd, err := os.Getwd()
		if err != nil {
			return errors.New("api: no DefaultLocation and no working directory")
		}
		c.DefaultLocation = wd
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = 1024
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.PTYPing <= 0 {
		c.PTYPing = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Server is the HTTP handler of the API.
type Server struct {
	cfg     Config
	hosts   map[string]bool // Config.Hosts, lower case
	origins map[string]bool // Config.CORSOrigins, canonical
	mux     *http.ServeMux
	base    context.Context
	stop    context.CancelFunc
	once    sync.Once
	ptys    *ptys.Hub // nil without Config.Locations
	// v1Watchers are the open V1 event streams, told of the sessions the
	// V1 routes touch (v1stream.go).
	v1Watchers v1Watchers
}

// New builds the handler. Mount it at the root of an http.Server, and call
// Close before the server's Shutdown (http.Server.RegisterOnShutdown(s.Close)):
// Shutdown waits for handlers, and event streams end only when told.
func New(cfg Config) (*Server, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	hosts, origins, err := cfg.accessLists()
	if err != nil {
		return nil, err
	}
	base, stop := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, hosts: hosts, origins: origins, mux: http.NewServeMux(), base: base, stop: stop}
	if cfg.Locations != nil {
		hub, err := ptys.New(ptys.Config{Locations: cfg.Locations, Scrollback: cfg.PTYScrollback, Logger: cfg.Logger})
		if err != nil {
			stop()
			return nil, err
		}
		s.ptys = hub
	}
	s.routes()
	return s, nil
}

// Close ends every open event stream (later streams end at once) and kills
// every terminal.
func (s *Server) Close() {
	s.once.Do(func() {
		s.stop()
		if s.ptys != nil {
			s.ptys.Close()
		}
	})
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /api/health", s.health)
	m.HandleFunc("GET /api/session", s.listSessions)
	m.HandleFunc("POST /api/session", s.createSession)
	m.HandleFunc("GET /api/session/active", s.activeSessions)
	m.HandleFunc("GET /api/session/{sessionID}", s.getSession)
	m.HandleFunc("POST /api/session/{sessionID}/agent", s.switchAgent)
	m.HandleFunc("POST /api/session/{sessionID}/model", s.switchModel)
	m.HandleFunc("POST /api/session/{sessionID}/prompt", s.prompt)
	m.HandleFunc("POST /api/session/{sessionID}/compact", s.compact)
	m.HandleFunc("POST /api/session/{sessionID}/wait", s.wait)
	m.HandleFunc("POST /api/session/{sessionID}/run", s.run)
	m.HandleFunc("POST /api/session/{sessionID}/move", s.move)
	m.HandleFunc("POST /api/session/{sessionID}/interrupt", s.interrupt)
	m.HandleFunc("GET /api/session/{sessionID}/context", s.context)
	m.HandleFunc("GET /api/session/{sessionID}/history", s.history)
	m.HandleFunc("GET /api/session/{sessionID}/event", s.sessionEvents)
	m.HandleFunc("GET /api/session/{sessionID}/message", s.messages)
	m.HandleFunc("GET /api/session/{sessionID}/message/{messageID}", s.message)
	m.HandleFunc("GET /api/session/{sessionID}/permission", s.permissions)
	m.HandleFunc("GET /api/session/{sessionID}/permission/{requestID}", s.permission)
	m.HandleFunc("POST /api/session/{sessionID}/permission/{requestID}/reply", s.replyPermission)
	m.HandleFunc("GET /api/session/{sessionID}/question", s.questions)
	m.HandleFunc("POST /api/session/{sessionID}/question/{requestID}/reply", s.replyQuestion)
	m.HandleFunc("POST /api/session/{sessionID}/question/{requestID}/reject", s.rejectQuestion)
	m.HandleFunc("GET /api/session/{sessionID}/trace", s.trace)
	m.HandleFunc("POST /api/session/{sessionID}/revert/stage", s.revertStage)
	m.HandleFunc("POST /api/session/{sessionID}/revert/commit", s.revertOp(actors.RevertCommit))
	m.HandleFunc("POST /api/session/{sessionID}/revert/clear", s.revertOp(actors.RevertClear))
	m.HandleFunc("GET /api/session/{sessionID}/diff", s.diff)
	m.HandleFunc("GET /api/event", s.globalEvents)
	s.ptyRoutes()
	s.catalogRoutes()
	s.fsRoutes()
	s.requestRoutes()
	s.v1Routes()
	// OpenCode routes sessionrt has no behaviour for yet: a clear 501, not a 404.
	m.HandleFunc("POST /api/session/{sessionID}/permission", s.notImplemented("asking for a permission from outside a tool call"))
	if s.cfg.Telemetry != nil && s.cfg.Telemetry.Registry != nil {
		m.Handle("GET /metrics", s.cfg.Telemetry.Registry.Handler())
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagNotFound, Message: "no route " + r.Method + " " + r.URL.Path})
	})
}

// ServeHTTP checks the doors (access.go), bounds the body and routes, inside
// observe (observe.go): the caller's trace joined, the request measured.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.observe(w, r, s.serve)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) notImplemented(what string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.session(w, r); !ok {
			return
		}
		writeError(w, http.StatusNotImplemented, wire.Error{Tag: wire.TagNotImplemented,
			Message: fmt.Sprintf("%s %s: %s is not implemented by sessionrt", r.Method, r.URL.Path, what)})
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, wire.Health{Healthy: true})
}
