package clustertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A topology wait that fails says what each member logged last: the
// member's log goes with the test's temporary directory.
func TestFailedTopologyWaitCarriesTheMembersLogs(t *testing.T) {
	dir := t.TempDir()
	var ms []*Proc
	for i, line := range []string{"member zero saw 2 members", "member one is fine"} {
		log := filepath.Join(dir, "member"+string(rune('0'+i))+".log")
		if err := os.WriteFile(log, []byte(strings.Repeat("x", 3000)+"\n"+line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, &Proc{I: i, Log: log, Ctl: "127.0.0.1:1"}) // no control API answers
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := WaitTopology(ctx, ms)
	if err == nil {
		t.Fatal("a wait on members that do not answer succeeded")
	}
	for _, want := range []string{"member 0 (member0.log) log ends", "member zero saw 2 members", "member 1 (member1.log) log ends", "member one is fine"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "x"); n > 2*1500 {
		t.Errorf("the logs' tails are not bounded: %d bytes of filler", n)
	}
}
