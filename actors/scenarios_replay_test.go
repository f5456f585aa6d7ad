package actors

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// replayFresh, while TestS60_ runs, makes every harness replay its journal
// in a fresh process when its test ends; replays and replayedSessions
// count what was replayed.
var (
	replayFresh      atomic.Bool
	replays          atomic.Int64
	replayedSessions atomic.Int64
)

// replayInAFreshProcess stops the harness's process and opens its journal
// anew, as a restarted process would, with nothing of the old one kept;
// there every projection is rebuilt from the event log and compared with
// the stored one (Verify), and every session's events folded by
// session.State.Apply are compared with the projections (foldDiff).
func (h *harness) replayInAFreshProcess() {
	t := h.t
	h.stop()
	var conn driver.Connector
	if h.maria != nil {
		c, err := h.maria.Connector()
		if err != nil {
			t.Errorf("replay: %v", err)
			return
		}
		conn = c
	} else {
		e, err := boltsql.Open(filepath.Join(h.data, "journal"), boltsql.Options{NoSync: true})
		if err != nil {
			t.Errorf("replay: open the journal: %v", err)
			return
		}
		defer e.Close()
		conn = e.Connector()
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), requestWait)
	defer cancel()
	j, err := persistence.Open(ctx, persistence.Config{DB: db})
	if err != nil {
		t.Errorf("replay: open the journal: %v", err)
		return
	}
	defer j.Close()
	rep, err := j.Verify(ctx)
	if err != nil {
		t.Errorf("replay: %v", err)
		return
	}
	if !rep.Clean() {
		t.Errorf("scenario 60: the projections rebuilt from the event log in a fresh process differ from the stored ones: %v", rep.Differences)
	}
	ids, err := j.SessionIDs(ctx)
	if err != nil {
		t.Errorf("replay: %v", err)
		return
	}
	for _, id := range ids {
		if diff := foldDiff(ctx, j, id); diff != "" {
			t.Errorf("scenario 60: session %s: the events folded by session.State.Apply in a fresh process differ from the projections: %s", id, diff)
		}
	}
	replays.Add(1)
	replayedSessions.Add(int64(len(ids)))
}

// notJournaled are the scenarios with no session journal to replay, and why.
var notJournaled = map[int]string{
	// The retention sweep removes old files from the managed tool-output
	// directory (toolactors/managed/testdata/s52_retention_sweep.txt); it
	// reads no session and writes no event: a swept path stays in the
	// tool.succeeded that named it, and reading it later is an ordinary tool
	// error (S53).
	52: "the managed-file sweep touches no journal",
	// A PTY actor (toolactors/pty/testdata/s57_pty_environment_and_kill.txt)
	// is a terminal on the server, outside any session: it appends no event
	// and has no projection.
	57: "PTY actors are not sessions and journal nothing",
	// This one.
	60: "TestS60_ itself",
}

// TestS60_ProjectionsEqualTheEventLogReplayedForEveryScenario runs every
// scenario test and every scenario script (TestScripts) of this package (the tool-layer ones through a session:
// scenarios_tools_test.go), and after each, in a fresh process, rebuilds
// every projection from its journal's event log and compares it with the
// stored one. A scenario test added to the package without being listed
// here fails this test; every scenario without a journal says why
// (notJournaled).
func TestS60_ProjectionsEqualTheEventLogReplayedForEveryScenario(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(*testing.T)
	}{
		{"TestS2_DefaultPromptMakesOneRequestAndOneUserMessage", TestS2_DefaultPromptMakesOneRequestAndOneUserMessage},
		{"TestS4_TwoUnresumedPromptsThenRunMakeOneRequest", TestS4_TwoUnresumedPromptsThenRunMakeOneRequest},
		{"TestS5_ConcurrentRunsShareOneDrain", TestS5_ConcurrentRunsShareOneDrain},
		{"TestS6_SteerDuringStreamPromotesInTheSameDrain", TestS6_SteerDuringStreamPromotesInTheSameDrain},
		{"TestS7_TwoSteersDuringOneStreamPromoteTogether", TestS7_TwoSteersDuringOneStreamPromoteTogether},
		{"TestS8_QueuedDuringContinuationWaitsForItToEnd", TestS8_QueuedDuringContinuationWaitsForItToEnd},
		{"TestS9_QueuedPromptsPromoteOnePerActivityOldestFirst", TestS9_QueuedPromptsPromoteOnePerActivityOldestFirst},
		{"TestS10_PendingSteerRunsBeforePendingQueued", TestS10_PendingSteerRunsBeforePendingQueued},
		{"TestS11_WakeWithoutInputIsFreeRunWithoutInputAttemptsOnce", TestS11_WakeWithoutInputIsFreeRunWithoutInputAttemptsOnce},
		{"TestS12_WakesDuringADrainCoalesce", TestS12_WakesDuringADrainCoalesce},
		{"TestS13_SteerAdmittedWhileTheTurnFailsRunsNext", TestS13_SteerAdmittedWhileTheTurnFailsRunsNext},
		{"TestS14_PromotionResetsTheTurnAllowanceOnce", TestS14_PromotionResetsTheTurnAllowanceOnce},
		{"TestS16_OneToolCallRoundTrip", TestS16_OneToolCallRoundTrip},
		{"TestS17_ToolsStartBeforeTheStreamEndsAndAllSettleFirst", TestS17_ToolsStartBeforeTheStreamEndsAndAllSettleFirst},
		{"TestS18_RepeatedCallIDSettlesAgainstItsOwnTurn", TestS18_RepeatedCallIDSettlesAgainstItsOwnTurn},
		{"TestS19_ToolErrorsReachTheModelAndTheDrainGoesOn", TestS19_ToolErrorsReachTheModelAndTheDrainGoesOn},
		{"TestS20_ProviderErrorAfterAToolCallStillSettlesIt", TestS20_ProviderErrorAfterAToolCallStillSettlesIt},
		{"TestS21_TurnLimitLastTurnHasNoToolsThenFails", TestS21_TurnLimitLastTurnHasNoToolsThenFails},
		{"TestS22_DeltasAreLiveOnlyAndFinalValuesStoredOnce", TestS22_DeltasAreLiveOnlyAndFinalValuesStoredOnce},
		{"TestS23_ContentFilterKeepsPartialTextAndTheReason", TestS23_ContentFilterKeepsPartialTextAndTheReason},
		{"TestS24_ReasoningSignatureIsJournaledAndReplayed", TestS24_ReasoningSignatureIsJournaledAndReplayed},
		{"TestS25_InterruptDuringStreamKeepsThePendingInbox", TestS25_InterruptDuringStreamKeepsThePendingInbox},
		{"TestS26_InterruptKillsRunningToolsAndSendsNoContinuation", TestS26_InterruptKillsRunningToolsAndSendsNoContinuation},
		{"TestS27_InterruptingIdleOrUnknownIsANoOp", TestS27_InterruptingIdleOrUnknownIsANoOp},
		{"TestS28_ProcessKilledMidToolFailsItBeforeAnyRequest", TestS28_ProcessKilledMidToolFailsItBeforeAnyRequest},
		{"TestS29_AdmittedButNotPromotedSurvivesARestart", TestS29_AdmittedButNotPromotedSurvivesARestart},
		{"TestS30_MidDrainSessionsAreRecoveredOnceAtStartUp", TestS30_MidDrainSessionsAreRecoveredOnceAtStartUp},
		{"TestS31_UnavailableInitialContextBlocksWithoutAnEpoch", TestS31_UnavailableInitialContextBlocksWithoutAnEpoch},
		{"TestS32_ChangedSourceBecomesOneChronologicalUpdate", TestS32_ChangedSourceBecomesOneChronologicalUpdate},
		{"TestS33_TwoChangesAtOneBoundaryCombine", TestS33_TwoChangesAtOneBoundaryCombine},
		{"TestS34_RemovalTextAndNewSourcesAnnouncedOnce", TestS34_RemovalTextAndNewSourcesAnnouncedOnce},
		{"TestS35_UnavailableSourceKeepsItsLastValueSilently", TestS35_UnavailableSourceKeepsItsLastValueSilently},
		{"TestS36_CorruptStoredValueIsReannounced", TestS36_CorruptStoredValueIsReannounced},
		{"TestS37_CompactionRendersAFreshBaselineAndDropsOldUpdates", TestS37_CompactionRendersAFreshBaselineAndDropsOldUpdates},
		{"TestS38_ReplacementRestatesAnUnavailableSource", TestS38_ReplacementRestatesAnUnavailableSource},
		{"TestS39_AgentSwitchUpdatesGuidanceModelSwitchKeepsTheEpoch", TestS39_AgentSwitchUpdatesGuidanceModelSwitchKeepsTheEpoch},
		{"TestS40_SwitchDuringATurnAppliesNextCallKeepsItsAgent", TestS40_SwitchDuringATurnAppliesNextCallKeepsItsAgent},
		{"TestS41_MoveClearsTheEpochAndFencesTheOldLocation", TestS41_MoveClearsTheEpochAndFencesTheOldLocation},
		{"TestS42_ContextChangesNeverWakeAnIdleSession", TestS42_ContextChangesNeverWakeAnIdleSession},
		{"TestS43_DuplicateSourceKeyIsRefusedByName", TestS43_DuplicateSourceKeyIsRefusedByName},
		{"TestS44_AgentsMdThroughTheLocationRegistry", TestS44_AgentsMdThroughTheLocationRegistry},
		{"TestS45_BaselineIsReusedVerbatimAcrossRestarts", TestS45_BaselineIsReusedVerbatimAcrossRestarts},
		{"TestS46_OverBudgetRequestCompactsThenRunsThePendingTurn", TestS46_OverBudgetRequestCompactsThenRunsThePendingTurn},
		{"TestS47_SecondCompactionUpdatesThePreviousSummary", TestS47_SecondCompactionUpdatesThePreviousSummary},
		{"TestS48_OverflowCompactsOnceAndRetriesOnce", TestS48_OverflowCompactsOnceAndRetriesOnce},
		{"TestS49_FailedCompactionKeepsTheBoundary", TestS49_FailedCompactionKeepsTheBoundary},
		{"TestS49_InterruptedCompactionKeepsThePreviousBoundary", TestS49_InterruptedCompactionKeepsThePreviousBoundary},
		{"TestS50_BoundedOutputThroughASession", TestS50_BoundedOutputThroughASession},
		{"TestS51_ManagedFileFailureThroughASession", TestS51_ManagedFileFailureThroughASession},
		{"TestS53_ReadThroughASession", TestS53_ReadThroughASession},
		{"TestS54_BashThroughASession", TestS54_BashThroughASession},
		{"TestS55_ApplyPatchThroughASession", TestS55_ApplyPatchThroughASession},
		{"TestS56_PermissionRepliesAtSessionLevel", TestS56_PermissionRepliesAtSessionLevel},
	}

	// Every scenario test of the package is listed; every scenario number
	// has one, or says why it has no journal.
	declared := scenarioTests(t)
	listed := map[string]bool{}
	covered := map[int]bool{}
	for _, s := range scenarios {
		listed[s.name] = true
	}
	for name, n := range declared {
		covered[n] = true
		if !listed[name] && n != 60 {
			t.Errorf("%s is not replayed by TestS60_: add it to the list", name)
		}
	}
	// The scripts of testdata/ (TestScripts) are replayed too.
	for _, n := range scriptScenarios(t) {
		covered[n] = true
	}
	for n := 1; n <= 60; n++ {
		if !covered[n] && notJournaled[n] == "" {
			t.Errorf("scenario %d has no test in this package and no reason to have no journal", n)
		}
	}
	if t.Failed() {
		return
	}

	replayFresh.Store(true)
	defer replayFresh.Store(false)
	for _, s := range scenarios {
		before, sessionsBefore := replays.Load(), replayedSessions.Load()
		if !t.Run(s.name, s.run) {
			continue
		}
		if replays.Load() == before || replayedSessions.Load() == sessionsBefore {
			t.Errorf("%s: no journal was replayed", s.name)
		}
	}
	before := replays.Load()
	if t.Run("TestScripts", TestScripts) {
		files := map[string]bool{}
		for k := range scriptScenarios(t) {
			files[k[:strings.LastIndex(k, "#")]] = true
		}
		if replays.Load()-before < int64(len(files)) {
			t.Errorf("TestScripts: %d journals replayed for %d scenario scripts", replays.Load()-before, len(files))
		}
	}
}

// scriptScenarios finds the scenario scripts of testdata/ (sNN_*.txt, or
// sNN_sMM_*.txt for two), with their scenario numbers.
func scriptScenarios(t *testing.T) map[string]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "s*_*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range files {
		for _, w := range strings.Split(filepath.Base(f), "_") {
			var n int
			if _, err := fmt.Sscanf(w, "s%d", &n); err != nil || fmt.Sprintf("s%02d", n) != w && fmt.Sprintf("s%d", n) != w {
				break
			}
			out[f+"#"+w] = n
		}
	}
	return out
}

// scenarioTests finds the TestS<n>_ functions declared in this package's
// test files, with their scenario numbers.
func scenarioTests(t *testing.T) map[string]int {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^func (TestS(\d+)_\w+)\(t \*testing\.T\)`)
	out := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			n := 0
			for _, c := range m[2] {
				n = n*10 + int(c-'0')
			}
			out[m[1]] = n
		}
	}
	if len(out) == 0 || !slices.Contains(mapKeys(out), "TestS2_DefaultPromptMakesOneRequestAndOneUserMessage") {
		t.Fatalf("no scenario tests found in %v", files)
	}
	return out
}

func mapKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
