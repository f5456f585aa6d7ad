package contextsources

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cs "github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/contextsources/environment"
	"github.com/sessionrt/sessionrt/contextsources/instructions"
)

type record struct {
	Name  string   `json:"name"`
	Items []string `json:"items"`
	N     int      `json:"n"`
}

// benchSource is the i-th of ten in-memory sources of two value types, so the figures are
// the runtime's own cost per boundary, not a loader's.
func benchSource(i int) cs.Source {
	key := fmt.Sprintf("bench/s%02d", i)
	if i%2 == 0 {
		v := record{Name: key, Items: []string{"alpha", "beta", strings.Repeat("x", 200)}, N: i}
		return cs.MustMake(cs.Spec[record]{Key: key,
			Load:     func(context.Context) cs.Result[record] { return cs.Present(v) },
			Baseline: func(r record) string { return r.Name + ": " + strings.Join(r.Items, ",") },
			Removal:  func(r record) string { return r.Name + " removed" }})
	}
	v := strings.Repeat("value ", 50) + key
	return cs.MustMake(cs.Spec[string]{Key: key,
		Load:     func(context.Context) cs.Result[string] { return cs.Present(v) },
		Baseline: func(s string) string { return s }})
}

func tenSources(b *testing.B) cs.SystemContext {
	var srcs []cs.Source
	for i := range 10 {
		srcs = append(srcs, benchSource(i))
	}
	sc, err := cs.New(srcs...)
	if err != nil {
		b.Fatal(err)
	}
	return sc
}

func initialize(b *testing.B, sc cs.SystemContext) cs.Snapshot {
	g, err := cs.Initialize(sc.Observe(context.Background(), cs.ObserveConfig{}))
	if err != nil {
		b.Fatal(err)
	}
	return g.Snapshot
}

// BenchmarkBoundaryTenSourcesUnchanged is one safe provider-turn boundary as the Session
// actor pays it: concurrent observation of ten sources, then Reconcile. Target ≤ 50 µs.
func BenchmarkBoundaryTenSourcesUnchanged(b *testing.B) {
	sc := tenSources(b)
	snap := initialize(b, sc)
	ctx := context.Background()
	b.ReportAllocs()
	defer cpuClock(b)()
	for b.Loop() {
		d := cs.Reconcile(sc.Observe(ctx, cs.ObserveConfig{}), snap, cs.ReconcileOptions{})
		if d.Action != cs.Unchanged {
			b.Fatalf("action %v", d.Action)
		}
	}
}

// BenchmarkReconcileTenSourcesUnchanged is the pure decision alone.
func BenchmarkReconcileTenSourcesUnchanged(b *testing.B) {
	sc := tenSources(b)
	snap := initialize(b, sc)
	obs := sc.Observe(context.Background(), cs.ObserveConfig{})
	b.ReportAllocs()
	defer cpuClock(b)()
	for b.Loop() {
		if d := cs.Reconcile(obs, snap, cs.ReconcileOptions{}); d.Action != cs.Unchanged {
			b.Fatalf("action %v", d.Action)
		}
	}
}

// BenchmarkRegistryBoundaryTenSources goes through the Location registry (ten
// contributions of one source each).
func BenchmarkRegistryBoundaryTenSources(b *testing.B) {
	reg := cs.NewRegistry(cs.RegistryConfig{})
	for i := range 10 {
		one, err := cs.New(benchSource(i))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := reg.Register(fmt.Sprintf("contrib-%02d", 9-i), one); err != nil {
			b.Fatal(err)
		}
	}
	obs, _ := reg.Observe(context.Background())
	g, err := cs.Initialize(obs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer cpuClock(b)()
	for b.Loop() {
		obs, _ := reg.Observe(context.Background())
		if d := cs.Reconcile(obs, g.Snapshot, cs.ReconcileOptions{}); d.Action != cs.Unchanged {
			b.Fatalf("action %v", d.Action)
		}
	}
}

// agentsTree builds a real project 20 directories deep with an AGENTS.md in each, plus
// a global file, and returns the deepest directory.
func agentsTree(b *testing.B) (root, deep, xdg string) {
	base, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	root, xdg = filepath.Join(base, "proj"), filepath.Join(base, "xdg")
	deep = root
	for i := range 19 {
		deep = filepath.Join(deep, fmt.Sprintf("d%02d", i))
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(xdg, "sessionrt"), 0o755); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("- Follow the project conventions.\n", 40)
	if err := os.WriteFile(filepath.Join(xdg, "sessionrt", "AGENTS.md"), []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	for d := deep; ; d = filepath.Dir(d) {
		if err := os.WriteFile(filepath.Join(d, "AGENTS.md"), []byte(d+"\n"+body), 0o644); err != nil {
			b.Fatal(err)
		}
		if d == root {
			break
		}
	}
	return root, deep, xdg
}

// BenchmarkBoundaryAgentsTree20Dirs is one boundary with the AGENTS.md aggregate over a
// real 20-directory tree (21 files, ~1.3 KiB each) plus the environment and date
// sources, nothing changed. Target ≤ 1 ms.
func BenchmarkBoundaryAgentsTree20Dirs(b *testing.B) {
	root, deep, xdg := agentsTree(b)
	env := map[string]string{"XDG_CONFIG_HOME": xdg, "SHELL": "/bin/bash"}
	getenv := func(k string) string { return env[k] }
	ins, err := instructions.Source(instructions.Config{Directory: deep, ProjectRoot: root, Getenv: getenv})
	if err != nil {
		b.Fatal(err)
	}
	envSrc, err := environment.Source(environment.Config{Directory: deep, ProjectRoot: root, Getenv: getenv})
	if err != nil {
		b.Fatal(err)
	}
	sc, err := cs.New(envSrc, environment.DateSource(environment.DateConfig{}), ins)
	if err != nil {
		b.Fatal(err)
	}
	snap := initialize(b, sc)
	if n := len(instructions.Load(context.Background(), instructions.Config{Directory: deep, ProjectRoot: root, Getenv: getenv}).Value().Files); n != 21 {
		b.Fatalf("tree has %d instruction files, want 21", n)
	}
	ctx := context.Background()
	b.ReportAllocs()
	defer cpuClock(b)()
	for b.Loop() {
		d := cs.Reconcile(sc.Observe(ctx, cs.ObserveConfig{Timeout: time.Second}), snap, cs.ReconcileOptions{})
		if d.Action != cs.Unchanged {
			b.Fatalf("action %v", d.Action)
		}
	}
}

// BenchmarkBoundaryAgentsTree20DirsDefaults is the same boundary built the way a Location
// registry builds it (environment.Context + instructions.Context): the project root is
// discovered (".git") at every boundary by both sources.
func BenchmarkBoundaryAgentsTree20DirsDefaults(b *testing.B) {
	_, deep, xdg := agentsTree(b)
	b.Setenv("XDG_CONFIG_HOME", xdg)
	envCtx, err := environment.Context(deep)
	if err != nil {
		b.Fatal(err)
	}
	insCtx, err := instructions.Context(deep)
	if err != nil {
		b.Fatal(err)
	}
	sc, err := cs.Combine(envCtx, insCtx)
	if err != nil {
		b.Fatal(err)
	}
	snap := initialize(b, sc)
	ctx := context.Background()
	b.ReportAllocs()
	defer cpuClock(b)()
	for b.Loop() {
		d := cs.Reconcile(sc.Observe(ctx, cs.ObserveConfig{Timeout: time.Second}), snap, cs.ReconcileOptions{})
		if d.Action != cs.Unchanged {
			b.Fatalf("action %v", d.Action)
		}
	}
}

// BenchmarkInstructionsLoad20Dirs is the AGENTS.md loader alone on the same tree.
func BenchmarkInstructionsLoad20Dirs(b *testing.B) {
	root, deep, xdg := agentsTree(b)
	cfg := instructions.Config{Directory: deep, ProjectRoot: root,
		Getenv: func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return xdg
			}
			return ""
		}}
	ctx := context.Background()
	b.ReportAllocs()
	defer cpuClock(b)()
	for b.Loop() {
		if r := instructions.Load(ctx, cfg); r.State() != cs.StatePresent {
			b.Fatal(r.Err())
		}
	}
}

// BenchmarkSnapshotDecode is reading a ten-source snapshot back from the journal.
func BenchmarkSnapshotDecode(b *testing.B) {
	raw, err := initialize(b, tenSources(b)).Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	defer cpuClock(b)()
	for b.Loop() {
		if _, err := cs.DecodeSnapshot(raw); err != nil {
			b.Fatal(err)
		}
	}
}
