package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/cluster"
)

// ClusterCmd inspects a running cluster by joining it as a client (a
// member that hosts nothing): the same provider flags `serve` members use.
type ClusterCmd struct {
	Name     string        `help:"Cluster name." default:"sessionrt" env:"SESSIONRT_CLUSTER_NAME"`
	Provider string        `help:"Membership provider: automanaged, consul or etcd." default:"automanaged" enum:"automanaged,consul,etcd" env:"SESSIONRT_CLUSTER_PROVIDER"`
	Peers    []string      `help:"automanaged: health host:port of every member." sep:"," env:"SESSIONRT_CLUSTER_PEERS"`
	Consul   string        `help:"consul: agent address." default:"127.0.0.1:8500" env:"SESSIONRT_CLUSTER_CONSUL"`
	Etcd     []string      `help:"etcd: endpoints." default:"127.0.0.1:2379" sep:"," env:"SESSIONRT_CLUSTER_ETCD"`
	Expect   int           `help:"Wait until at least this many members are seen." default:"1"`
	Wait     time.Duration `help:"How long to wait for the topology." default:"5s"`
	JSON     bool          `help:"Print JSON."`

	Members ClusterMembersCmd `cmd:"" help:"List the cluster's members and the kinds they host."`
	Where   ClusterWhereCmd   `cmd:"" help:"Name the member a session is placed on."`
}

// join starts a client member and waits for the topology.
func (c *ClusterCmd) join(g *Globals) (*cluster.Member, []cluster.MemberInfo, error) {
	log := slog.New(slog.NewTextHandler(g.errOut(), &slog.HandlerOptions{Level: slog.LevelError + 4})) // the library is noisy
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	cfg := cluster.Config{
		Name:     c.Name,
		Provider: cluster.Provider(c.Provider),
		Members:  c.Peers,
		Consul:   cluster.ConsulConfig{Address: c.Consul},
		Etcd:     cluster.EtcdConfig{Endpoints: c.Etcd},
		Logger:   log,
	}
	if cfg.Provider == cluster.Automanaged && len(c.Peers) == 0 {
		return nil, nil, &exitError{code: exitUsage, err: errors.New("cluster: --peers is required with the automanaged provider (health host:port of every member)")}
	}
	m, err := cluster.Start(system, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: join %s: %w", c.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Wait)
	defer cancel()
	ms, err := m.WaitMembers(ctx, max(c.Expect, 1))
	if err != nil {
		m.Shutdown(false)
		return nil, nil, fmt.Errorf("cluster: %w", err)
	}
	return m, ms, nil
}

// ClusterMembersCmd lists the members.
type ClusterMembersCmd struct{}

func (c *ClusterMembersCmd) Help() string {
	return "Joins as a client through the provider and prints the topology.\n\nExamples:\n  sessionrt cluster --peers 10.0.0.1:6330,10.0.0.2:6330 members\n  sessionrt cluster --provider consul members --json"
}

func (c *ClusterMembersCmd) Run(g *Globals, cc *ClusterCmd) error {
	m, ms, err := cc.join(g)
	if err != nil {
		return err
	}
	defer m.Shutdown(false)
	return printMembers(g.out(), ms, cc.JSON)
}

func printMembers(w io.Writer, ms []cluster.MemberInfo, asJSON bool) error {
	if asJSON {
		if ms == nil {
			ms = []cluster.MemberInfo{}
		}
		return printJSON(w, ms)
	}
	rows := [][]string{{"ADDRESS", "ID", "KINDS"}}
	for _, x := range ms {
		rows = append(rows, []string{x.Address, x.ID, strings.Join(x.Kinds, ",")})
	}
	return table(w, rows)
}

// ClusterWhereCmd names the member a session's grain is placed on.
type ClusterWhereCmd struct {
	Session string `arg:"" help:"Session ID."`
}

func (c *ClusterWhereCmd) Help() string {
	return "Computes the session's placement (disthash over the current members) without activating it.\n\nExample:\n  sessionrt cluster --peers 10.0.0.1:6330,10.0.0.2:6330 where ses_0190…"
}

func (c *ClusterWhereCmd) Run(g *Globals, cc *ClusterCmd) error {
	if strings.TrimSpace(c.Session) == "" {
		return &exitError{code: exitUsage, err: errors.New("cluster where: empty session ID")}
	}
	m, _, err := cc.join(g)
	if err != nil {
		return err
	}
	defer m.Shutdown(false)
	addr := m.Where(c.Session, cluster.SessionKind)
	if addr == "" {
		return fmt.Errorf("cluster where %s: no member hosts %q grains", c.Session, cluster.SessionKind)
	}
	if cc.JSON {
		return printJSON(g.out(), map[string]string{"session": c.Session, "member": addr})
	}
	_, err = fmt.Fprintln(g.out(), addr)
	return err
}
