package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/cluster"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// MemberConfig configures one member process.
type MemberConfig struct {
	Name       string        // this member's name (ownership records, logs)
	Health     int           // automanaged health port on 127.0.0.1
	Members    []string      // health host:port of every member
	Refresh    time.Duration // automanaged poll interval
	JournalURL string        // the shared mysql:// journal
	Data       string        // this member's data directory
	ToolSleep  time.Duration // how long each tool call sleeps after its side effect
	// LocationRoots pins Locations to members: directory -> member name
	// (the same map on every member). Tools of a Location another member
	// holds run there.
	LocationRoots map[string]string `json:",omitempty"`
	// AskBash makes the agent ask before every bash call (the driver
	// replies through /reply), so permission requests cross members too.
	AskBash bool `json:",omitempty"`
	// Spans keeps the node's span store (in the shared journal database),
	// flushing every 200 ms unless OTEL_BSP_SCHEDULE_DELAY says otherwise.
	Spans bool `json:",omitempty"`
	// ResumeAtStart resumes what the journal shows mid-drain once the
	// topology forms (a whole-cluster start; see cluster.JoinConfig).
	ResumeAtStart bool `json:",omitempty"`
	// DieAfterAdmitting is a session ID: the member SIGKILLs its own
	// process the moment a prompt admitted to that session is durable,
	// before its receipt is sent and before any drain starts, so the
	// journal holds admitted, unpromoted input that only a takeover can
	// act on (issue #21). Given to every member, it kills the one hosting
	// the session.
	DieAfterAdmitting string `json:",omitempty"`
}

// Member is the body of a member process: a node on the shared journal
// whose sessions are Session grains, resuming what a dead member left
// mid-drain. It prints "READY <actor address> <control address>" once
// joined, then "turn <unix ns> <session>" at every provider call (so the
// driver can time a resumed turn). Its control API on 127.0.0.1:
//
//	GET /members                 how many members this member sees
//	GET /where?id=S              the actor address placing session S
//	GET /create?id=S&loc=DIR     Create through the cluster
//	GET /admit?id=S&msg=M&text=T Prompt (queued, resume) through the cluster
//	GET /wait?id=S&timeout=MS    WaitIdle through the cluster
//	GET /move?id=S&to=DIR        Move through the cluster
//	GET /reply?id=S&req=R&answer=once  answer a permission request
//	GET /interrupt?id=S          Interrupt through the cluster
//	GET /revert?id=S&op=O&msg=M  Revert (stage, commit, clear, show, diff) through the cluster
//	GET /stats                   {"fenced": appends refused to a fenced activation here}
//	GET /inspect?id=S            what this member holds of S in memory (MemberInspection)
//	GET /metrics                 the node's metrics, cluster members and placement included
//
// Tools run with SESSIONRT_MEMBER=<name> in their environment (Member sets
// it in the process's), and the scripted tool prints "ran-on=<name>", so
// a test sees which member ran a tool.
func Member(ctx context.Context, cfg MemberConfig, out io.Writer) error {
	if err := os.Setenv("SESSIONRT_MEMBER", cfg.Name); err != nil {
		return err
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	fenced := &fenceCounter{next: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), n: new(atomic.Int64)}
	log := slog.New(fenced).With("member", cfg.Name)
	prov, err := memberProvider(cfg.ToolSleep, func(sid string) { say("turn %d %s", time.Now().UnixNano(), sid) })
	if err != nil {
		return err
	}
	if cfg.Spans && os.Getenv("OTEL_BSP_SCHEDULE_DELAY") == "" {
		if err := os.Setenv("OTEL_BSP_SCHEDULE_DELAY", "200"); err != nil {
			return err
		}
	}
	var agents map[string]actors.Agent
	if cfg.AskBash {
		agents = map[string]actors.Agent{"build": {Rules: []permission.Rule{
			{Action: "*", Resource: "*", Effect: permission.Allow},
			{Action: "bash", Resource: "*", Effect: permission.Ask},
		}}}
	}
	n, err := node.Start(ctx, node.Config{
		Agents:       agents,
		Data:         cfg.Data,
		JournalURL:   cfg.JournalURL,
		Owner:        fmt.Sprintf("%s/%d", cfg.Name, os.Getpid()),
		Providers:    func(messages.ModelRef) (provider.Provider, error) { return prov, nil },
		DefaultModel: Model,
		Logger:       log,
		NoSpanStore:  !cfg.Spans,
		Faults:       dieAfterAdmitting(cfg.DieAfterAdmitting),
	})
	if err != nil {
		return err
	}
	defer n.Stop(context.Background())
	m, err := cluster.Join(ctx, n.System, cluster.JoinConfig{
		Member: cfg.Name,
		Cluster: cluster.Config{Name: "chaos", AutoManagePort: cfg.Health, Members: cfg.Members, RefreshTTL: cfg.Refresh,
			Logger: log},
		Sessions: n.Sessions, Locations: n.Locations, Roots: cfg.LocationRoots, Snapshots: n.Snapshots,
		MidDrain: n.Journal.Owed, ResumeAtStart: cfg.ResumeAtStart, Tracer: n.Telemetry.TracerProvider, Metrics: n.Telemetry.Registry, Logger: log,
	})
	if err != nil {
		return err
	}
	router := cluster.NewRouter(m)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /members", func(w http.ResponseWriter, r *http.Request) {
		reply(w, len(m.Members()), nil)
	})
	mux.HandleFunc("GET /where", func(w http.ResponseWriter, r *http.Request) {
		reply(w, m.Where(r.URL.Query().Get("id"), cluster.SessionKind), nil)
	})
	// Commands go through the cluster Router, as a server's API would.
	mux.HandleFunc("GET /create", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res, err := router.Create(r.Context(), q.Get("id"), actors.Create{Location: q.Get("loc")})
		reply(w, res, err)
	})
	mux.HandleFunc("GET /admit", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res, err := router.Prompt(r.Context(), q.Get("id"), actors.Prompt{MessageID: q.Get("msg"), Prompt: messages.Prompt{Text: q.Get("text")}, Delivery: messages.Queue, Resume: true})
		reply(w, res, err)
	})
	mux.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("timeout"))
		ctx, cancel := context.WithTimeout(r.Context(), time.Duration(ms)*time.Millisecond)
		defer cancel()
		res, err := router.WaitIdle(ctx, r.URL.Query().Get("id"))
		reply(w, res, err)
	})
	mux.HandleFunc("GET /move", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res, err := router.Move(r.Context(), q.Get("id"), q.Get("to"))
		reply(w, res, err)
	})
	mux.HandleFunc("GET /revert", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res, err := router.Revert(r.Context(), q.Get("id"), actors.Revert{Op: q.Get("op"), MessageID: q.Get("msg")})
		reply(w, res, err)
	})
	mux.HandleFunc("GET /interrupt", func(w http.ResponseWriter, r *http.Request) {
		err := router.Interrupt(r.Context(), r.URL.Query().Get("id"))
		reply(w, "ok", err)
	})
	mux.HandleFunc("GET /reply", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		err := router.ReplyPermission(r.Context(), q.Get("id"), actors.ReplyPermission{RequestID: q.Get("req"), Reply: messages.PermissionReply(q.Get("answer"))})
		reply(w, "ok", err)
	})
	mux.Handle("GET /metrics", n.Telemetry.Registry.Handler())
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]int64{"fenced": fenced.n.Load()}, nil)
	})
	mux.HandleFunc("GET /inspect", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		out := MemberInspection{Member: cfg.Name}
		var err error
		if out.Session, err = n.Sessions.Inspect(r.Context(), id); err != nil {
			out.Err = err.Error()
		}
		calls, err := m.ProxiedCalls(r.Context())
		if err != nil {
			out.Err += " " + err.Error()
		}
		for _, c := range calls {
			if c.Session == id {
				out.Proxied = append(out.Proxied, c)
			}
		}
		reply(w, out, nil)
	})
	say("READY %s %s", m.Address(), ln.Addr())
	srv := &http.Server{Handler: mux}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	err = srv.Serve(ln)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// dieAfterAdmitting is the fault hook of MemberConfig.DieAfterAdmitting
// (nil: no faults).
func dieAfterAdmitting(sid string) func(actors.FaultPoint, string) bool {
	if sid == "" {
		return nil
	}
	return func(p actors.FaultPoint, s string) bool {
		if p == actors.FaultAfterAdmission && s == sid {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // nothing more of this process may run
		}
		return false
	}
}

// MemberInspection is one member's in-memory view of a session, for a
// run's diagnostics when the session does not settle.
type MemberInspection struct {
	Member  string
	Session *actors.Inspection    // nil: no activation of it lives here
	Proxied []cluster.ProxiedCall // its tool calls this member waits for from another
	Err     string                `json:",omitempty"`
}

func reply(w http.ResponseWriter, res any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	_ = json.NewEncoder(w).Encode(res)
}

// fenceCounter counts the Session actor's "activation fenced" warnings:
// each is an append the journal refused because a newer activation owns
// the session (nothing was written).
type fenceCounter struct {
	next slog.Handler
	n    *atomic.Int64
}

func (f *fenceCounter) Enabled(ctx context.Context, l slog.Level) bool { return f.next.Enabled(ctx, l) }

func (f *fenceCounter) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "session activation fenced") {
		f.n.Add(1)
	}
	return f.next.Handle(ctx, r)
}

func (f *fenceCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &fenceCounter{next: f.next.WithAttrs(as), n: f.n}
}

func (f *fenceCounter) WithGroup(g string) slog.Handler {
	return &fenceCounter{next: f.next.WithGroup(g), n: f.n}
}

// GateFile, in the Location, releases every "gated" tool call.
const GateFile = "gate"

// SideEffects is the file in the Location every tool call appends its
// call ID (its marker) to: a tool run twice shows as a repeated marker.
const SideEffects = "side-effects.log"

// Model is the model the members' sessions use (a scripted provider).
var Model = messages.ModelRef{Provider: "scripted", ID: "chaos"}

// memberProvider answers a prompt "tool s=<session>" with one bash call
// that appends its call ID to the side-effect file and then sleeps (so a
// member can be killed while tools run), "gated s=<session>" with one that
// waits for GateFile instead, and everything else — a tool
// result, a restart note, "plain …" — with "done". Call IDs are unique per
// process and call, so a tool run twice shows as a repeated marker.
func memberProvider(sleep time.Duration, turn func(sid string)) (*scripted.Provider, error) {
	var calls atomic.Int64
	pid := os.Getpid()
	return scripted.New(scripted.Config{Func: func(_ context.Context, req *provider.Request, _ int) (scripted.Turn, error) {
		sid := ""
		for _, m := range req.Messages {
			if m.Role == provider.RoleUser {
				if i := strings.Index(m.Text, "s="); i >= 0 && sid == "" {
					sid = strings.Fields(m.Text[i+2:])[0]
				}
			}
		}
		turn(sid)
		last := req.Messages[len(req.Messages)-1]
		gated := strings.HasPrefix(last.Text, "gated ")
		if last.Role != provider.RoleUser || !(strings.HasPrefix(last.Text, "tool ") || gated) || len(req.Tools) == 0 {
			return scripted.Turn{Text: "done"}, nil
		}
		id := fmt.Sprintf("call_%s_%d_%d", sid, pid, calls.Add(1))
		wait := fmt.Sprintf("sleep %.3f", sleep.Seconds())
		if gated {
			wait = fmt.Sprintf("while [ ! -f %s ]; do sleep 0.05; done", GateFile)
		}
		args, _ := json.Marshal(map[string]string{
			"command":     fmt.Sprintf("echo %s >> %s && echo ran-on=$SESSIONRT_MEMBER && %s", id, SideEffects, wait),
			"description": "member-kill side effect",
		})
		return scripted.Turn{Text: "working", ToolCalls: []scripted.ToolCall{{ID: id, Name: "bash", Args: args}}}, nil
	}})
}

// memberDataDir is member i's data directory under a run's directory.
func memberDataDir(run string, i int) string { return filepath.Join(run, fmt.Sprintf("member%d", i)) }
