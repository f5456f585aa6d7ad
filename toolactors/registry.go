package toolactors

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/toolactors/bound"
	"github.com/sessionrt/sessionrt/toolactors/managed"
	"github.com/sessionrt/sessionrt/toolactors/permission"
	"github.com/sessionrt/sessionrt/toolactors/schema"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// BuiltinScope is the scope of the built-in tools.
const BuiltinScope = "builtin"

// DefaultAgent is the agent used when a call names none (OpenCode's "build").
const DefaultAgent = "build"

// Config configures a registry. Zero fields take the documented defaults.
type Config struct {
	// Dir is the Location directory. Required; symlinks are resolved once.
	Dir string
	// Project keys saved approvals; default Dir.
	Project string
	// References are named project references read may resolve against.
	References map[string]string
	// Output stores Managed Tool Output Files. Required. Run its sweeper (Store.Run)
	// once per process, not per registry.
	Output *managed.Store
	// Limits of one settlement's model-visible text; default 2000 lines / 50 KiB.
	Limits bound.Limits
	// Approvals holds saved project approvals; default an in-memory store.
	Approvals permission.ApprovalStore
	// Tools configures the built-in tools.
	Tools tools.Config
	// NoBuiltins leaves the built-in tools out (contribute your own).
	NoBuiltins bool
	// StopWait bounds how long a stopping call actor waits for its tool to return
	// after cancelling it; default 10 s (a bash group gets SIGKILL after 3 s).
	StopWait time.Duration
	// Logger receives operator diagnostics; default slog.Default().
	Logger *slog.Logger
}

func (c Config) validate() (Config, error) {
	if c.Dir == "" {
		return c, errors.New("tool registry: Config.Dir (the Location directory) is required")
	}
	if c.Output == nil {
		return c, errors.New("tool registry: Config.Output (the managed tool output store) is required")
	}
	dir, err := filepath.Abs(c.Dir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return c, fmt.Errorf("tool registry: Location directory %q: %w", c.Dir, err)
	}
	c.Dir = dir
	if c.Project == "" {
		c.Project = c.Dir
	}
	if c.Approvals == nil {
		c.Approvals = &permission.MemoryApprovals{}
	}
	if c.StopWait <= 0 {
		c.StopWait = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// callSupervision stops a failed call actor and never restarts it: a restart would
// either lose the call (protoactor drops the failing message) or run the tool twice.
// The call's settle-once guard and the registry's Terminated handler still produce its
// one settlement.
func callSupervision() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(0, time.Second, func(reason any) actor.Directive {
		return actor.StopDirective
	})
}

// Props returns the props of a registry actor for cfg. Its parent (the Location
// supervisor) may restart it: a restart rebuilds the built-in scope from cfg, stops the
// running call actors (each still settles, as interrupted) and drops other
// contributions, which their owners re-contribute.
func Props(cfg Config) (*actor.Props, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor { return newRegistry(cfg) },
		actor.WithSupervisor(callSupervision())), nil
}

type scope struct {
	name  string
	tools []tools.Tool
}

// callKey names a running call. Provider call IDs may repeat across turns,
// so the owning assistant message is part of it: a call of the next turn
// must not be taken for the previous one whose actor has not stopped yet.
type callKey struct{ session, assistant, call string }

type registry struct {
	cfg      Config
	scopes   []scope // in contribution order
	revision uint64
	byName   map[string]tools.Tool // resolved view: later scopes shadow earlier
	winner   map[string]int        // tool name → index of the scope whose tool is used
	running  map[callKey]*callRun
	byActor  map[string]*callRun // actor PID id → call
	cancels  []*cancelWaiter     // CancelTool requests waiting for their calls to stop
}

// cancelWaiter answers a CancelTool request once its calls' actors have terminated.
type cancelWaiter struct {
	replyTo *actor.PID
	ack     *CancelAck
	pending map[string]bool // actor PID ids still stopping
}

func newRegistry(cfg Config) *registry {
	r := &registry{cfg: cfg, running: map[callKey]*callRun{}, byActor: map[string]*callRun{}}
	if !cfg.NoBuiltins {
		r.scopes = append(r.scopes, scope{BuiltinScope, tools.Builtins(cfg.Tools)})
	}
	r.rebuild()
	return r
}

func (r *registry) rebuild() {
	r.revision++
	r.byName, r.winner = map[string]tools.Tool{}, map[string]int{}
	for i, s := range r.scopes {
		for _, t := range s.tools {
			r.byName[t.Definition().Name] = t
			r.winner[t.Definition().Name] = i
		}
	}
}

// Receive handles the registry's messages. Every branch is panic-free by construction;
// a failing tool runs in its own call actor and goroutine.
func (r *registry) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Contribute:
		r.contribute(m)
	case Contribute:
		r.contribute(&m)
	case *CloseScope:
		r.closeScope(m.Scope)
	case CloseScope:
		r.closeScope(m.Scope)
	case *CatalogRequest:
		ctx.Respond(r.catalog(m.Rules))
	case CatalogRequest:
		ctx.Respond(r.catalog(m.Rules))
	case *ExecuteTool:
		r.execute(ctx, m)
	case ExecuteTool:
		r.execute(ctx, &m)
	case *CancelTool:
		r.cancel(ctx, m)
	case CancelTool:
		r.cancel(ctx, &m)
	case *ListCalls, ListCalls:
		out := &Calls{}
		for k, c := range r.running {
			out.Calls = append(out.Calls, RunningCall{SessionID: k.session, CallID: k.call, Tool: c.req.Tool, Actor: c.actor})
		}
		ctx.Respond(out)
	case *actor.Terminated:
		c, ok := r.byActor[m.Who.Id]
		if !ok {
			return
		}
		delete(r.byActor, m.Who.Id)
		delete(r.running, callKey{c.req.SessionID, c.req.AssistantMessageID, c.req.CallID})
		// Normally the call settled before its actor stopped; this covers an actor
		// that died without its tool returning.
		c.settleError(ErrorInterrupted, InterruptedMessage, "", "")
		r.cancelDone(ctx, m.Who.Id)
	}
}

func (r *registry) contribute(m *Contribute) {
	for i, s := range r.scopes {
		if s.name == m.Scope {
			r.scopes = append(r.scopes[:i], r.scopes[i+1:]...)
			break
		}
	}
	r.scopes = append(r.scopes, scope{m.Scope, append([]tools.Tool(nil), m.Tools...)})
	r.rebuild()
}

func (r *registry) closeScope(name string) {
	for i, s := range r.scopes {
		if s.name == name {
			r.scopes = append(r.scopes[:i], r.scopes[i+1:]...)
			r.rebuild()
			return
		}
	}
}

func (r *registry) catalog(rules []permission.Rule) *Catalog {
	out := &Catalog{Revision: r.revision}
	for i, sc := range r.scopes {
		for _, t := range sc.tools {
			d := t.Definition()
			if r.winner[d.Name] != i || permission.Hidden(rules, d.Action) {
				continue // shadowed by a later scope, or fully denied
			}
			out.Tools = append(out.Tools, d)
		}
	}
	return out
}

func (r *registry) execute(ctx actor.Context, m *ExecuteTool) {
	replyTo := m.ReplyTo
	if replyTo == nil {
		replyTo = ctx.Sender()
	}
	c := &callRun{req: m, replyTo: replyTo, system: ctx.ActorSystem(), logger: r.cfg.Logger}
	if replyTo == nil {
		r.cfg.Logger.Error("tool call without a reply address dropped", "session", m.SessionID, "call", m.CallID, "tool", m.Tool)
		return
	}
	key := callKey{m.SessionID, m.AssistantMessageID, m.CallID}
	if _, dup := r.running[key]; dup {
		return // the running call settles it
	}
	if m.CallID == "" || m.SessionID == "" {
		c.settleError(ErrorInvalidInput, "tool call without a session ID or call ID", "", "")
		return
	}
	if m.Dir != "" && filepath.Clean(m.Dir) != r.cfg.Dir {
		if real, err := filepath.EvalSymlinks(m.Dir); err != nil || real != r.cfg.Dir {
			c.settleError(ErrorFailed, fmt.Sprintf("tool call for Location %s reached the registry of %s", m.Dir, r.cfg.Dir), "", "")
			return
		}
	}
	for i, rule := range m.Rules {
		if err := rule.Validate(); err != nil {
			c.settleError(ErrorFailed, fmt.Sprintf("permission rule %d of agent %q: %v", i, m.Agent, err), "", "")
			return
		}
	}
	tool, ok := r.byName[m.Tool]
	if !ok {
		c.settleError(ErrorUnknownTool, fmt.Sprintf("unknown tool %q; available: %s", m.Tool, r.names()), "", "")
		return
	}
	if err := tool.Definition().Input.Validate(m.Input); err != nil {
		var fe *schema.FieldError
		field := ""
		if errors.As(err, &fe) {
			field = fe.Field
		}
		c.settleError(ErrorInvalidInput, fmt.Sprintf("%s: %v", m.Tool, err), field, "")
		return
	}
	pid := ctx.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return &callActor{run: c, tool: tool, cfg: r.cfg}
	}), "call-")
	c.actor = pid
	r.running[key] = c
	r.byActor[pid.Id] = c
}

func (r *registry) cancel(ctx actor.Context, m *CancelTool) {
	w := &cancelWaiter{replyTo: ctx.Sender(), ack: &CancelAck{SessionID: m.SessionID, CallID: m.CallID}, pending: map[string]bool{}}
	for k, c := range r.running {
		if k.session == m.SessionID && (m.CallID == "" || k.call == m.CallID) {
			ctx.Stop(c.actor)
			w.pending[c.actor.Id] = true
			w.ack.Stopped++
		}
	}
	if w.replyTo == nil {
		return
	}
	if len(w.pending) == 0 {
		ctx.Respond(w.ack)
		return
	}
	r.cancels = append(r.cancels, w)
}

// cancelDone records that a call actor terminated and answers the cancel requests
// that were waiting only for it.
func (r *registry) cancelDone(ctx actor.Context, actorID string) {
	kept := r.cancels[:0]
	for _, w := range r.cancels {
		delete(w.pending, actorID)
		if len(w.pending) == 0 {
			ctx.Send(w.replyTo, w.ack)
			continue
		}
		kept = append(kept, w)
	}
	r.cancels = kept
}

func (r *registry) names() string {
	var names []string
	for _, d := range r.catalog(nil).Tools {
		names = append(names, d.Name)
	}
	return strings.Join(names, ", ")
}

// callRun is one call's settle-once state, shared by the registry, the call actor and
// the goroutine running the tool. Whoever settles first sends the one ToolSettled.
type callRun struct {
	req     *ExecuteTool
	replyTo *actor.PID
	actor   *actor.PID
	system  *actor.ActorSystem
	logger  *slog.Logger
	once    sync.Once
}

func (c *callRun) settle(s *ToolSettled) {
	c.once.Do(func() {
		s.SessionID, s.AssistantMessageID, s.CallID, s.Tool = c.req.SessionID, c.req.AssistantMessageID, c.req.CallID, c.req.Tool
		s.Agent = c.req.Agent
		if s.Agent == "" {
			s.Agent = DefaultAgent
		}
		c.system.Root.Send(c.replyTo, s)
	})
}

func (c *callRun) settleError(kind ErrorKind, msg, field, feedback string) {
	c.settle(&ToolSettled{Error: &ToolError{Kind: kind, Message: msg, Field: field, Feedback: feedback}})
}
