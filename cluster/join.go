package cluster

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// JoinConfig is what a node needs to serve its sessions as a cluster member.
type JoinConfig struct {
	// Member names this member: its Location kind (LocationKindName) and
	// the value Roots refer to. Required, unique in the cluster.
	Member string
	// Cluster is the membership (provider, peers, ports); its Kinds and
	// Registry are filled in here.
	Cluster   Config
	Sessions  *actors.Sessions      // this node's facade (required)
	Locations *supervisor.Locations // this node's Locations (required)
	// Roots pins Locations to members: directory -> member name, the same
	// on every member. Directories under no root run their tools where the
	// session's grain is.
	Roots map[string]string
	// MidDrain lists the sessions that owe work in the shared journal
	// (persistence.Journal.Owed: mid-drain, or holding admitted input no
	// drain promoted); when set, this member resumes those a dead member
	// left (ResumeOrphans) until ctx ends.
	MidDrain func(context.Context) ([]string, error)
	// ResumeAtStart also resumes, once the topology forms, what the
	// journal shows mid-drain and disthash places here: for a whole-cluster
	// start, not for a member joining a running cluster (see ResumeOrphans).
	ResumeAtStart bool
	// Snapshots is this node's file snapshot store: the snapshots of the
	// Locations this member holds are taken and restored in it, for
	// sessions on any member. Nil: none kept here.
	Snapshots *filesnap.Store
	Tracer    trace.TracerProvider // Location spans; nil: none
	Metrics   *metrics.Registry    // members and placement; nil: none
	Logger    *slog.Logger
}

// Join makes this node a cluster member: the Session grain on its facade,
// its Location kind, the placement of Locations held elsewhere, orphan
// resumption and metrics. ctx bounds the background work (orphans,
// metrics), not the membership: Shutdown ends that. Route commands with
// NewRouter(m).
func Join(ctx context.Context, system *actor.ActorSystem, jc JoinConfig) (*Member, error) {
	if jc.Sessions == nil || jc.Locations == nil || jc.Member == "" {
		return nil, fmt.Errorf("%w: join needs the member's name, its Sessions and its Locations", ErrConfig)
	}
	if jc.Logger == nil {
		jc.Logger = slog.Default()
	}
	cfg := jc.Cluster
	if cfg.Registry == nil {
		cfg.Registry = SessionRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = jc.Logger
	}
	grain, err := SessionGrain(SessionGrainConfig{Sessions: jc.Sessions, Registry: cfg.Registry, Logger: jc.Logger})
	if err != nil {
		return nil, err
	}
	locations, err := LocationKind(LocationConfig{Member: jc.Member, Locations: jc.Locations, Registry: cfg.Registry, Logger: jc.Logger, Tracer: jc.Tracer,
		Snapshots: jc.Snapshots})
	if err != nil {
		return nil, err
	}
	placement, err := NewPlacement(jc.Member, jc.Roots)
	if err != nil {
		return nil, err
	}
	jc.Sessions.SetToolPlacement(placement.Tools)
	jc.Sessions.SetSnapshotPlacement(placement.Snapshots)
	cfg.Kinds = append(append([]Kind(nil), cfg.Kinds...), grain, locations)
	m, err := Start(system, cfg)
	if err != nil {
		return nil, err
	}
	placement.Attach(m)
	m.placement = placement
	if jc.Metrics != nil {
		if err := m.ExportMetrics(ctx, jc.Metrics); err != nil {
			m.Shutdown(false)
			return nil, err
		}
	}
	if jc.MidDrain != nil {
		go m.ResumeOrphans(ctx, jc.MidDrain, jc.ResumeAtStart)
	}
	return m, nil
}
