package session

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// scenarioScripts finds the scenario scripts of the whole module: files
// named sNN_*.txt (or sNN_sMM_*.txt for a script of two scenarios) in any
// testdata directory, by scenario number.
func scenarioScripts(t *testing.T) map[int][]string {
	t.Helper()
	scripts := map[int][]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n != ".." && (strings.HasPrefix(n, ".") || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Base(filepath.Dir(path)) != "testdata" {
			return nil
		}
		for _, w := range strings.Split(d.Name(), "_") {
			var n int
			if _, err := fmt.Sscanf(w, "s%d", &n); err != nil || fmt.Sprintf("s%d", n) != w && fmt.Sprintf("s%02d", n) != w {
				break
			}
			scripts[n] = append(scripts[n], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return scripts
}

// TestEveryScenarioHasAScript: each of the 60 scenarios of
// ../shared/scenarios.md has a script sNN_*.txt in the testdata/ of the
// package that decides it: the core's in testdata/ here, the rest where
// no input of the core decides them (admission and the event log in
// actors, the request renderer in render, the context sources, the tool
// layer). 60, replay, is every script of the core and of actors (each
// ends with a replay of its journal).
func TestEveryScenarioHasAScript(t *testing.T) {
	scripts := scenarioScripts(t)
	// A run during a drain is served by it: s12_wakes_coalesce_runs_share.
	scripts[5] = append(scripts[5], "testdata/s12_wakes_coalesce_runs_share.txt")
	scripts[60] = append(scripts[60], "every script of testdata/ and ../actors/testdata/")
	for n := 1; n <= 60; n++ {
		if len(scripts[n]) == 0 {
			t.Errorf("scenario %d has no script", n)
			continue
		}
		t.Logf("scenario %d: %s", n, strings.Join(scripts[n], ", "))
	}
}
