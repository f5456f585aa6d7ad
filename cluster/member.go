package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/labstack/echo"

	"github.com/sessionrt/sessionrt/cluster/wirepb"
)

// Provider names a membership provider.
type Provider string

const (
	// Automanaged: every member serves an HTTP health endpoint and polls the
	// static peer list (Config.Members). For loopback and small deployments.
	Automanaged Provider = "automanaged"
	// Consul: members register with a Consul agent (Config.Consul).
	Consul Provider = "consul"
	// Etcd: members register under a key prefix in etcd (Config.Etcd).
	Etcd Provider = "etcd"
)

// Sentinel errors callers branch on.
var (
	ErrConfig  = errors.New("invalid cluster config")
	ErrTimeout = errors.New("cluster request timed out")
)

// Config describes one member. Zero values take the documented defaults.
type Config struct {
	Name     string   // cluster name; default "sessionrt". Members of one cluster share it.
	Provider Provider // default Automanaged
	Host     string   // address the member binds and advertises; default 127.0.0.1
	Port     int      // actor (gRPC) port; 0 picks a free one

	// Automanaged provider.
	AutoManagePort int           // this member's health HTTP port (required unless a client); bound on Host, not 0.0.0.0
	Members        []string      // host:port of every member's health endpoint, this one included
	RefreshTTL     time.Duration // how often peers are polled; default 500ms (the library's is 2 s)

	Consul ConsulConfig
	Etcd   EtcdConfig

	Kinds    []Kind    // grain kinds this member hosts; none makes it a client
	Registry *Registry // wire types; default SessionRegistry()

	RequestTimeout time.Duration // default per-call timeout; default 5 s
	RetryCount     int           // identity-lookup retries per call; default 3
	Logger         *slog.Logger  // default slog.Default()
}

// ConsulConfig configures the consul provider (compiled in, not exercised by tests).
type ConsulConfig struct {
	Address string        // consul agent; default 127.0.0.1:8500
	TTL     time.Duration // service TTL; default 3 s
}

// EtcdConfig configures the etcd provider (exercised by api/e2e's etcd test).
type EtcdConfig struct {
	Endpoints   []string      // default 127.0.0.1:2379
	BaseKey     string        // key prefix; default "/sessionrt". Members are leased keys BaseKey/Name/Name@ID.
	DialTimeout time.Duration // default 5 s
}

func (c *Config) withDefaults() error {
	if c.Name == "" {
		c.Name = "sessionrt"
	}
	if c.Provider == "" {
		c.Provider = Automanaged
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("%w: port %d out of range", ErrConfig, c.Port)
	}
	if c.RefreshTTL <= 0 {
		c.RefreshTTL = 500 * time.Millisecond
	}
	if c.Registry == nil {
		c.Registry = SessionRegistry()
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.RetryCount <= 0 {
		c.RetryCount = 3
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch c.Provider {
	case Automanaged:
		if len(c.Kinds) > 0 && (c.AutoManagePort <= 0 || c.AutoManagePort > 65535) {
			return fmt.Errorf("%w: an automanaged member needs AutoManagePort (got %d)", ErrConfig, c.AutoManagePort)
		}
		if len(c.Members) == 0 {
			return fmt.Errorf("%w: automanaged needs the static Members list (health host:port of every member)", ErrConfig)
		}
		for _, m := range c.Members {
			if _, _, err := net.SplitHostPort(m); err != nil {
				return fmt.Errorf("%w: member %q: %v", ErrConfig, m, err)
			}
		}
	case Consul, Etcd:
	default:
		return fmt.Errorf("%w: unknown provider %q (want automanaged, consul or etcd)", ErrConfig, c.Provider)
	}
	return nil
}

// Member is this process's membership in the cluster.
type Member struct {
	cfg    Config
	system *actor.ActorSystem
	c      *pcluster.Cluster
	active map[string]*grainCounts // kind -> grains activated here
	// failovers counts sessions a dead member left mid-drain that this
	// member resumed (metrics).
	failovers atomic.Int64
	placement *Placement // set by Join
}

// Start joins system to the cluster described by cfg: remote on Host:Port,
// disthash identity lookup, the chosen provider, and cfg.Kinds as grain
// kinds (a member with no kinds starts as a client). It returns once the
// member has started (protoactor waits about 1 s).
func Start(system *actor.ActorSystem, cfg Config) (m *Member, err error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	kinds := make([]*pcluster.Kind, 0, len(cfg.Kinds))
	names := make([]string, 0, len(cfg.Kinds))
	active := map[string]*grainCounts{}
	for _, k := range cfg.Kinds {
		active[k.Name] = new(grainCounts)
		pk, err := k.build(cfg.Registry, cfg.Logger, active[k.Name])
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		kinds, names = append(kinds, pk), append(names, k.Name)
	}
	provider, err := newProvider(system, cfg, names)
	if err != nil {
		return nil, err
	}
	pcfg := pcluster.Configure(cfg.Name, provider, disthash.New(),
		remote.Configure(cfg.Host, cfg.Port),
		pcluster.WithKinds(kinds...),
		pcluster.WithRequestTimeout(cfg.RequestTimeout))
	c := pcluster.New(system, pcfg)
	// The library panics on start failures (provider, gossip); they are
	// errors to us.
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("start cluster member %s: %v", cfg.Name, r)
		}
	}()
	if len(kinds) == 0 {
		c.StartClient()
	} else {
		c.StartMember()
	}
	return &Member{cfg: cfg, system: system, c: c, active: active}, nil
}

func newProvider(system *actor.ActorSystem, cfg Config, kinds []string) (pcluster.ClusterProvider, error) {
	switch cfg.Provider {
	case Consul:
		return newConsul(cfg.Consul)
	case Etcd:
		return newEtcd(cfg.Name, cfg.Etcd)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	if len(kinds) == 0 {
		// A client only polls the members; its server is never started
		// (the provider closes it on shutdown, so it must exist).
		return automanaged.NewWithTesting(cfg.RefreshTTL, cfg.AutoManagePort, e, cfg.Members...), nil
	}
	// Automanaged binds 0.0.0.0 unless handed its own server: give it an
	// echo server on our listener, serving the node model it would.
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.AutoManagePort)))
	if err != nil {
		return nil, fmt.Errorf("cluster automanaged health port: %w", err)
	}
	e.Listener = ln
	e.GET("/_health", func(ec echo.Context) error {
		host, port, err := system.GetHostPort()
		if err != nil {
			return ec.String(http.StatusServiceUnavailable, err.Error())
		}
		return ec.JSON(http.StatusOK, automanaged.NewNode(cfg.Name, system.ID, host, port, cfg.AutoManagePort, kinds))
	})
	return automanaged.NewWithTesting(cfg.RefreshTTL, cfg.AutoManagePort, e, cfg.Members...), nil
}

// Address is this member's actor address (host:port).
func (m *Member) Address() string { return m.system.Address() }

// ID is this member's ID in the cluster.
func (m *Member) ID() string { return m.system.ID }

// Cluster exposes the protoactor cluster for what this package does not wrap.
func (m *Member) Cluster() *pcluster.Cluster { return m.c }

// WaitMembers waits until the topology holds at least n members, or ctx ends.
// A client sees members only after the provider's first poll.
func (m *Member) WaitMembers(ctx context.Context, n int) ([]MemberInfo, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ms := m.Members()
		if len(ms) >= n {
			return ms, nil
		}
		select {
		case <-ctx.Done():
			return ms, fmt.Errorf("cluster %s: %d of %d members seen: %w", m.cfg.Name, len(ms), n, ctx.Err())
		case <-tick.C:
		}
	}
}

// MemberInfo describes one member as the topology sees it.
type MemberInfo struct {
	ID      string
	Address string
	Kinds   []string
}

// Members lists the current topology, sorted by address.
func (m *Member) Members() []MemberInfo {
	var out []MemberInfo
	for _, x := range m.c.MemberList.Members().Members() {
		out = append(out, MemberInfo{ID: x.Id, Address: x.Address(), Kinds: append([]string(nil), x.Kinds...)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// Where names the member address that disthash places identity of kind on
// in the current topology, without activating it ("" when no member hosts
// the kind). During a topology change it may differ from where an older
// activation still runs: the journal's fencing settles that.
func (m *Member) Where(identity, kind string) string {
	r := pcluster.NewRendezvous()
	r.UpdateMembers(m.c.MemberList.Members().Members())
	return r.GetByClusterIdentity(pcluster.NewClusterIdentity(identity, kind))
}

// CallOptions bound one Request. Zero values take the member's defaults.
type CallOptions struct {
	Timeout    time.Duration // whole call, retries included; capped by ctx's deadline
	RetryCount int           // identity-lookup / dead-letter retries
}

// Request sends msg to the grain identity of kind and returns its decoded
// reply. It always passes timeout, retry count, retry backoff and sender
// context to protoactor (whose defaults are one shared, mutated global). A
// reply that is an error (e.g. *actors.CommandError) is returned as the
// error.
//
// When the member hosting the grain leaves the topology mid-call (crash,
// kill), the call is sent again at once to the grain's new placement
// instead of waiting out the timeout: failover costs the provider's
// detection time, not the caller's timeout. The abandoned attempt's future
// lingers until its timeout. Retries can deliver msg twice: commands must be
// idempotent (the Session's are, by ID).
func (m *Member) Request(ctx context.Context, identity, kind string, msg any, opt CallOptions) (any, error) {
	if identity == "" || kind == "" {
		return nil, fmt.Errorf("%w: request needs identity and kind (got %q, %q)", ErrConfig, identity, kind)
	}
	if opt.Timeout <= 0 {
		opt.Timeout = m.cfg.RequestTimeout
	}
	if opt.RetryCount <= 0 {
		opt.RetryCount = m.cfg.RetryCount
	}
	deadline := time.Now().Add(opt.Timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	// One ID for every delivery of this call, so retries are deduplicated.
	msg = withCommandID(msg)
	enc, err := m.cfg.Registry.Encode(msg)
	if err != nil {
		return nil, fmt.Errorf("request %s/%s: %w", kind, identity, err)
	}
	changed := make(chan struct{}, 1)
	sub := m.system.EventStream.Subscribe(func(ev any) {
		if _, ok := ev.(*pcluster.ClusterTopology); ok {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	defer m.system.EventStream.Unsubscribe(sub)

	type result struct {
		res any
		err error
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("request %s/%s: %w", kind, identity, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("request %s/%s: %w", kind, identity, ErrTimeout)
		}
		host := m.Where(identity, kind)
		done := make(chan result, 1)
		go func() {
			res, err := m.c.Request(identity, kind, enc,
				pcluster.WithContext(m.system.Root),
				pcluster.WithTimeout(left),
				pcluster.WithRetryCount(opt.RetryCount),
				pcluster.WithRetryAction(backoff))
			done <- result{res, err}
		}()
	wait:
		for {
			select {
			case r := <-done:
				return m.reply(identity, kind, r.res, r.err)
			case <-ctx.Done():
				return nil, fmt.Errorf("request %s/%s: %w", kind, identity, ctx.Err())
			case <-changed:
				if host != "" && !m.hasMember(host) {
					m.c.PidCache.Remove(identity, kind)
					m.cfg.Logger.Warn("cluster: grain host left mid-request; sending again", "kind", kind, "identity", identity, "host", host)
					// disthash's partition manager takes the new topology
					// in its own event subscriber, whose order relative to
					// ours is not fixed: a resend that overtakes it asks the
					// dead member to activate the grain and waits out the
					// library's 5 s activation timeout. Let it go first.
					time.Sleep(resendSettle)
					break wait
				}
			}
		}
	}
}

// hostsKind reports whether any member in the topology hosts kind.
func (m *Member) hostsKind(kind string) bool {
	for _, x := range m.c.MemberList.Members().Members() {
		for _, k := range x.Kinds {
			if k == kind {
				return true
			}
		}
	}
	return false
}

// grainPID activates identity of kind where disthash places it (nil when
// that fails).
func (m *Member) grainPID(identity, kind string) *actor.PID { return m.c.Get(identity, kind) }

func (m *Member) hasMember(addr string) bool {
	for _, x := range m.c.MemberList.Members().Members() {
		if x.Address() == addr {
			return true
		}
	}
	return false
}

// reply turns what protoactor returned into a decoded reply or an error.
func (m *Member) reply(identity, kind string, res any, err error) (any, error) {
	if res == nil {
		if err == nil {
			err = errors.New("no reply")
		}
		return nil, fmt.Errorf("request %s/%s: %w: %v", kind, identity, ErrTimeout, err)
	}
	if e, ok := res.(*wirepb.Encoded); ok {
		if res, err = m.cfg.Registry.Decode(e); err != nil {
			return nil, fmt.Errorf("request %s/%s: reply: %w", kind, identity, err)
		}
	}
	if _, ok := res.(*actor.DeadLetterResponse); ok {
		return nil, fmt.Errorf("request %s/%s: %w: dead letter", kind, identity, ErrTimeout)
	}
	if rerr, ok := res.(error); ok {
		return nil, fmt.Errorf("request %s/%s: %w", kind, identity, rerr)
	}
	return res, nil
}

// resendSettle is how long a resend after a topology change waits for the
// library's own subscribers to take the change.
const resendSettle = 25 * time.Millisecond

// backoff waits between lookup retries (the library's default waits
// nanoseconds: i*i*50 without a unit) and returns the next attempt number.
func backoff(i int) int {
	i++
	d := time.Duration(i*i) * 50 * time.Millisecond
	if d > time.Second {
		d = time.Second
	}
	time.Sleep(d)
	return i
}

// Shutdown leaves the cluster. Graceful shutdown hands ownership over and
// takes about 2 s (protoactor sleeps); non-graceful just stops. A client
// stops its provider and remote (protoactor's own Shutdown panics on a
// client: it has no gossip).
func (m *Member) Shutdown(graceful bool) {
	defer func() {
		if r := recover(); r != nil {
			m.cfg.Logger.Error("cluster: shutdown panicked", "cluster", m.cfg.Name, "panic", r)
		}
	}()
	if len(m.cfg.Kinds) == 0 {
		_ = m.c.Config.ClusterProvider.Shutdown(false)
		m.c.Remote.Shutdown(false)
		m.system.Shutdown()
		return
	}
	m.c.Shutdown(graceful)
}
