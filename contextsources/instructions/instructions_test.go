package instructions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/contextsources"
)

// tree is a real directory layout in a temp dir: a global config dir, and a project
// root/a/b/c with files written by the test.
type tree struct {
	t      *testing.T
	base   string // canonical temp dir
	xdg    string // XDG_CONFIG_HOME
	root   string // project root
	deep   string // root/a/b/c: the Location's directory
	env    map[string]string
	source contextsources.SystemContext
	snap   contextsources.Snapshot
}

func newTree(t *testing.T) *tree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := &tree{t: t, base: base, xdg: filepath.Join(base, "xdg"), root: filepath.Join(base, "proj")}
	tr.deep = filepath.Join(tr.root, "a", "b", "c")
	for _, d := range []string{filepath.Join(tr.xdg, "sessionrt"), tr.deep} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tr.env = map[string]string{"XDG_CONFIG_HOME": tr.xdg, "HOME": filepath.Join(base, "home")}
	return tr
}

func (tr *tree) cfg() Config {
	return Config{Directory: tr.deep, ProjectRoot: tr.root, Getenv: func(k string) string { return tr.env[k] }}
}

func (tr *tree) write(rel, content string) string {
	tr.t.Helper()
	p := filepath.Join(tr.base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
	return p
}

func (tr *tree) remove(rel string) {
	tr.t.Helper()
	if err := os.Remove(filepath.Join(tr.base, rel)); err != nil {
		tr.t.Fatal(err)
	}
}

// paths lists the loaded files as "scope:relative path".
func (tr *tree) paths(r contextsources.Result[Aggregate]) string {
	tr.t.Helper()
	if r.State() != contextsources.StatePresent {
		return r.State().String()
	}
	var out []string
	for _, f := range r.Value().Files {
		rel, err := filepath.Rel(tr.base, f.Path)
		if err != nil {
			tr.t.Fatal(err)
		}
		out = append(out, f.Scope+":"+rel)
	}
	return strings.Join(out, " ")
}

func (tr *tree) load() contextsources.Result[Aggregate] { return Load(context.Background(), tr.cfg()) }

// boundary runs initialize (first call) or reconcile (later calls) like the Session actor.
func (tr *tree) boundary() contextsources.Decision {
	tr.t.Helper()
	if tr.source.Len() == 0 {
		src, err := Source(tr.cfg())
		if err != nil {
			tr.t.Fatal(err)
		}
		tr.source, _ = contextsources.New(src)
		g, err := contextsources.Initialize(tr.source.Observe(context.Background(), contextsources.ObserveConfig{}))
		if err != nil {
			tr.t.Fatal(err)
		}
		tr.snap = g.Snapshot
		return contextsources.Decision{Action: contextsources.ReplacementReady, Generation: g}
	}
	d := contextsources.Reconcile(tr.source.Observe(context.Background(), contextsources.ObserveConfig{}), tr.snap, contextsources.ReconcileOptions{})
	if d.Action == contextsources.Updated {
		tr.snap = d.Snapshot
	}
	return d
}

func TestGlobalFallsBackToHomeConfig(t *testing.T) {
	tr := newTree(t)
	delete(tr.env, "XDG_CONFIG_HOME")
	tr.write("home/.config/sessionrt/AGENTS.md", "home rules")
	if got := tr.paths(tr.load()); got != "global:home/.config/sessionrt/AGENTS.md" {
		t.Fatalf("files %s", got)
	}
}

// TestGlobalFileFromOpenCodesFolder: the spec (000) observes "global and upward project
// AGENTS.md files as one ordered aggregate Context Source"; the global one is OpenCode's:
// an OpenCode user's ~/.config/opencode/AGENTS.md (or
// $XDG_CONFIG_HOME/opencode/AGENTS.md) is the global file, as in OpenCode (before, only
// sessionrt's folder was read and it was ignored); sessionrt's own folder, when it has an
// AGENTS.md, wins, and only one global file is read.
func TestGlobalFileFromOpenCodesFolder(t *testing.T) {
	tr := newTree(t)
	tr.write("xdg/opencode/AGENTS.md", "opencode rules")
	if got := tr.paths(tr.load()); got != "global:xdg/opencode/AGENTS.md" {
		t.Fatalf("XDG: %s", got)
	}
	delete(tr.env, "XDG_CONFIG_HOME")
	tr.write("home/.config/opencode/AGENTS.md", "opencode home rules")
	if got := tr.paths(tr.load()); got != "global:home/.config/opencode/AGENTS.md" {
		t.Fatalf("HOME: %s", got)
	}
	tr.write("home/.config/sessionrt/AGENTS.md", "sessionrt rules")
	if got := tr.paths(tr.load()); got != "global:home/.config/sessionrt/AGENTS.md" {
		t.Fatalf("both folders: %s, want sessionrt's alone", got)
	}
}

func TestSymlinkPointingOutOfTheProjectIsIgnored(t *testing.T) {
	tr := newTree(t)
	secret := tr.write("secret/notes.md", "must not leak")
	tr.write("proj/shared.md", "shared inside")
	if err := os.Symlink(secret, filepath.Join(tr.deep, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("shared.md", filepath.Join(tr.root, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("does-not-exist.md", filepath.Join(tr.root, "a", "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	r := tr.load()
	if got := tr.paths(r); got != "project:proj/shared.md" {
		t.Fatalf("files %s (the in-project link resolves to its canonical target; the escaping and dangling ones are skipped)", got)
	}
	if strings.Contains(Render(r.Value()), "must not leak") {
		t.Fatal("content from outside the project root leaked")
	}
}

func TestSymlinkLoopMakesTheSourceUnavailable(t *testing.T) {
	tr := newTree(t)
	loop := filepath.Join(tr.deep, "AGENTS.md")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if r := tr.load(); r.State() != contextsources.StateUnavailable {
		t.Fatalf("state %v", r.State())
	}
}

func TestOversizedFileIsCutWithAMarker(t *testing.T) {
	tr := newTree(t)
	tr.write("proj/AGENTS.md", strings.Repeat("x", 100))
	cfg := tr.cfg()
	cfg.MaxFileBytes = 10
	r := Load(context.Background(), cfg)
	if got := r.Value().Files[0].Content; !strings.HasPrefix(got, "xxxxxxxxxx\n[truncated: ") {
		t.Fatalf("content %q", got)
	}
}

func TestMissingDirectoryIsAConfigurationErrorOrUnavailable(t *testing.T) {
	if _, err := Source(Config{}); err == nil {
		t.Fatal("Source without Directory accepted")
	}
	tr := newTree(t)
	cfg := tr.cfg()
	cfg.Directory = filepath.Join(tr.base, "no-such-dir")
	cfg.ProjectRoot = cfg.Directory
	if r := Load(context.Background(), cfg); r.State() != contextsources.StateUnavailable {
		t.Fatalf("state %v", r.State())
	}
}

func TestDefaultProjectRootIsTheNearestGitRepository(t *testing.T) {
	tr := newTree(t)
	tr.write("AGENTS.md", "above the repository")
	tr.write("proj/AGENTS.md", "repo root")
	tr.write("proj/a/AGENTS.md", "a")
	tr.write("proj/a/b/c/AGENTS.md", "c")
	cfg := tr.cfg()
	cfg.ProjectRoot = ""
	// No repository: only the directory itself is searched.
	if got := tr.paths(Load(context.Background(), cfg)); got != "project:proj/a/b/c/AGENTS.md" {
		t.Fatalf("without .git: %s", got)
	}
	// After "git init" at proj, the next observation walks up to it, and no further.
	if err := os.Mkdir(filepath.Join(tr.root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := tr.paths(Load(context.Background(), cfg)); got != "project:proj/a/b/c/AGENTS.md project:proj/a/AGENTS.md project:proj/AGENTS.md" {
		t.Fatalf("with .git: %s", got)
	}
	sc, err := Context(tr.deep)
	if err != nil || strings.Join(sc.Keys(), ",") != Key {
		t.Fatalf("Context: %v %v", sc.Keys(), err)
	}
}
