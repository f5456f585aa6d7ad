package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/cluster"
	"github.com/sessionrt/sessionrt/node"
)

// ServeClusterFlags make `serve` a cluster member: its sessions become grains placed by
// identity over every member, its Locations are reachable from the others, and the
// HTTP API routes each command to the member holding the session. The provider flags
// are the ones `sessionrt cluster` uses to join as a client.
type ServeClusterFlags struct {
	Member        string            `name:"member" help:"Join a cluster as this member (a name unique in the cluster). Needs a journal every member shares (--journal)." env:"SESSIONRT_CLUSTER_MEMBER" placeholder:"NAME"`
	Name          string            `help:"Cluster name; members of one cluster share it." default:"sessionrt" env:"SESSIONRT_CLUSTER_NAME"`
	Provider      string            `help:"Membership provider: automanaged, consul or etcd." default:"automanaged" enum:"automanaged,consul,etcd" env:"SESSIONRT_CLUSTER_PROVIDER"`
	Peers         []string          `help:"automanaged: health host:port of every member, this one included." sep:"," env:"SESSIONRT_CLUSTER_PEERS"`
	Health        int               `help:"automanaged: this member's health port (its entry in --cluster-peers)." env:"SESSIONRT_CLUSTER_HEALTH"`
	Host          string            `help:"Address this member binds and advertises for actor traffic." default:"127.0.0.1" env:"SESSIONRT_CLUSTER_HOST"`
	Port          int               `help:"Actor (gRPC) port; 0 picks a free one." env:"SESSIONRT_CLUSTER_PORT"`
	Consul        string            `help:"consul: agent address." default:"127.0.0.1:8500" env:"SESSIONRT_CLUSTER_CONSUL"`
	Etcd          []string          `help:"etcd: endpoints." default:"127.0.0.1:2379" sep:"," env:"SESSIONRT_CLUSTER_ETCD"`
	Root          map[string]string `help:"Pin a Location directory (and everything under it) to the member that holds it: DIR=MEMBER, the same on every member. Tools of other directories run where the session is." mapsep:";" placeholder:"DIR=MEMBER"`
	ResumeAtStart bool              `help:"After the topology forms, resume the sessions the journal shows mid-drain that are placed here. Set it when starting the whole cluster, not when one member joins a running cluster (it would take over drains still running elsewhere)."`
}

func (f *ServeClusterFlags) enabled() bool { return f.Member != "" }

// check refuses a cluster configuration that cannot work, before anything starts.
func (f *ServeClusterFlags) check(journalURL string) error {
	if !f.enabled() {
		return nil
	}
	if journalURL == "" {
		return &exitError{code: exitUsage, err: errors.New("serve --cluster-member needs a journal every member shares: --journal mysql://user:pass@host:port/db (MySQL/MariaDB, or one member's embedded engine served by `sessionrt journal serve`); each member's own embedded journal would split the truth")}
	}
	if f.Provider == string(cluster.Automanaged) && (len(f.Peers) == 0 || f.Health <= 0) {
		return &exitError{code: exitUsage, err: errors.New("serve --cluster-member with the automanaged provider needs --cluster-peers (health host:port of every member) and --cluster-health (this member's health port)")}
	}
	return nil
}

// join makes the node a member and returns the command door the API uses.
func (f *ServeClusterFlags) join(ctx context.Context, n *node.Node, log *slog.Logger) (*cluster.Member, api.Sessions, error) {
	m, err := cluster.Join(ctx, n.System, cluster.JoinConfig{
		Member: f.Member,
		Cluster: cluster.Config{
			Name: f.Name, Provider: cluster.Provider(f.Provider), Host: f.Host, Port: f.Port,
			AutoManagePort: f.Health, Members: f.Peers,
			Consul: cluster.ConsulConfig{Address: f.Consul}, Etcd: cluster.EtcdConfig{Endpoints: f.Etcd},
			Logger: log,
		},
		Sessions: n.Sessions, Locations: n.Locations, Roots: f.Root, Snapshots: n.Snapshots,
		MidDrain: n.Journal.Owed, ResumeAtStart: f.ResumeAtStart,
		Tracer: n.Telemetry.TracerProvider, Metrics: n.Telemetry.Registry, Logger: log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("join cluster %s as %s: %w", f.Name, f.Member, err)
	}
	return m, cluster.NewRouter(m), nil
}
