package cluster_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/cluster/clustertest"
	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/persistence"
)

// TestRevertAfterFailoverRestoresFromTheLocationsMember: a Location is
// pinned to member m0; the session runs its turns on another member, whose
// tool calls and file snapshots both go to m0 (its data directory holds
// the trees, the session's member's holds none). The session's member is
// SIGKILLed; through a survivor, the session (activated anew elsewhere)
// stages and commits a revert to its second prompt: the files its tool
// changed come back from m0's store, a file changed by hand is left alone.
// Before, the snapshots were in the dead member's directory and the stage
// answered a conflict.
func TestRevertAfterFailoverRestoresFromTheLocationsMember(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (3 member processes, needs MariaDB)")
	}
	db := testdb.MariaDB(t)
	bin := buildMember(t, "chaosmember")
	ctx, cancel := context.WithTimeout(context.Background(), 3*stepBackstop)
	defer cancel()
	j, err := persistence.Open(ctx, persistence.Config{DB: db.DB})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	data := t.TempDir()
	loc := filepath.Join(data, "project")
	if err := os.MkdirAll(loc, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := clustertest.Config{Data: data, JournalURL: db.URL(), Members: 3, LocationRoots: map[string]string{loc: "m0"},
		Command: clustertest.MemberCommand(bin)}
	ms, err := clustertest.StartMembers(ctx, cfg)
	defer func() {
		for _, m := range ms {
			m.Kill()
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	if err := clustertest.WaitTopology(ctx, ms); err != nil {
		t.Fatal(err)
	}
	// A session whose grain is not on m0.
	sid, host := "", -1
	for i := 0; host <= 0; i++ {
		if i == 50 {
			t.Fatal("every session was placed on m0")
		}
		sid = fmt.Sprintf("ses_snapfail_%d", i)
		if err := clustertest.Get(ctx, ms[0].Ctl, "/create", url.Values{"id": {sid}, "loc": {loc}}, nil); err != nil {
			t.Fatal(err)
		}
		var addr string
		if err := clustertest.Get(ctx, ms[0].Ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Addr == addr {
				host = m.I
			}
		}
	}
	turn := func(via int, msg string) {
		t.Helper()
		if err := clustertest.Get(ctx, ms[via].Ctl, "/admit", url.Values{"id": {sid}, "msg": {msg}, "text": {"tool s=" + sid}}, nil); err != nil {
			t.Fatal(err)
		}
		var out struct{ Err, Kind string }
		if err := clustertest.Get(ctx, ms[via].Ctl, "/wait", url.Values{"id": {sid}, "timeout": {"120000"}}, &out); err != nil || out.Err != "" {
			t.Fatalf("turn %s: %v %+v", msg, err, out)
		}
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(loc, name))
		return string(b)
	}
	turn(host, "msg_1")
	afterOne := read(clustertest.SideEffects)
	if strings.Count(afterOne, "\n") != 1 {
		t.Fatalf("after turn 1 the side effects are %q", afterOne)
	}
	hand := filepath.Join(loc, "hand.txt")
	if err := os.WriteFile(hand, []byte("by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	turn(host, "msg_2")
	if got := read(clustertest.SideEffects); strings.Count(got, "\n") != 2 {
		t.Fatalf("after turn 2 the side effects are %q", got)
	}
	trees := func(i int) int {
		des, _ := os.ReadDir(filepath.Join(data, fmt.Sprintf("member%d", i), "snapshots", "trees"))
		return len(des)
	}
	if trees(0) == 0 || trees(host) != 0 {
		t.Fatalf("snapshot trees: %d on m0 (the Location's member), %d on m%d (the session's): want them all on m0", trees(0), trees(host), host)
	}

	ms[host].Kill()
	var survivors []*clustertest.Proc
	for _, m := range ms {
		if m.I != host {
			survivors = append(survivors, m)
		}
	}
	if err := clustertest.WaitTopology(ctx, survivors); err != nil {
		t.Fatal(err)
	}
	via := survivors[len(survivors)-1].I
	var staged actors.RevertInfo
	if err := clustertest.Get(ctx, ms[via].Ctl, "/revert", url.Values{"id": {sid}, "op": {"stage"}, "msg": {"msg_2"}}, &staged); err != nil {
		t.Fatalf("stage after the failover: %v", err)
	}
	if staged.Open == nil || len(staged.Files) != 1 || staged.Files[0].Path != clustertest.SideEffects {
		t.Fatalf("staged %+v files %+v: want the side-effect file only", staged.Open, staged.Files)
	}
	if err := clustertest.Get(ctx, ms[via].Ctl, "/revert", url.Values{"id": {sid}, "op": {"commit"}}, nil); err != nil {
		t.Fatalf("commit after the failover: %v", err)
	}
	if got := read(clustertest.SideEffects); got != afterOne {
		t.Fatalf("after the revert the side effects are %q, want %q", got, afterOne)
	}
	if got := read("hand.txt"); got != "by hand\n" {
		t.Fatalf("the file changed by hand is now %q", got)
	}
	var where string
	clustertest.Get(ctx, ms[via].Ctl, "/where", url.Values{"id": {sid}}, &where)
	t.Logf("session on m%d (killed), Location on m0; reverted through m%d, session now at %s", host, via, where)
}
