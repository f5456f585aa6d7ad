package cluster

import (
	"context"
	"sync"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/sessionrt/sessionrt/actors"
)

// orphanWakers bounds how many orphaned sessions one member wakes at once.
const orphanWakers = 8

// ResumeOrphans re-activates, on this member, the sessions a dead member
// left owing work, without waiting for a caller to touch them: whenever a
// member leaves the topology it lists the sessions the shared journal shows
// mid-drain or holding admitted, unpromoted input (midDrain, e.g.
// persistence.Journal.Owed) and wakes those that disthash now places here. The activation settles what the dead
// owner left (its running tools fail durably, none runs again) and resumes
// the drain once. Rendezvous hashing moves only the dead member's
// identities, so a session still running on a live member is not disturbed
// (a Wake to it would coalesce anyway). It returns when ctx ends.
//
// With atStart it also sweeps once when the topology first holds every
// configured peer (automanaged) or first forms (other providers): after a
// whole-cluster restart nobody else would resume what the old members
// left. A member joining a running cluster should not: the join moves
// grains whose drains may still run on live members, and a sweep would
// take them over (safely, by fencing, but interrupting their tools).
func (m *Member) ResumeOrphans(ctx context.Context, midDrain func(context.Context) ([]string, error), atStart bool) {
	sweep := make(chan struct{}, 1)
	startSwept := !atStart
	ready := func(t *pcluster.ClusterTopology) bool {
		if m.cfg.Provider == Automanaged {
			return len(t.Members) >= len(m.cfg.Members)
		}
		return len(t.Members) > 0
	}
	signal := func() {
		select {
		case sweep <- struct{}{}:
		default:
		}
	}
	var mu sync.Mutex
	sub := m.system.EventStream.Subscribe(func(ev any) {
		t, ok := ev.(*pcluster.ClusterTopology)
		if !ok {
			return
		}
		mu.Lock()
		first := !startSwept && ready(t)
		startSwept = startSwept || first
		mu.Unlock()
		if first || len(t.Left) > 0 {
			signal()
		}
	})
	defer m.system.EventStream.Unsubscribe(sub)
	// The topology may have formed before we subscribed.
	if n := len(m.Members()); atStart && ((m.cfg.Provider == Automanaged && n >= len(m.cfg.Members)) || (m.cfg.Provider != Automanaged && n > 0)) {
		mu.Lock()
		if !startSwept {
			startSwept = true
			signal()
		}
		mu.Unlock()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep:
		}
		m.wakeOrphans(ctx, midDrain)
	}
}

func (m *Member) wakeOrphans(ctx context.Context, midDrain func(context.Context) ([]string, error)) {
	lctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	ids, err := midDrain(lctx)
	cancel()
	if err != nil {
		m.cfg.Logger.Warn("cluster: list sessions mid-drain after a member left", "err", err)
		return
	}
	self := m.Address()
	sem := make(chan struct{}, orphanWakers)
	var wg sync.WaitGroup
	woken := 0
	for _, id := range ids {
		if m.Where(id, SessionKind) != self {
			continue
		}
		woken++
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := m.Request(ctx, id, SessionKind, &actors.Wake{Owed: true}, CallOptions{Timeout: 30 * time.Second}); err != nil {
				m.cfg.Logger.Warn("cluster: wake an orphaned session", "session", id, "err", err)
				return
			}
			m.failovers.Add(1)
		}()
	}
	wg.Wait()
	if woken > 0 {
		m.cfg.Logger.Info("cluster: resumed sessions a dead member left mid-drain", "sessions", woken)
	}
}
