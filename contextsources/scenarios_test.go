package contextsources

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
)

// TestS32_ChangedSourceIsOneUpdateAndTheSnapshotAdvancesWithIt: the baseline is not
// re-rendered, the update carries the newly effective value, and only the snapshot
// returned with the message stops it from being admitted again.
func TestS32_ChangedSourceIsOneUpdateAndTheSnapshotAdvancesWithIt(t *testing.T) {
	c := newCell("main")
	sc := mustNew(t, strSource(t, "core/env", newCell("linux"), false), strSource(t, "core/branch", c, true))
	g := mustInit(t, sc)
	c.set(Present("feature"))

	d := Reconcile(observe(sc), g.Snapshot, ReconcileOptions{})
	if d.Action != Updated || d.Message != "now core/branch=feature" {
		t.Fatalf("decision %v %q", d.Action, d.Message)
	}
	if d.Generation.Baseline != "" {
		t.Fatal("an update must not carry a new baseline")
	}
	// Until the new snapshot is stored (with the message, in one transaction), the same
	// change is still pending: a retry after a failed commit admits it again, not twice.
	if again := Reconcile(observe(sc), g.Snapshot, ReconcileOptions{}); again.Message != d.Message {
		t.Fatalf("retry against the old snapshot: %q", again.Message)
	}
	if after := Reconcile(observe(sc), roundTrip(t, d.Snapshot), ReconcileOptions{}); after.Action != Unchanged {
		t.Fatalf("after commit: %v %q", after.Action, after.Message)
	}
	if v, _ := g.Snapshot.Value("core/branch"); string(v) != `"main"` {
		t.Fatalf("the previous snapshot was mutated: %s", v)
	}
}

// TestS33_ChangesFromTwoSourcesAtOneBoundaryCombineIntoOneMessage, including a removal
// and a newly registered source next to a change.
func TestS33_ChangesFromTwoSourcesAtOneBoundaryCombineIntoOneMessage(t *testing.T) {
	date, ins := newCell("2026-11-25"), newCell("be terse")
	reg := NewRegistry(RegistryConfig{})
	if _, err := reg.Register("1-core", mustNew(t, strSource(t, "core/date", date, false))); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register("2-instructions", mustNew(t, strSource(t, "instructions/agents", ins, true))); err != nil {
		t.Fatal(err)
	}
	obs, _ := reg.Observe(context.Background())
	g, err := Initialize(obs)
	if err != nil {
		t.Fatal(err)
	}
	date.set(Present("2026-11-26"))
	ins.set(Present("be verbose"))
	obs, _ = reg.Observe(context.Background())
	d := Reconcile(obs, g.Snapshot, ReconcileOptions{})
	want := "now core/date=2026-11-26" + Separator + "now instructions/agents=be verbose"
	if d.Action != Updated || d.Message != want || len(d.Changes) != 2 {
		t.Fatalf("decision %v %q %+v", d.Action, d.Message, d.Changes)
	}
}

// TestS42_SourcesAreSampledOnlyAtBoundaries: nothing in this package observes a source
// on its own; changes sit unread until the next boundary calls Observe, so nothing can
// wake an idle session.
func TestS42_SourcesAreSampledOnlyAtBoundaries(t *testing.T) {
	var loads atomic.Int32
	var value atomic.Value
	value.Store("v1")
	src := MustMake(Spec[string]{Key: "core/lazy",
		Load: func(context.Context) Result[string] {
			loads.Add(1)
			return Present(value.Load().(string))
		},
		Baseline: func(v string) string { return v }})
	reg := NewRegistry(RegistryConfig{})
	if _, err := reg.Register("core", mustNew(t, src)); err != nil {
		t.Fatal(err)
	}
	if n := loads.Load(); n != 0 {
		t.Fatalf("registration loaded the source %d times", n)
	}
	obs, _ := reg.Observe(context.Background())
	g, _ := Initialize(obs)
	for _, v := range []string{"v2", "v3", "v4"} {
		value.Store(v)
	}
	_ = reg.SystemContext()
	if n := loads.Load(); n != 1 {
		t.Fatalf("changes between boundaries caused %d loads, want the 1 of the first boundary", n)
	}
	obs, _ = reg.Observe(context.Background())
	d := Reconcile(obs, g.Snapshot, ReconcileOptions{})
	if d.Message != "v4" || loads.Load() != 2 {
		t.Fatalf("next boundary: %q after %d loads (only the newest value is admitted)", d.Message, loads.Load())
	}
}

func TestObservationKeysAndUnavailableAreInOrder(t *testing.T) {
	sc := ctxOf(t, []srcState{p("b/y", "1"), unavail("a/x"), p("c/z", "2"), unavail("0/w")})
	obs := observe(sc)
	if got := strings.Join(obs.Keys(), " "); got != "b/y a/x c/z 0/w" {
		t.Fatalf("keys %q", got)
	}
	if got := strings.Join(obs.Unavailable(), " "); got != "a/x 0/w" {
		t.Fatalf("unavailable %q", got)
	}
	if _, ok := obs.Lookup("nope/none"); ok {
		t.Fatal("lookup of an unknown key")
	}
}
