package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/cluster/wirepb"
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/telemetry"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// A Location is pinned to the member that holds its directory: each member
// hosts the grain kind LocationKindName(its name), registered on no other
// member, so disthash can place a Location's identity (its directory) only
// there. A Session on any member sends its tool calls to that grain through
// a local proxy (Placement.Tools), so after a move to a Location held by
// another member the next tools run there. Permission requests of a remote tool
// come back through the proxy to the Session's own asker. The context registry and the
// tool catalog stay on the Session's member (its Context Sources are Go
// values that do not cross the wire; the catalog is the same code
// everywhere): see doc.go.

// LocationKindName is the grain kind of the Locations member holds.
func LocationKindName(member string) string { return "location@" + member }

// RemoteExecuteTool is toolactors.ExecuteTool on the wire: without the
// permission asker (a function) and the reply PID (the proxy that sent it).
type RemoteExecuteTool struct {
	SessionID          string
	AssistantMessageID string
	CallID             string
	Tool               string
	Input              json.RawMessage
	Agent              string
	Dir                string
	Rules              []permission.Rule
}

// RemoteAsk carries a remote tool's permission request back to the proxy
// on the Session's member, whose Session journals and publishes it.
type RemoteAsk struct{ Request permission.Request }

// RemoteAskReply answers RemoteAsk: the client's reply, or why there is none.
type RemoteAskReply struct {
	Reply permission.Reply
	Err   string
}

// askLimit bounds a remote permission request; the tool call's context
// (cancelled when the call ends) is the real bound.
const askLimit = 24 * time.Hour

// LocationConfig configures LocationKind.
type LocationConfig struct {
	Member    string                // this member's name (required)
	Locations *supervisor.Locations // this member's Locations (required)
	Registry  *Registry             // wire types; default SessionRegistry()
	Logger    *slog.Logger
	// Tracer records a "location.run {tool}" span per call, a child of
	// the drain's execute_tool span on the Session's member (the trace
	// context travels in the message headers): one trace across members.
	// Nil records nothing.
	Tracer trace.TracerProvider
	// Snapshots is this member's file snapshot store: the Location
	// grain takes and restores the snapshots of the Locations it holds
	// (RemoteSnapshot). Nil answers that it keeps none.
	Snapshots *filesnap.Store
}

// LocationKind is the kind of this member's Location grains: identity = the
// canonical directory, answering RemoteExecuteTool with the settlement,
// and CancelTool with a CancelAck.
func LocationKind(cfg LocationConfig) (Kind, error) {
	if cfg.Member == "" || cfg.Locations == nil {
		return Kind{}, fmt.Errorf("%w: location kind needs the member's name and its Locations", ErrConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = SessionRegistry()
	}
	return Kind{Name: LocationKindName(cfg.Member), Produce: func(dir string) actor.Actor {
		return &locationGrain{member: cfg.Member, dir: dir, locs: cfg.Locations, reg: cfg.Registry, log: cfg.Logger, tracer: tracerOf(cfg.Tracer), callers: map[string]remoteCall{}, snaps: cfg.Snapshots}
	}}, nil
}

type locationGrain struct {
	member  string
	dir     string
	locs    *supervisor.Locations
	reg     *Registry
	log     *slog.Logger
	tracer  trace.Tracer
	tools   *actor.PID
	callers map[string]remoteCall // session/call -> the proxy to settle
	snaps   *filesnap.Store
}

type remoteCall struct {
	from *actor.PID
	span trace.Span
}

func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer("github.com/sessionrt/sessionrt/cluster")
}

func callKey(session, call string) string { return session + "/" + call }

func (g *locationGrain) registry() (*actor.PID, error) {
	if g.tools == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pid, err := g.locs.Child(ctx, g.dir, actors.ToolRegistryName)
		if err != nil {
			return nil, err
		}
		g.tools = pid
	}
	return g.tools, nil
}

func (g *locationGrain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *RemoteSnapshot:
		g.onSnapshot(ctx, m)
	case *snapshotDone:
		ctx.Send(m.to, m.reply) // encoded by the wire middleware
	case *RemoteExecuteTool:
		from := ctx.Sender()
		tools, err := g.registry()
		if err != nil {
			ctx.Respond(&toolactors.ToolSettled{SessionID: m.SessionID, AssistantMessageID: m.AssistantMessageID, CallID: m.CallID, Tool: m.Tool, Agent: m.Agent,
				Error: &toolactors.ToolError{Kind: toolactors.ErrorFailed, Message: fmt.Sprintf("location %s: %v", g.dir, err)}})
			return
		}
		parent := telemetry.ExtractHeaders(context.Background(), ctx.MessageHeader())
		_, span := g.tracer.Start(parent, "location.run "+m.Tool, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("gen_ai.conversation.id", m.SessionID),
			attribute.String("gen_ai.tool.call.id", m.CallID),
			attribute.String("gen_ai.tool.name", m.Tool),
			attribute.String("sessionrt.member", g.member),
			attribute.String("sessionrt.location", g.dir)))
		g.callers[callKey(m.SessionID, m.CallID)] = remoteCall{from: from, span: span}
		ctx.Send(tools, withHeader(ctx, &actor.MessageEnvelope{Message: &toolactors.ExecuteTool{
			SessionID: m.SessionID, AssistantMessageID: m.AssistantMessageID, CallID: m.CallID, Tool: m.Tool,
			Input: m.Input, Agent: m.Agent, Dir: m.Dir, Rules: m.Rules,
			Asker: g.asker(ctx.ActorSystem(), from), ReplyTo: ctx.Self(),
		}}))
	case *toolactors.ToolSettled:
		k := callKey(m.SessionID, m.CallID)
		if c, ok := g.callers[k]; ok {
			delete(g.callers, k)
			if m.Error != nil {
				c.span.SetStatus(codes.Error, m.Error.Message)
			}
			c.span.End()
			ctx.Send(c.from, m) // encoded by the wire middleware
		}
	case *toolactors.CancelTool:
		tools, err := g.registry()
		if err != nil {
			ctx.Respond(&toolactors.CancelAck{SessionID: m.SessionID, CallID: m.CallID})
			return
		}
		f := ctx.RequestFuture(tools, m, 10*time.Second)
		ctx.ReenterAfter(f, func(res any, err error) {
			ack, ok := res.(*toolactors.CancelAck)
			if !ok {
				ack = &toolactors.CancelAck{SessionID: m.SessionID, CallID: m.CallID}
			}
			ctx.Respond(ack)
		})
	}
}

// asker sends a call's permission requests to the proxy on the Session's
// member (from) and waits for the reply or the call's end. It runs on the
// tool's goroutine: it encodes and decodes itself (no middleware there).
func (g *locationGrain) asker(system *actor.ActorSystem, from *actor.PID) permission.Asker {
	reg := g.reg
	return permission.AskerFunc(func(ctx context.Context, req permission.Request) (permission.Reply, error) {
		if from == nil {
			return permission.Reply{}, errors.New("permission request: the call has no Session to ask")
		}
		enc, err := reg.Encode(&RemoteAsk{Request: req})
		if err != nil {
			return permission.Reply{}, err
		}
		f := actor.NewFuture(system, askLimit)
		system.Root.RequestWithCustomSender(from, enc, f.PID())
		type result struct {
			res any
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := f.Result()
			done <- result{res, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
			return permission.Reply{}, ctx.Err()
		}
		if r.err != nil {
			return permission.Reply{}, fmt.Errorf("permission request across members: %w", r.err)
		}
		if e, ok := r.res.(*wirepb.Encoded); ok {
			if r.res, err = reg.Decode(e); err != nil {
				return permission.Reply{}, err
			}
		}
		ar, ok := r.res.(*RemoteAskReply)
		if !ok {
			return permission.Reply{}, fmt.Errorf("permission request across members: answered %T", r.res)
		}
		if ar.Err != "" {
			return permission.Reply{}, errors.New(ar.Err)
		}
		return ar.Reply, nil
	})
}

// withHeader copies the incoming message's headers (the drain's trace
// context) onto env, so the tool's spans join the drain's trace across
// members.
func withHeader(ctx actor.Context, env *actor.MessageEnvelope) *actor.MessageEnvelope {
	if h := ctx.MessageHeader(); h != nil {
		for _, k := range h.Keys() {
			env.SetHeader(k, h.Get(k))
		}
	}
	return env
}

// Placement sends the tool calls of Locations held by other members to
// them. Roots map a directory to the member holding it (every directory
// under it too; the longest root wins); directories under no root, or
// under this member's, stay local.
type Placement struct {
	self  string
	roots []placementRoot

	mu      sync.Mutex
	m       *Member
	proxies map[string]*actor.PID // kind + dir -> proxy
}

type placementRoot struct{ dir, member string }

// NewPlacement builds the placement of member self from roots (directory ->
// member name; every member must be given the same roots).
func NewPlacement(self string, roots map[string]string) (*Placement, error) {
	if self == "" {
		return nil, fmt.Errorf("%w: placement needs this member's name", ErrConfig)
	}
	p := &Placement{self: self, proxies: map[string]*actor.PID{}}
	for dir, member := range roots {
		if !filepath.IsAbs(dir) || member == "" {
			return nil, fmt.Errorf("%w: location root %q -> %q: want an absolute directory and a member name", ErrConfig, dir, member)
		}
		p.roots = append(p.roots, placementRoot{dir: filepath.Clean(dir), member: member})
	}
	sort.Slice(p.roots, func(i, j int) bool { return len(p.roots[i].dir) > len(p.roots[j].dir) })
	return p, nil
}

// Holder names the member holding dir ("" when no root covers it).
func (p *Placement) Holder(dir string) string {
	dir = filepath.Clean(dir)
	for _, r := range p.roots {
		if dir == r.dir || strings.HasPrefix(dir, r.dir+string(filepath.Separator)) {
			return r.member
		}
	}
	return ""
}

// Attach gives the placement the member it sends through (after Start).
func (p *Placement) Attach(m *Member) {
	p.mu.Lock()
	p.m = m
	p.mu.Unlock()
}

// Tools is an actors.ToolPlacement: a proxy for a Location another member
// holds, nil for one held here.
func (p *Placement) Tools(_ context.Context, dir string, local *actor.PID) (*actor.PID, error) {
	holder := p.Holder(dir)
	if holder == "" || holder == p.self {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		return nil, fmt.Errorf("location %s is held by member %s, and this member has not joined the cluster", dir, holder)
	}
	kind := LocationKindName(holder)
	key := kind + "\x00" + dir
	if pid, ok := p.proxies[key]; ok {
		return pid, nil
	}
	props := actor.PropsFromProducer(func() actor.Actor {
		return &toolProxy{cl: p.m, reg: p.m.cfg.Registry, log: p.m.cfg.Logger, kind: kind, dir: dir, local: local, calls: map[string]pendingCall{}}
	}, wireProps(p.m.cfg.Registry, p.m.cfg.Logger)...)
	pid := p.m.system.Root.Spawn(props)
	p.proxies[key] = pid
	return pid, nil
}

// toolProxy stands, on the Session's member, for the tool registry of a
// Location another member holds.
type toolProxy struct {
	cl     proxyCluster
	reg    *Registry
	log    *slog.Logger
	kind   string
	dir    string
	local  *actor.PID             // this member's registry of dir: answers the catalog
	calls  map[string]pendingCall // session/call -> the Session to settle
	target *actor.PID
	sub    *eventstream.Subscription
}

// proxyCluster is what a toolProxy asks of the cluster (a *Member).
type proxyCluster interface {
	hasMember(addr string) bool
	hostsKind(kind string) bool
	grainPID(identity, kind string) *actor.PID
}

type pendingCall struct {
	to                     *actor.PID
	host                   string // the address of the member the call was sent to
	assistant, tool, agent string
	asker                  permission.Asker   // the Session's, for the remote tool's asks
	cancel                 context.CancelFunc // ends asks in flight when the call ends
}

// topologyChanged carries the addresses of the members that left: a member
// restarted on the same host:port (a fixed --cluster-port) is a new
// incarnation whose address is still in the topology, but the calls that
// ran on the old one are gone all the same.
type topologyChanged struct{ left map[string]bool }

func (p *toolProxy) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		system, self := ctx.ActorSystem(), ctx.Self()
		p.sub = system.EventStream.Subscribe(func(ev any) {
			if t, ok := ev.(*pcluster.ClusterTopology); ok {
				left := map[string]bool{}
				for _, m := range t.Left {
					left[m.Address()] = true
				}
				system.Root.Send(self, &topologyChanged{left: left})
			}
		})
	case *actor.Stopped:
		ctx.ActorSystem().EventStream.Unsubscribe(p.sub)
	case *topologyChanged:
		p.onTopology(ctx, m.left)
	case *toolactors.CatalogRequest:
		ctx.Forward(p.local)
	case *toolactors.ExecuteTool:
		replyTo := m.ReplyTo
		if replyTo == nil {
			replyTo = ctx.Sender()
		}
		target := p.grain(ctx)
		if target == nil {
			ctx.Send(replyTo, unavailable(m.SessionID, m.AssistantMessageID, m.CallID, m.Tool, m.Agent, toolactors.ErrorFailed,
				fmt.Sprintf("location %s: its member is not in the cluster", p.dir)))
			return
		}
		askCtx, cancel := context.WithCancel(context.Background())
		p.calls[callKey(m.SessionID, m.CallID)] = pendingCall{to: replyTo, host: target.Address, assistant: m.AssistantMessageID, tool: m.Tool, agent: m.Agent,
			asker: askerIn(askCtx, m.Asker), cancel: cancel}
		ctx.Send(target, withHeader(ctx, &actor.MessageEnvelope{Sender: ctx.Self(), Message: &RemoteExecuteTool{
			SessionID: m.SessionID, AssistantMessageID: m.AssistantMessageID, CallID: m.CallID, Tool: m.Tool,
			Input: m.Input, Agent: m.Agent, Dir: m.Dir, Rules: m.Rules,
		}}))
	case *toolactors.ToolSettled:
		k := callKey(m.SessionID, m.CallID)
		if c, ok := p.calls[k]; ok {
			delete(p.calls, k)
			c.cancel()
			ctx.Send(c.to, m)
		}
	case *RemoteAsk:
		p.onAsk(ctx, m)
	case *inspectProxy:
		calls := make([]ProxiedCall, 0, len(p.calls))
		for k, c := range p.calls {
			session, call, _ := strings.Cut(k, "/")
			calls = append(calls, ProxiedCall{Session: session, Call: call, Tool: c.tool, Host: c.host, Dir: p.dir})
		}
		ctx.Respond(calls)
	case *toolactors.CancelTool:
		target := p.grain(ctx)
		if target == nil {
			if ctx.Sender() != nil {
				ctx.Respond(&toolactors.CancelAck{SessionID: m.SessionID, CallID: m.CallID})
			}
			return
		}
		f := ctx.RequestFuture(target, m, 5*time.Second)
		ctx.ReenterAfter(f, func(res any, err error) {
			ack := &toolactors.CancelAck{SessionID: m.SessionID, CallID: m.CallID}
			if e, ok := res.(*wirepb.Encoded); ok {
				if d, derr := p.reg.Decode(e); derr == nil {
					if a, ok := d.(*toolactors.CancelAck); ok {
						ack = a
					}
				}
			}
			if ctx.Sender() != nil {
				ctx.Respond(ack)
			}
		})
	}
}

// ProxiedCall is a tool call a proxy sent to the member holding its
// Location and whose settlement has not come back (for diagnostics).
type ProxiedCall struct {
	Session, Call, Tool string
	Dir                 string // the Location
	Host                string // the address of the member running it
}

type inspectProxy struct{}

// ProxiedCalls lists, for diagnostics, the tool calls this member's
// proxies wait for from the members holding their Locations.
func (m *Member) ProxiedCalls(ctx context.Context) ([]ProxiedCall, error) {
	p := m.placement
	if p == nil {
		return nil, nil
	}
	p.mu.Lock()
	pids := make([]*actor.PID, 0, len(p.proxies))
	for _, pid := range p.proxies {
		pids = append(pids, pid)
	}
	p.mu.Unlock()
	var out []ProxiedCall
	for _, pid := range pids {
		timeout := 5 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		res, err := m.system.Root.RequestFuture(pid, &inspectProxy{}, timeout).Result()
		if err != nil {
			return out, fmt.Errorf("inspect tool proxy %s: %w", pid.Id, err)
		}
		out = append(out, res.([]ProxiedCall)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Session+out[i].Call < out[j].Session+out[j].Call })
	return out, nil
}

// grain is the Location grain's PID, activated on its member (nil when no
// member hosts its kind).
func (p *toolProxy) grain(ctx actor.Context) *actor.PID {
	if p.target != nil && !p.cl.hasMember(p.target.Address) {
		// Its member left; the topology event may still be on its way
		// (the library updates the member list before it publishes it).
		p.target = nil
		p.settleGone(ctx, nil, "member list")
	}
	if p.target == nil && p.cl.hostsKind(p.kind) {
		// (Asking for a kind no member hosts would wait out the
		// library's activation timeout.)
		p.target = p.cl.grainPID(p.dir, p.kind)
	}
	return p.target
}

// onTopology forgets a grain whose member left and settles the calls that
// ran there.
func (p *toolProxy) onTopology(ctx actor.Context, left map[string]bool) {
	if p.target != nil && incarnationGone(p.target.Address, p.cl.hasMember, left) {
		p.target = nil
	}
	p.settleGone(ctx, left, "topology event")
}

// settleGone settles, as interrupted, every call whose member incarnation
// is gone: its process is gone, and the Session must not wait for a
// settlement that cannot come. It goes by the member each call was sent
// to, not by the current target, which grain may have dropped already.
func (p *toolProxy) settleGone(ctx actor.Context, left map[string]bool, noticed string) {
	n := 0
	for k, c := range p.calls {
		if !incarnationGone(c.host, p.cl.hasMember, left) {
			continue
		}
		delete(p.calls, k)
		n++
		c.cancel()
		session, call, _ := strings.Cut(k, "/")
		ctx.Send(c.to, unavailable(session, c.assistant, call, c.tool, c.agent, toolactors.ErrorInterrupted, toolactors.InterruptedMessage))
	}
	if n > 0 {
		p.log.Warn("cluster: tool calls interrupted, the member running them is gone", "location", p.dir, "calls", n, "noticed in", noticed)
	}
}

// incarnationGone reports whether the member incarnation at addr, which runs
// our calls, is gone: it is no longer in the topology, or it left and a new
// incarnation took the same address.
func incarnationGone(addr string, inTopology func(string) bool, left map[string]bool) bool {
	return !inTopology(addr) || left[addr]
}

// askerIn binds a Session's asker to the call's lifetime.
func askerIn(ctx context.Context, a permission.Asker) permission.Asker {
	if a == nil {
		return nil
	}
	return permission.AskerFunc(func(_ context.Context, req permission.Request) (permission.Reply, error) {
		return a.Ask(ctx, req)
	})
}

// onAsk asks the Session for a remote tool and answers the remote asker
// off the mailbox (the client may take long to reply).
func (p *toolProxy) onAsk(ctx actor.Context, m *RemoteAsk) {
	to, system, reg := ctx.Sender(), ctx.ActorSystem(), p.reg
	answer := func(r *RemoteAskReply) {
		if to == nil {
			return
		}
		if enc, err := reg.Encode(r); err == nil {
			system.Root.Send(to, enc)
		}
	}
	c, ok := p.calls[callKey(m.Request.SessionID, m.Request.CallID)]
	if !ok || c.asker == nil {
		answer(&RemoteAskReply{Err: fmt.Sprintf("permission request for call %s: no Session waits for it here", m.Request.CallID)})
		return
	}
	go func() {
		r, err := c.asker.Ask(context.Background(), m.Request)
		if err != nil {
			answer(&RemoteAskReply{Err: err.Error()})
			return
		}
		answer(&RemoteAskReply{Reply: r})
	}()
}

func unavailable(session, assistant, call, tool, agent string, kind toolactors.ErrorKind, msg string) *toolactors.ToolSettled {
	return &toolactors.ToolSettled{SessionID: session, AssistantMessageID: assistant, CallID: call, Tool: tool, Agent: agent,
		Error: &toolactors.ToolError{Kind: kind, Message: msg}}
}
