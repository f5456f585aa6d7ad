package skills

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/contextsources"
)

func writeSkill(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skillTree(t *testing.T) (string, string) {
	project, global := t.TempDir(), t.TempDir()
	writeSkill(t, project, "deploy", "---\nname: deploy\ndescription: Ship to production\n---\nsecret body: kubectl apply")
	writeSkill(t, project, "review", "---\ndescription: \"Review a diff\"\n---\nbody")
	writeSkill(t, project, "broken", "no front matter")
	writeSkill(t, project, "nodesc", "---\nname: nodesc\n---\n")
	writeSkill(t, global, "review", "---\ndescription: shadowed by the project one\n---\n")
	writeSkill(t, global, "pdf", "---\nname: pdf\ndescription: Read <PDF> & forms\n---\n")
	return project, global
}

func denying(names ...string) func(string) bool {
	return func(n string) bool {
		for _, d := range names {
			if n == d {
				return false
			}
		}
		return true
	}
}

func TestDirCatalogReadsNamesAndDescriptionsOnly(t *testing.T) {
	project, global := skillTree(t)
	r := Load(context.Background(), Config{Catalog: DirCatalog(project, global, filepath.Join(project, "missing"))})
	if r.State() != contextsources.StatePresent {
		t.Fatalf("state %v: %v", r.State(), r.Err())
	}
	var got []string
	for _, s := range r.Value() {
		got = append(got, s.Name+"="+s.Description)
	}
	if want := "deploy=Ship to production pdf=Read <PDF> & forms review=Review a diff"; strings.Join(got, " ") != want {
		t.Fatalf("skills %q, want %q", strings.Join(got, " "), want)
	}
	out := Render(r.Value())
	if strings.Contains(out, "kubectl") || strings.Contains(out, project) {
		t.Fatalf("guidance exposes a body or a location:\n%s", out)
	}
	if !strings.Contains(out, "<description>Read &lt;PDF&gt; &amp; forms</description>") {
		t.Fatalf("guidance not escaped:\n%s", out)
	}
}

func TestGuidanceIsFilteredByTheAgentsPermissions(t *testing.T) {
	project, global := skillTree(t)
	r := Load(context.Background(), Config{Catalog: DirCatalog(project, global), Allowed: denying("deploy", "pdf")})
	if len(r.Value()) != 1 || r.Value()[0].Name != "review" {
		t.Fatalf("skills %+v", r.Value())
	}
	if r := Load(context.Background(), Config{Catalog: DirCatalog(project, global), Allowed: func(string) bool { return false }}); r.State() != contextsources.StateAbsent {
		t.Fatalf("nothing allowed: %v", r.State())
	}
}

func TestCatalogFailureIsUnavailable(t *testing.T) {
	r := Load(context.Background(), Config{Catalog: func(context.Context) ([]Skill, error) { return nil, errors.New("disk gone") }})
	if r.State() != contextsources.StateUnavailable || !strings.Contains(r.Err().Error(), "disk gone") {
		t.Fatalf("%v %v", r.State(), r.Err())
	}
	if _, err := Source(Config{}); err == nil {
		t.Fatal("Source without Catalog accepted")
	}
}

// TestS39_AgentSwitchAdmitsChangedGuidanceKeepingTheBaseline composes the Location
// registry with each selected agent's guidance, as the Session actor does.
func TestS39_AgentSwitchAdmitsChangedGuidanceKeepingTheBaseline(t *testing.T) {
	project, global := skillTree(t)
	catalog := DirCatalog(project, global)
	reg := contextsources.NewRegistry(contextsources.RegistryConfig{})
	env := contextsources.MustMake(contextsources.Spec[string]{Key: "core/environment",
		Load:     func(context.Context) contextsources.Result[string] { return contextsources.Present("linux") },
		Baseline: func(v string) string { return "platform " + v }})
	envCtx, _ := contextsources.New(env)
	if _, err := reg.Register("core", envCtx); err != nil {
		t.Fatal(err)
	}
	boundary := func(allowed func(string) bool) contextsources.Observation {
		t.Helper()
		guidance, err := Context(Config{Catalog: catalog, Allowed: allowed})
		if err != nil {
			t.Fatal(err)
		}
		obs, err := reg.ObserveWith(context.Background(), guidance)
		if err != nil {
			t.Fatal(err)
		}
		return obs
	}

	build := func(string) bool { return true }
	g, err := contextsources.Initialize(boundary(build))
	if err != nil {
		t.Fatal(err)
	}
	baseline := g.Baseline
	if !strings.HasPrefix(baseline, "platform linux\n\nSkills provide") || !strings.Contains(baseline, "<name>deploy</name>") {
		t.Fatalf("baseline %q", baseline)
	}

	// Switch to an agent denied "deploy": one message with the new complete list.
	d := contextsources.Reconcile(boundary(denying("deploy")), g.Snapshot, contextsources.ReconcileOptions{})
	if d.Action != contextsources.Updated || len(d.Changes) != 1 || d.Changes[0].Key != Key {
		t.Fatalf("switch: %v %+v", d.Action, d.Changes)
	}
	if strings.Contains(d.Message, "deploy") || !strings.Contains(d.Message, "<name>review</name>") || !strings.Contains(d.Message, "replaces the previous one") {
		t.Fatalf("switch message %q", d.Message)
	}

	// Switching to another agent with the same effective guidance changes nothing.
	if d2 := contextsources.Reconcile(boundary(denying("deploy", "unknown-skill")), d.Snapshot, contextsources.ReconcileOptions{}); d2.Action != contextsources.Unchanged {
		t.Fatalf("same guidance: %v %q", d2.Action, d2.Message)
	}
	// An agent with no skills at all: the removal text.
	d3 := contextsources.Reconcile(boundary(func(string) bool { return false }), d.Snapshot, contextsources.ReconcileOptions{})
	if d3.Action != contextsources.Updated || d3.Message != Removal {
		t.Fatalf("no skills: %v %q", d3.Action, d3.Message)
	}
	if g.Baseline != baseline {
		t.Fatal("baseline changed") // Reconcile never touches it; kept as a guard on aliasing
	}
}
