package cluster

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/toolactors"
)

// fakeTopology is the membership a toolProxy sees: the addresses of the
// members present, and the Location grain on the first.
type fakeTopology struct {
	mu      sync.Mutex
	members map[string]bool
	grain   *actor.PID
}

func (f *fakeTopology) hasMember(addr string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.members[addr]
}

func (f *fakeTopology) hostsKind(string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.members) > 0 && f.members[f.grain.Address]
}

func (f *fakeTopology) grainPID(string, string) *actor.PID { return f.grain }

func (f *fakeTopology) leave(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.members, addr)
}

// settlements collects what a proxy sends back to the Session.
type settlements chan *toolactors.ToolSettled

func (s settlements) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*toolactors.ToolSettled); ok {
		s <- m
	}
}

// TestProxySettlesTheCallsOfADeadMemberWhicheverSideNoticesFirst: a
// proxy's calls to the member holding their Location are settled as
// interrupted once that member is gone, whether the proxy learns it from
// the topology event or first from the member list while handling another
// session's message (the library updates the list before it publishes the
// event: a CancelTool from a session failing over arrives in between). A
// call to a member still present is left running.
func TestProxySettlesTheCallsOfADeadMemberWhicheverSideNoticesFirst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		notice func(system *actor.ActorSystem, proxy *actor.PID)
	}{
		{"topology event first", func(system *actor.ActorSystem, proxy *actor.PID) {
			system.Root.Send(proxy, &topologyChanged{left: map[string]bool{"h:2": true}})
		}},
		{"member list first, then the event", func(system *actor.ActorSystem, proxy *actor.PID) {
			system.Root.Send(proxy, &toolactors.CancelTool{SessionID: "ses_failing_over"})
			system.Root.Send(proxy, &topologyChanged{left: map[string]bool{"h:2": true}})
		}},
		{"member list only", func(system *actor.ActorSystem, proxy *actor.PID) {
			system.Root.Send(proxy, &toolactors.CancelTool{SessionID: "ses_failing_over"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
			top := &fakeTopology{members: map[string]bool{"h:1": true, "h:2": true}, grain: actor.NewPID("h:2", "location")}
			proxy := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
				return &toolProxy{cl: top, reg: SessionRegistry(), log: slog.New(slog.DiscardHandler), kind: "location@m2", dir: "/p", calls: map[string]pendingCall{}}
			}))
			defer system.Root.Stop(proxy)
			got := make(settlements, 4)
			session := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return got }))

			system.Root.Send(proxy, &toolactors.ExecuteTool{SessionID: "ses_1", AssistantMessageID: "msg_a", CallID: "call_1", Tool: "bash", ReplyTo: session})
			waitProxied(t, system, proxy, 1)
			top.leave("h:2")
			tc.notice(system, proxy)
			select {
			case m := <-got:
				if m.CallID != "call_1" || m.Error == nil || m.Error.Kind != toolactors.ErrorInterrupted {
					t.Fatalf("settlement %+v, want call_1 interrupted", m)
				}
			case <-time.After(time.Minute): // a backstop: a settlement comes at once or never
				t.Fatal("the call to the dead member was never settled: its Session would wait forever")
			}
			waitProxied(t, system, proxy, 0)
		})
	}

	t.Run("member still present", func(t *testing.T) {
		system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
		top := &fakeTopology{members: map[string]bool{"h:1": true, "h:2": true, "h:3": true}, grain: actor.NewPID("h:2", "location")}
		proxy := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &toolProxy{cl: top, reg: SessionRegistry(), log: slog.New(slog.DiscardHandler), kind: "location@m2", dir: "/p", calls: map[string]pendingCall{}}
		}))
		defer system.Root.Stop(proxy)
		got := make(settlements, 4)
		session := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return got }))
		system.Root.Send(proxy, &toolactors.ExecuteTool{SessionID: "ses_1", AssistantMessageID: "msg_a", CallID: "call_1", Tool: "bash", ReplyTo: session})
		top.leave("h:3")
		system.Root.Send(proxy, &topologyChanged{left: map[string]bool{"h:3": true}})
		waitProxied(t, system, proxy, 1)
		select {
		case m := <-got:
			t.Fatalf("a call to a live member was settled: %+v", m)
		default:
		}
	})
}

// waitProxied waits until the proxy holds n calls (its mailbox is FIFO
// from one sender, so this also orders the test's sends after the
// proxy's handling of the earlier ones).
func waitProxied(t *testing.T, system *actor.ActorSystem, proxy *actor.PID, n int) {
	t.Helper()
	res, err := system.Root.RequestFuture(proxy, &inspectProxy{}, time.Minute).Result()
	if err != nil {
		t.Fatal(err)
	}
	if calls := res.([]ProxiedCall); len(calls) != n {
		t.Fatalf("proxy holds %d calls (%+v), want %d", len(calls), calls, n)
	}
}
