package cluster

import (
	"context"
	"fmt"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// metricsRefresh is how often the gauges are sampled besides at every
// topology change and grain activation or stop.
const metricsRefresh = time.Second

// ExportMetrics publishes the topology and this member's placement in reg
// (served at /metrics) until ctx ends:
//
//	sessionrt_cluster_members                    members in the topology
//	sessionrt_cluster_member_up{address}         1 while a member is in it, 0 after it left
//	sessionrt_cluster_topology_changes_total     topology changes seen
//	sessionrt_cluster_grains{kind}               grains of each hosted kind activated here
func (m *Member) ExportMetrics(ctx context.Context, reg *metrics.Registry) error {
	members, err := reg.Gauge("sessionrt_cluster_members", "Members in the cluster topology as this member sees it.")
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	up, err := reg.GaugeVec("sessionrt_cluster_member_up", "1 while the member at address is in the topology, 0 after it left.", "address")
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	changes, err := reg.Counter("sessionrt_cluster_topology_changes_total", "Topology changes this member has seen.")
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	grains, err := reg.GaugeVec("sessionrt_cluster_grains", "Grains of each kind activated on this member (placement).", "kind")
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	known := map[string]bool{}
	sample := func() {
		now := map[string]bool{}
		for _, x := range m.Members() {
			now[x.Address] = true
		}
		members.Set(float64(len(now)))
		for addr := range now {
			known[addr] = true
		}
		for addr := range known {
			if g, err := up.With(addr); err == nil {
				g.Set(b2f(now[addr]))
			}
		}
		for kind, n := range m.active {
			if g, err := grains.With(kind); err == nil {
				g.Set(float64(n.Load()))
			}
		}
	}
	topo := make(chan struct{}, 1)
	sub := m.system.EventStream.Subscribe(func(ev any) {
		if _, ok := ev.(*pcluster.ClusterTopology); ok {
			changes.Inc()
			select {
			case topo <- struct{}{}:
			default:
			}
		}
	})
	sample()
	go func() {
		defer m.system.EventStream.Unsubscribe(sub)
		tick := time.NewTicker(metricsRefresh)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-topo:
			case <-m.activated:
			case <-tick.C:
			}
			sample()
		}
	}()
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
