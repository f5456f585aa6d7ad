package session

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// withoutCoreBehaviour are the scenarios of ../shared/scenarios.md that
// no input of the core decides, with where they are tested instead: the
// admission layer (the journal's receipts and limits), the request
// renderer, the context sources, the tool layer, the event log.
var withoutCoreBehaviour = map[int]string{
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
	56: "tool layer: permission rules and replies (toolactors/permission TestS56_*); the core's part: permission_asked_by_a_running_call, s19_settled_once_rejection_stops",
	57: "tool layer: PTY (toolactors/pty TestS57_*)",
	58: "the event log's cursor and tail (actors TestS58_*)",
	59: "history paging (actors TestS59_*)",
}

// notScriptedYet have core behaviour but no script of their own yet.
var notScriptedYet = map[int]string{}

// TestEveryScenarioHasAScriptOrAReason: each of the 60 scenarios has a
// script sNN_*.txt in testdata/ (60: every script ends with a replay of
// its journal) or says where it is tested instead.
func TestEveryScenarioHasAScriptOrAReason(t *testing.T) {
	files, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	scripted := map[int]bool{}
	for _, f := range files {
		// s33_s35_…: a script of two scenarios.
		for _, w := range strings.Split(f.Name(), "_") {
			var n int
			if _, err := fmt.Sscanf(w, "s%d", &n); err != nil || fmt.Sprintf("s%d", n) != w && fmt.Sprintf("s%02d", n) != w {
				break
			}
			scripted[n] = true
		}
	}
	scripted[5] = true // in s12_wakes_coalesce_runs_share (a run during a drain is served by it)
	scripted[60] = true
	for n := 1; n <= 60; n++ {
		_, without := withoutCoreBehaviour[n]
		_, owed := notScriptedYet[n]
		switch {
		case scripted[n] && without:
			t.Errorf("scenario %d has a script and is listed as without core behaviour", n)
		case owed:
			t.Logf("scenario %d: no script yet: %s", n, notScriptedYet[n])
		case !scripted[n] && !without:
			t.Errorf("scenario %d has neither a script nor a reason", n)
		}
	}
}
