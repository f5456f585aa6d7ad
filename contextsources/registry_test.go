package contextsources

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestRegistryOrdersByContributionKeyThenContributionOrder(t *testing.T) {
	reg := NewRegistry(RegistryConfig{})
	mk := func(k string) Source { return strSource(t, k, newCell("v"), false) }
	if _, err := reg.Register("b/instructions", mustNew(t, mk("z/agents"))); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register("a/core", mustNew(t, mk("y/env"), mk("x/date"))); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reg.SystemContext().Keys(), " "); got != "y/env x/date z/agents" {
		t.Fatalf("order %q", got)
	}
	if got := strings.Join(reg.Contributions(), " "); got != "a/core b/instructions" {
		t.Fatalf("contributions %q", got)
	}
}

func TestRegistryRefusesASourceKeyAlreadyContributed(t *testing.T) {
	reg := NewRegistry(RegistryConfig{})
	if _, err := reg.Register("a/core", mustNew(t, strSource(t, "core/date", newCell("1"), false))); err != nil {
		t.Fatal(err)
	}
	_, err := reg.Register("b/plugin", mustNew(t, strSource(t, "core/date", newCell("2"), false)))
	if !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), `"core/date"`) || !strings.Contains(err.Error(), `"a/core"`) {
		t.Fatalf("Register: %v", err)
	}
	if _, err := reg.Register("bad key", SystemContext{}); !errors.Is(err, ErrInvalidSource) {
		t.Fatalf("bad contribution key: %v", err)
	}
	// Replacing a contribution under its own key is not a duplicate.
	if _, err := reg.Register("a/core", mustNew(t, strSource(t, "core/date", newCell("3"), false))); err != nil {
		t.Fatalf("replace own contribution: %v", err)
	}
	extra := mustNew(t, strSource(t, "core/date", newCell("4"), false))
	if _, err := reg.ObserveWith(context.Background(), extra); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("ObserveWith duplicate: %v", err)
	}
}

func TestRemovedContributionEmitsRemovalAtNextBoundary(t *testing.T) {
	reg := NewRegistry(RegistryConfig{})
	if _, err := reg.Register("a/core", mustNew(t, strSource(t, "core/env", newCell("linux"), false))); err != nil {
		t.Fatal(err)
	}
	remove, err := reg.Register("p/plugin", mustNew(t, strSource(t, "plugin/x", newCell("on"), true)))
	if err != nil {
		t.Fatal(err)
	}
	obs, _ := reg.Observe(context.Background())
	g, err := Initialize(obs)
	if err != nil {
		t.Fatal(err)
	}
	remove()
	remove() // idempotent
	obs, _ = reg.Observe(context.Background())
	d := Reconcile(obs, g.Snapshot, ReconcileOptions{})
	if d.Action != Updated || d.Message != "gone plugin/x (was on)" {
		t.Fatalf("after removal: %v %q", d.Action, d.Message)
	}
}

func TestStaleRemoveLeavesNewerRegistrationAlone(t *testing.T) {
	reg := NewRegistry(RegistryConfig{})
	old, _ := reg.Register("p/plugin", mustNew(t, strSource(t, "plugin/x", newCell("1"), true)))
	if _, err := reg.Register("p/plugin", mustNew(t, strSource(t, "plugin/x", newCell("2"), true))); err != nil {
		t.Fatal(err)
	}
	old()
	if got := reg.Contributions(); len(got) != 1 {
		t.Fatalf("stale remove withdrew the newer registration: %v", got)
	}
	if !reg.Unregister("p/plugin") || reg.Unregister("p/plugin") {
		t.Fatal("Unregister reports wrongly")
	}
}

func TestRegistryObserveWithAppendsSelectedAgentSources(t *testing.T) {
	reg := NewRegistry(RegistryConfig{})
	if _, err := reg.Register("a/core", mustNew(t, strSource(t, "core/env", newCell("linux"), false))); err != nil {
		t.Fatal(err)
	}
	obs, err := reg.ObserveWith(context.Background(), mustNew(t, strSource(t, "agent/skills", newCell("s"), true)))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(obs.Keys(), " "); got != "core/env agent/skills" {
		t.Fatalf("keys %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := reg.Observe(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("observe with done ctx: %v", err)
	}
}

func TestRegistryIsSafeForConcurrentUse(t *testing.T) {
	reg := NewRegistry(RegistryConfig{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 20 {
				key := fmt.Sprintf("c%d/k%d", i, j%3)
				rm, err := reg.Register(key, mustNew(t, strSource(t, key, newCell("v"), true)))
				if err != nil {
					t.Error(err)
					return
				}
				if j%2 == 0 {
					rm()
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				obs, err := reg.Observe(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := Initialize(obs); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
