package cluster_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/chaos"
	"github.com/sessionrt/sessionrt/internal/testdb"
)

// TestMoveRunsTheNextToolsOnTheMemberHoldingTheNewLocation: Location A is
// held by member m0, B by m1, the session's grain runs on m2. Its tool runs
// on m0 while it is in A; after a move to B its next tool runs on m1 (the
// tool prints the SESSIONRT_MEMBER of the process that ran it). Each bash
// call asks for permission: the ask crosses back to the session's member,
// is journaled there, and the client's reply lets the tool run.
func TestMoveRunsTheNextToolsOnTheMemberHoldingTheNewLocation(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (3 member processes, needs MariaDB)")
	}
	db := testdb.MariaDB(t)
	bin := buildMember(t, "chaosmember")
	rep, err := chaos.RunMemberMove(context.Background(), chaos.MemberKillConfig{
		Data:       t.TempDir(),
		JournalURL: db.URL(),
		Command: func(cfg chaos.MemberConfig) *exec.Cmd {
			b, _ := json.Marshal(cfg)
			return exec.Command(bin, string(b))
		},
		Logf: t.Logf,
	})
	t.Logf("%+v", rep)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.RanOn) < 2 || rep.RanOn[0] != "m0" || rep.RanOn[1] != "m1" {
		t.Fatalf("tools ran on %q (session hosted on %s): want m0 (Location A's member), then m1 (B's) after the move", rep.RanOn, rep.Host)
	}
	if !rep.InterruptedRemoteTool || len(rep.RanOn) != 3 || !strings.HasPrefix(rep.RanOn[2], "failed: ") {
		t.Fatalf("interrupting a tool that runs on m1 through m0: done %v, tools %q: want the third failed (interrupted)", rep.InterruptedRemoteTool, rep.RanOn)
	}
	if rep.Asks != 3 {
		t.Fatalf("%d permission requests answered, want 3 (each remote bash call asks the session's member)", rep.Asks)
	}
	// One trace per drain across members: each tool's location.run span,
	// recorded by the Location's member, is the child of the execute_tool
	// span the session's member recorded, in the drain's trace. The report
	// waits for the first two; the interrupted third call's span (on m1)
	// may or may not have been exported by then.
	spans := rep.RemoteSpans
	if len(spans) < 2 || len(spans) > 3 || !strings.HasPrefix(spans[0], "m0 ") || !strings.HasPrefix(spans[1], "m1 ") ||
		(len(spans) == 3 && !strings.HasPrefix(spans[2], "m1 ")) {
		t.Fatalf("location.run spans in their drain's trace: %q, want one by m0, then one by m1 (and perhaps the interrupted call's, by m1)", spans)
	}
	if spans[0][3:] == spans[1][3:] {
		t.Fatalf("the tools before and after the move share a trace %q: want one trace per drain", spans)
	}
	// /metrics shows the topology and the placement: the session grain on
	// m2, a Location grain on each holder.
	for member, want := range map[string][]string{
		"m0": {"sessionrt_cluster_members 3", `sessionrt_cluster_grains{kind="location@m0"} 1`},
		"m1": {"sessionrt_cluster_members 3", `sessionrt_cluster_grains{kind="location@m1"} 1`},
		"m2": {"sessionrt_cluster_members 3", `sessionrt_cluster_grains{kind="session"} 1`},
	} {
		for _, line := range want {
			if !slices.Contains(rep.Metrics[member], line) {
				t.Errorf("%s /metrics lacks %q: %q", member, line, rep.Metrics[member])
			}
		}
	}
}
