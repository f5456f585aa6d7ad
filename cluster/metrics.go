package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// ExportMetrics publishes the topology and this member's placement in reg
// (served at /metrics, and over OTLP when configured) until ctx ends. The
// values are read when they are collected, so they are current at every
// scrape:
//
//	sessionrt_cluster_members                      members in the topology
//	sessionrt_cluster_member_up{address}           1 while a member is in it, 0 after it left
//	sessionrt_cluster_topology_changes_total       topology changes seen
//	sessionrt_cluster_grains{kind}                 grains of each hosted kind activated here
//	sessionrt_cluster_placement_changes_total{kind} grains of kind that started or stopped here
//	sessionrt_cluster_failovers_total              sessions a dead member left mid-drain resumed here
func (m *Member) ExportMetrics(ctx context.Context, reg *metrics.Registry) error {
	meter := reg.Meter()
	members, err := meter.Int64ObservableGauge("sessionrt.cluster.members",
		metric.WithDescription("Members in the cluster topology as this member sees it."))
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	up, err := meter.Int64ObservableGauge("sessionrt.cluster.member_up",
		metric.WithDescription("1 while the member at address is in the topology, 0 after it left."))
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	changes, err := meter.Int64ObservableCounter("sessionrt.cluster.topology_changes",
		metric.WithDescription("Topology changes this member has seen."))
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	grains, err := meter.Int64ObservableGauge("sessionrt.cluster.grains",
		metric.WithDescription("Grains of each kind activated on this member (placement)."))
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	placements, err := meter.Int64ObservableCounter("sessionrt.cluster.placement_changes",
		metric.WithDescription("Grains of each kind that started or stopped on this member (a session placed here or moved away)."))
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	failovers, err := meter.Int64ObservableCounter("sessionrt.cluster.failovers",
		metric.WithDescription("Sessions a dead member left mid-drain that this member resumed."))
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}

	var topo atomic.Int64
	sub := m.system.EventStream.Subscribe(func(ev any) {
		if _, ok := ev.(*pcluster.ClusterTopology); ok {
			topo.Add(1)
		}
	})
	var mu sync.Mutex
	known := map[string]bool{} // every address seen, so one that left reads 0
	reg2, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		now := map[string]bool{}
		for _, x := range m.Members() {
			now[x.Address] = true
		}
		o.ObserveInt64(members, int64(len(now)))
		mu.Lock()
		for addr := range now {
			known[addr] = true
		}
		for addr := range known {
			v := int64(0)
			if now[addr] {
				v = 1
			}
			o.ObserveInt64(up, v, metric.WithAttributes(attribute.String("address", addr)))
		}
		mu.Unlock()
		o.ObserveInt64(changes, topo.Load())
		for kind, n := range m.active {
			kindAttr := metric.WithAttributes(attribute.String("kind", kind))
			o.ObserveInt64(grains, n.active.Load(), kindAttr)
			o.ObserveInt64(placements, n.changes.Load(), kindAttr)
		}
		o.ObserveInt64(failovers, m.failovers.Load())
		return nil
	}, members, up, changes, grains, placements, failovers)
	if err != nil {
		m.system.EventStream.Unsubscribe(sub)
		return fmt.Errorf("cluster metrics: %w", err)
	}
	go func() {
		<-ctx.Done()
		m.system.EventStream.Unsubscribe(sub)
		_ = reg2.Unregister()
	}()
	return nil
}
