package session

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// notScriptedYet are the scenarios of ../shared/scenarios.md without a
// script yet, with where they are tested instead. The core's scripts are
// in testdata/; the scenarios no input of the core decides (admission,
// the request renderer, the context sources, the tool layer, the event
// log) have theirs in the testdata/ of the package that decides them.
var notScriptedYet = map[int]string{
	1:  "session creation is the store's (actors TestS1_CreateIsIdempotentByID)",
	3:  "admission receipts are the journal's (actors TestS3_PromptRetryIsIdempotentAndConflictsAreRefused)",
	15: "the backlog limit is the admission's (actors TestS15_AdmissionBeyondTheBacklogIsRefused)",
	24: "replaying reasoning to the same model is the request renderer's (actors TestS24_ReasoningReplaysOnlyToTheSameModel)",
	34: "removal and new-source texts are contextsources.Reconcile's (contextsources TestS34_*)",
	36: "re-announcing a corrupt value is contextsources' (TestS36_*)",
	38: "restating an unavailable source is contextsources' (TestS38_*); the core only ends a blocked replacement (location_and_config_failures, s31)",
	43: "composition is contextsources' (TestS43_*)",
	44: "AGENTS.md discovery is contextsources/instructions' (TestS44_*)",
	45: "the stored baseline is the epoch's, reused by the renderer (TestS45_*)",
	50: "tool layer: output bounds (toolactors TestS50_*)",
	51: "tool layer: managed files (toolactors TestS51_*)",
	52: "tool layer: retention sweep (toolactors/managed TestS52_*)",
	53: "tool layer: read (toolactors/tools TestS53_*)",
	54: "tool layer: bash (toolactors/tools TestS54_*)",
	55: "tool layer: apply_patch (toolactors/tools TestS55_*)",
	56: "tool layer: permission rules and replies (toolactors/permission TestS56_*)",
	57: "tool layer: PTY (toolactors/pty TestS57_*)",
	58: "the event log's cursor and tail (actors TestS58_*)",
	59: "history paging (actors TestS59_*)",
}

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

// TestEveryScenarioHasAScriptOrAReason: each of the 60 scenarios has a
// script sNN_*.txt in some package's testdata/ (60: every script of the
// core ends with a replay of its journal) or says where it is tested
// instead.
func TestEveryScenarioHasAScriptOrAReason(t *testing.T) {
	scripts := scenarioScripts(t)
	// 5: in s12_wakes_coalesce_runs_share (a run during a drain is served by it)
	scripts[5] = append(scripts[5], "testdata/s12_wakes_coalesce_runs_share.txt")
	scripts[60] = append(scripts[60], "every script of testdata/")
	for n := 1; n <= 60; n++ {
		reason, owed := notScriptedYet[n]
		switch {
		case len(scripts[n]) > 0 && owed:
			// Scripts land from several packages at once; the lead drops
			// the stale entries.
			t.Logf("scenario %d has a script (%s): drop it from notScriptedYet", n, strings.Join(scripts[n], ", "))
		case owed:
			t.Logf("scenario %d: no script yet: %s", n, reason)
		case len(scripts[n]) == 0:
			t.Errorf("scenario %d has neither a script nor a reason", n)
		}
	}
}
