package supervisor

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/contextsources"
)

func fixedSource(t *testing.T, key, text string) contextsources.SystemContext {
	t.Helper()
	src, err := contextsources.Make(contextsources.Spec[string]{
		Key:      key,
		Load:     func(context.Context) contextsources.Result[string] { return contextsources.Present(text) },
		Baseline: func(v string) string { return v },
	})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := contextsources.New(src)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func observeVia(t *testing.T, system *actor.ActorSystem, pid *actor.PID, extra ...contextsources.SystemContext) string {
	t.Helper()
	res, err := system.Root.RequestFuture(pid, &ObserveContext{Extra: extra}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	obs := res.(*ContextObserved)
	if obs.Err != nil {
		t.Fatal(obs.Err)
	}
	gen, err := contextsources.Initialize(obs.Observation)
	if err != nil {
		t.Fatal(err)
	}
	return gen.Baseline
}

func TestContextRegistryObservesSeededAndRegisteredSourcesInKeyOrder(t *testing.T) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	locs, err := New(system, Config{Children: []ChildSpec{ContextRegistryChild(contextsources.RegistryConfig{}, []ContextContribution{
		{Key: "core/b", Sources: func(dir string) (contextsources.SystemContext, error) {
			return fixedSource(t, "core/dir", "dir="+dir), nil
		}},
	})}})
	if err != nil {
		t.Fatal(err)
	}
	defer locs.Stop()
	dir := t.TempDir()
	pid, err := locs.Child(context.Background(), dir, ContextRegistryName)
	if err != nil {
		t.Fatal(err)
	}
	canon, _ := Canonical(dir)
	if got := observeVia(t, system, pid); got != "dir="+canon {
		t.Fatalf("seeded baseline %q", got)
	}
	res, err := system.Root.RequestFuture(pid, &RegisterContext{Key: "core/a", Sources: fixedSource(t, "core/first", "first")}, 5*time.Second).Result()
	if err != nil || res.(*ContextRegistered).Err != nil {
		t.Fatalf("register: %v %v", res, err)
	}
	got := observeVia(t, system, pid, fixedSource(t, "agent/skills", "skills"))
	if !strings.HasPrefix(got, "first") || !strings.Contains(got, "dir="+canon) || !strings.Contains(got, "skills") {
		t.Fatalf("baseline %q: want contribution-key order with the agent's extra sources", got)
	}
	if _, err := system.Root.RequestFuture(pid, &UnregisterContext{Key: "core/a"}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	if got := observeVia(t, system, pid); strings.Contains(got, "first") {
		t.Fatalf("unregistered contribution still observed: %q", got)
	}
}
