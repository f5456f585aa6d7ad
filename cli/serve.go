package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/node"
)

// ServeCmd runs the runtime: the journal, the actor tree and the HTTP API.
type ServeCmd struct {
	Listen    string            `help:"HTTP address to listen on." default:"127.0.0.1:4096" env:"SESSIONRT_LISTEN"`
	Config    string            `help:"An OpenCode configuration file (opencode.json[c]) read after every other one, for every Location (see sessionrt config --help)." type:"path" placeholder:"FILE"`
	Insecure  bool              `help:"Serve without a bearer token (only allowed on a loopback address)."`
	AllowHost []string          `help:"A name, besides the listen address, loopback addresses and localhost, that requests without a token may send as Host (repeatable); any other is refused, against DNS rebinding." placeholder:"NAME" env:"SESSIONRT_ALLOW_HOST"`
	CORS      []string          `name:"cors" help:"A browser origin (scheme://host[:port]) whose pages may call the API (repeatable); other origins are refused." placeholder:"ORIGIN" env:"SESSIONRT_CORS"`
	Recovery  string            `help:"What to do with sessions found mid-drain at start-up: resume (once, telling the model) or interrupt." enum:"resume,interrupt" default:"resume"`
	Owner     string            `help:"Name of this process in journal ownership records (default host:pid)."`
	Grace     time.Duration     `help:"On SIGINT/SIGTERM, how long drains may run to their next safe boundary." default:"10s"`
	Cluster   ServeClusterFlags `embed:"" prefix:"cluster-" group:"cluster"`
	GCPercent int               `help:"Go GC target for the server, as GOGC: the heap may grow this many percent over live data before a collection. sessionrt's live heap is small (~30 MB with 500 active sessions) and short-lived garbage dominates, so 75 holds RSS after 500 concurrent sessions ~10 MB lower than Go's default 100 for ~2% more GC work. GOGC in the environment wins." default:"75" env:"SESSIONRT_GC_PERCENT"`
	Pprof     string            `help:"Serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060); sessionrt bench --profile sets it." env:"SESSIONRT_PPROF_ADDR" placeholder:"ADDR"`
}

// tokenFile holds the generated bearer token, mode 0600, in the data directory.
const tokenFile = "token"

func (c *ServeCmd) Run(g *Globals) error {
	if c.Insecure && !loopback(c.Listen) {
		return fmt.Errorf("--insecure is only allowed on a loopback address, not %s", c.Listen)
	}
	if err := c.Cluster.check(g.JournalDSN); err != nil {
		return err
	}
	if c.GCPercent <= 0 {
		return fmt.Errorf("--gc-percent must be positive, not %d", c.GCPercent)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(c.GCPercent)
	}
	if c.Pprof != "" {
		_, stopPprof, err := servePprof(c.Pprof)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	log := slog.New(slog.NewTextHandler(g.errOut(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	token := ""
	if !c.Insecure {
		var err error
		if token, err = loadOrCreateToken(g.Data); err != nil {
			return err
		}
	}
	if c.Config != "" {
		if _, err := os.Stat(c.Config); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
	}
	n, err := node.Start(ctx, node.Config{Data: g.Data, JournalURL: g.JournalDSN, Owner: c.Owner, Recovery: actors.Recovery(c.Recovery), Logger: log,
		ConfigFile: c.Config, Titles: true})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Stop(sctx); err != nil {
			log.Error("stop", "err", err)
		}
	}()

	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", c.Listen, err)
	}
	var sessions api.Sessions = n.Sessions
	if c.Cluster.enabled() {
		m, router, err := c.Cluster.join(ctx, n, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer m.Shutdown(true)
		sessions = router
		fmt.Fprintf(g.out(), "cluster member %s of %s (actor address %s)\n", c.Cluster.Member, c.Cluster.Name, m.Address())
	}
	handler, err := apiHandler(n, sessions, api.Config{Token: token, Insecure: c.Insecure, Hosts: c.AllowHost, CORSOrigins: c.CORS})
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(handler.Close) // open event streams end at once
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(g.out(), "sessionrt serving http://%s (data %s)\n", ln.Addr(), n.Config.Data)
	if token != "" {
		fmt.Fprintf(g.out(), "bearer token in %s\n", filepath.Join(n.Config.Data, tokenFile))
	}

	// Sessions that were mid-drain when the last process died. A cluster
	// member leaves that to placement: each mid-drain session resumes on the
	// member disthash gives it (--cluster-resume-at-start, and whenever a
	// member leaves).
	if !c.Cluster.enabled() {
		recovered, err := n.Sessions.Recover(ctx, func(done, total int) {
			fmt.Fprintf(g.out(), "recovering sessions: %d/%d\n", done, total)
		})
		if err != nil {
			log.Error("recovery stopped", "err", err, "recovered", len(recovered))
		}
	}

	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	case <-ctx.Done():
		fmt.Fprintln(g.out(), "shutting down: drains stop at their next safe boundary")
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.Grace)
	defer cancel()
	_ = srv.Shutdown(sctx)
	n.Sessions.Shutdown(sctx)
	return nil
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loadOrCreateToken returns SESSIONRT_TOKEN, or the token saved in the data
// directory, creating one (0600) on first start.
func loadOrCreateToken(data string) (string, error) {
	if t := os.Getenv("SESSIONRT_TOKEN"); t != "" {
		return t, nil
	}
	path := filepath.Join(data, tokenFile)
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	t := hex.EncodeToString(raw[:])
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	return t, nil
}
