package environment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/contextsources"
)

func realPath(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnvironmentFactsOnRealDirectories(t *testing.T) {
	root := realPath(t, t.TempDir())
	sub := filepath.Join(root, "pkg", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	osr := filepath.Join(root, "os-release")
	if err := os.WriteFile(osr, []byte("NAME=Test\nPRETTY_NAME=\"Test OS 1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SHELL": "/bin/zsh"}
	cfg := Config{Directory: sub, Getenv: func(k string) string { return env[k] }, OSReleasePath: osr}

	r := Observe(context.Background(), cfg)
	if r.State() != contextsources.StatePresent {
		t.Fatalf("state %v: %v", r.State(), r.Err())
	}
	f := r.Value()
	if f.WorkingDirectory != sub || f.ProjectRoot != sub || f.GitRepository || f.Shell != "/bin/zsh" || f.OS != "Test OS 1" {
		t.Fatalf("facts without git: %+v", f)
	}

	// Becoming a git repository moves the root up and is an update at the next boundary.
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	f = Observe(context.Background(), cfg).Value()
	if f.ProjectRoot != root || !f.GitRepository {
		t.Fatalf("facts with git: %+v", f)
	}
	out := Render(f)
	for _, want := range []string{"Working directory: " + sub, "Project root: " + root, "Is directory a git repo: yes", "Shell: /bin/zsh", "OS: Test OS 1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("render lacks %q:\n%s", want, out)
		}
	}

	// A deleted working directory is unavailable, not a changed environment.
	gone := filepath.Join(root, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	goneCfg := cfg
	goneCfg.Directory = gone
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if r := Observe(context.Background(), goneCfg); r.State() != contextsources.StateUnavailable {
		t.Fatalf("deleted directory: %v", r.State())
	}
	if _, err := Source(Config{}); err == nil {
		t.Fatal("Source without Directory accepted")
	}
}

func TestEnvironmentChangeIsOneUpdateWithTheNewFacts(t *testing.T) {
	dir := realPath(t, t.TempDir())
	shell := "/bin/bash"
	src, err := Source(Config{Directory: dir, Getenv: func(string) string { return shell }})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := contextsources.New(src)
	g, err := contextsources.Initialize(sc.Observe(context.Background(), contextsources.ObserveConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	shell = "/bin/fish"
	d := contextsources.Reconcile(sc.Observe(context.Background(), contextsources.ObserveConfig{}), g.Snapshot, contextsources.ReconcileOptions{})
	if d.Action != contextsources.Updated || !strings.Contains(d.Message, "Shell: /bin/fish") || strings.Contains(d.Message, "/bin/bash") {
		t.Fatalf("decision %v %q", d.Action, d.Message)
	}
}

func TestDateSourceUpdatesOncePerHostLocalDay(t *testing.T) {
	zone := time.FixedZone("UTC+10", 10*3600)
	now := time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC) // 23:00 local
	sc, _ := contextsources.New(DateSource(DateConfig{Now: func() time.Time { return now }, Location: zone}))
	obs := func() contextsources.Observation {
		return sc.Observe(context.Background(), contextsources.ObserveConfig{})
	}
	g, err := contextsources.Initialize(obs())
	if err != nil {
		t.Fatal(err)
	}
	if g.Baseline != "Today's date: Wednesday, 2026-11-25." {
		t.Fatalf("baseline %q", g.Baseline)
	}
	now = now.Add(30 * time.Minute) // still the 25th locally
	if d := contextsources.Reconcile(obs(), g.Snapshot, contextsources.ReconcileOptions{}); d.Action != contextsources.Unchanged {
		t.Fatalf("same day: %v", d.Action)
	}
	now = now.Add(time.Hour) // 00:30 on the 26th locally, still the 25th in UTC
	d := contextsources.Reconcile(obs(), g.Snapshot, contextsources.ReconcileOptions{})
	if d.Action != contextsources.Updated || d.Message != "The date is now Thursday, 2026-11-26." {
		t.Fatalf("next day: %v %q", d.Action, d.Message)
	}
}

func TestExplicitProjectRootIsUsedWithoutWalking(t *testing.T) {
	base := realPath(t, t.TempDir())
	root, dir := filepath.Join(base, "repo"), filepath.Join(base, "repo", "svc")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil { // a nested repo the root overrides
		t.Fatal(err)
	}
	f := Observe(context.Background(), Config{Directory: dir, ProjectRoot: root, Getenv: func(string) string { return "" }}).Value()
	if f.ProjectRoot != root || !f.GitRepository || f.Shell != "/bin/sh" {
		t.Fatalf("facts %+v", f)
	}
	if p, err := ResolveProject(dir); err != nil || p.Root != dir || !p.Git {
		t.Fatalf("discovered %+v %v (nearest .git wins)", p, err)
	}
}

func TestContextHoldsFactsThenDate(t *testing.T) {
	sc, err := Context(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Keys(); len(got) != 2 || got[0] != Key || got[1] != DateKey {
		t.Fatalf("keys %v", got)
	}
	g, err := contextsources.Initialize(sc.Observe(context.Background(), contextsources.ObserveConfig{}))
	if err != nil || !strings.Contains(g.Baseline, "<env>") || !strings.Contains(g.Baseline, "Today's date: ") {
		t.Fatalf("baseline %q, %v", g.Baseline, err)
	}
}
