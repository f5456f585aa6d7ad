package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// activations places one actor per identity in this process: it spawns the
// actor on first use and lets it passivate when idle.
//
// protoactor drops user messages that reach an actor after it stopped, so a
// request racing a passivation would hang until its timeout. The fix is a
// handshake under one lock: every request counts itself in-flight before it is
// sent, and an actor may passivate only while nothing is in flight; once it
// has, its entry is gone and the next request spawns a fresh activation.
type activations struct {
	system  *actor.ActorSystem
	spawner *actor.RootContext // spawns with the supervision of the caller's choice
	props   func(id string) *actor.Props
	prefix  string

	mu      sync.Mutex
	live    map[string]*activation
	retired map[string]chan struct{} // by PID ID: left the facade, not yet stopped
	gen     uint64
}

type activation struct {
	pid      *actor.PID
	inflight int
	// gone is closed when the actor stopped (passivated, fenced, or stopped
	// by its supervisor): requests still in its mailbox were dropped.
	gone chan struct{}
}

func newActivations(system *actor.ActorSystem, prefix string, props func(id string) *actor.Props) *activations {
	return &activations{system: system, spawner: system.Root, props: props, prefix: prefix, live: map[string]*activation{}}
}

// errActorGone means the activation died with the request in its mailbox.
var errActorGone = errors.New("actor stopped before answering")

// request sends msg to the activation of id and waits for its reply, until
// ctx is done or timeout passes. A request that finds the actor gone (it
// crashed with the message queued) is retried on a fresh activation:
// every command is idempotent by its ID, so a second delivery is harmless.
func (a *activations) request(ctx context.Context, id string, msg any, timeout time.Duration) (any, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		pid, gone, err := a.acquireWatched(id)
		if err != nil {
			return nil, err
		}
		res, err := a.await(ctx, pid, gone, msg, timeout)
		a.release(id, pid)
		if errors.Is(err, errActorGone) {
			a.forget(id, pid)
			lastErr = err
			continue
		}
		return res, err
	}
	return nil, fmt.Errorf("%s %s: %w", a.prefix, id, lastErr)
}

func (a *activations) await(ctx context.Context, pid *actor.PID, gone <-chan struct{}, msg any, timeout time.Duration) (any, error) {
	f := a.system.Root.RequestFuture(pid, msg, timeout)
	type result struct {
		res any
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := f.Result()
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			if errors.Is(r.err, actor.ErrDeadLetter) {
				return nil, errActorGone
			}
			if errors.Is(r.err, actor.ErrTimeout) {
				return nil, fmt.Errorf("no answer within %s: %w", timeout, context.DeadlineExceeded)
			}
			return nil, r.err
		}
		if _, gone := r.res.(*actor.DeadLetterResponse); gone {
			return nil, errActorGone
		}
		if err, ok := r.res.(error); ok {
			return nil, err
		}
		return r.res, nil
	case <-gone:
		// protoactor drops what was queued for a stopped actor: the reply
		// will never come, so the caller retries on a fresh activation.
		select {
		case r := <-done: // it answered before it stopped
			if r.err == nil {
				if err, ok := r.res.(error); ok {
					return nil, err
				}
				return r.res, nil
			}
		default:
		}
		return nil, errActorGone
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *activations) acquire(id string) (*actor.PID, error) {
	pid, _, err := a.acquireWatched(id)
	return pid, err
}

func (a *activations) acquireWatched(id string) (*actor.PID, <-chan struct{}, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.live[id]; ok {
		e.inflight++
		return e.pid, e.gone, nil
	}
	a.gen++
	// The generation keeps names unique while a passivated incarnation is
	// still finishing its stop.
	pid, err := a.spawner.SpawnNamed(a.props(id), fmt.Sprintf("%s/%s#%d", a.prefix, id, a.gen))
	if err != nil {
		return nil, nil, fmt.Errorf("activate %s %s: %w", a.prefix, id, err)
	}
	e := &activation{pid: pid, inflight: 1, gone: make(chan struct{})}
	a.live[id] = e
	return pid, e.gone, nil
}

// acquireLive is acquireWatched for an activation that is already live; it
// never spawns one (ok false when none is).
func (a *activations) acquireLive(id string) (*actor.PID, <-chan struct{}, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.live[id]
	if !ok {
		return nil, nil, false
	}
	e.inflight++
	return e.pid, e.gone, true
}

// stopped is called by an actor from its Stopped handler: its entry leaves
// the facade and every request waiting on it is told.
func (a *activations) stopped(id string, pid *actor.PID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.live[id]; ok && e.pid.Equal(pid) {
		delete(a.live, id)
		close(e.gone)
	}
	if g, ok := a.retired[pid.Id]; ok {
		delete(a.retired, pid.Id)
		close(g)
	}
}

func (a *activations) release(id string, pid *actor.PID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.live[id]; ok && e.pid.Equal(pid) {
		e.inflight--
	}
}

// forget drops the entry of an activation known to be dead.
func (a *activations) forget(id string, pid *actor.PID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.retire(id, pid)
}

// retire removes id's entry for pid but keeps its gone channel until the
// actor reports Stopped, so requests already queued learn of the stop.
func (a *activations) retire(id string, pid *actor.PID) {
	if e, ok := a.live[id]; ok && e.pid.Equal(pid) {
		delete(a.live, id)
		if a.retired == nil {
			a.retired = map[string]chan struct{}{}
		}
		a.retired[pid.Id] = e.gone
	}
}

// tryPassivate is called by an idle actor about itself. It returns true when
// the actor must stop now: no request is in flight and none can reach it any more.
func (a *activations) tryPassivate(id string, pid *actor.PID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.live[id]
	if !ok || !e.pid.Equal(pid) {
		return true // already replaced: this incarnation is stale
	}
	if e.inflight > 0 {
		return false
	}
	a.retire(id, pid)
	return true
}

// active returns the identities with a live activation.
func (a *activations) active() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]string, 0, len(a.live))
	for id := range a.live {
		ids = append(ids, id)
	}
	return ids
}

// stopAll stops every live activation and waits for each to finish stopping.
func (a *activations) stopAll() {
	a.mu.Lock()
	pids := make([]*actor.PID, 0, len(a.live))
	for _, e := range a.live {
		pids = append(pids, e.pid)
	}
	a.live = map[string]*activation{}
	a.mu.Unlock()
	for _, pid := range pids {
		_ = a.system.Root.StopFuture(pid).Wait()
	}
}

// isLive reports whether id has an activation in this process.
func (a *activations) isLive(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.live[id]
	return ok
}
