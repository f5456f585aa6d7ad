package main

import (
	"os/exec"
	"strings"
	"testing"
)

// layers orders sessionrt's packages, lowest first: a package may import
// packages of its own layer or below, never above, so the core never
// learns of its actors, the actor of its facade, the facade of the servers
// or clusters that carry it, nor those of the tools that drive them. A
// package is in the layer of its longest listed prefix; a new package must
// be placed here (the test names it).
var layers = [][]string{
	// Vocabulary and plumbing everything may use.
	{"internal", "messages", "telemetry", "api/wire", "api/client", "cluster/wirepb", "filesnap"},
	// The parts a session is made of: providers, tools, context sources,
	// the journal, configuration.
	{"provider", "toolactors", "contextsources", "compaction", "title", "filespan", "persistence", "config", "supervisor", "api/ptys"},
	// The session core (pure) and what is derived from its state.
	{"session", "render"},
	// What the Session actor speaks and wraps itself in; its telemetry.
	{"actors/protocol", "actors/middleware", "actors/observe"},
	// The Session actor's effect executors.
	{"actors/effect"},
	// The Session actor.
	{"actors/shell"},
	// The Sessions facade.
	{"actors"},
	// What serves and distributes sessions.
	{"api", "cluster"},
	// One process, composed.
	{"node"},
	// Tools and harnesses that drive processes.
	{"chaos", "cli", "bench", "api/apitest", "api/e2e", "api/sdktest", "cluster/clustertest", "cluster/internal"},
	// The command.
	{"."},
}

const module = "github.com/sessionrt/sessionrt"

// layerOf is the layer of a package path relative to the module ("." for
// the module itself), or -1 when none is listed.
func layerOf(rel string) (layer int, prefix string) {
	layer = -1
	for i, ps := range layers {
		for _, p := range ps {
			if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > len(prefix) {
				layer, prefix = i, p
			}
		}
	}
	return layer, prefix
}

// TestNoPackageImportsALayerAbove: what issue 18 asks of the layout (no
// package imports one above it); the compiler only forbids cycles of
// packages, not of layers.
func TestNoPackageImportsALayerAbove(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) (string, bool) {
		switch {
		case p == module:
			return ".", true
		case strings.HasPrefix(p, module+"/"):
			return p[len(module)+1:], true
		}
		return "", false
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, _ := rel(fields[0])
		pl, _ := layerOf(pkg)
		if pl < 0 {
			t.Errorf("package %s is in no layer: place it in layers (layers_test.go)", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := rel(imp)
			if !ok {
				continue
			}
			if dl, prefix := layerOf(dep); dl > pl {
				t.Errorf("%s (layer %d) imports %s (layer %d, %q): a layer above it", pkg, pl, dep, dl, prefix)
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("only %d imports checked: go list gave too little", checked)
	}
}
