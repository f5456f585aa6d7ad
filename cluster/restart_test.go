package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionrt/sessionrt/cluster/clustertest"
	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// TestWholeClusterRestartResumesMidDrainSessionsWithoutACaller: every
// member is SIGKILLed while all sessions wait in a tool; a new cluster on
// the same journal (members started with ResumeAtStart) resumes each
// session on the member disthash places it on, with no client touching
// them: the running tool is failed durably as interrupted and never run
// again, and the drain ends.
func TestWholeClusterRestartResumesMidDrainSessionsWithoutACaller(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (6 member processes, needs MariaDB)")
	}
	db := testdb.MariaDB(t)
	bin := buildMember(t, "chaosmember")
	// A backstop: each step below waits until its condition holds (bounded
	// by stepBackstop).
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
	// The gated tools outlive their killed members: open the gate at the end.
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(loc, clustertest.GateFile), nil, 0o644) })
	cfg := func(dir string, atStart bool) clustertest.Config {
		return clustertest.Config{Data: filepath.Join(data, dir), JournalURL: db.URL(), Members: 3, ResumeAtStart: atStart,
			Command: clustertest.MemberCommand(bin)}
	}
	for _, d := range []string{"first", "second"} {
		if err := os.MkdirAll(filepath.Join(data, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	first, err := clustertest.StartCluster(ctx, cfg("first", false))
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	sid := func(i int) string { return fmt.Sprintf("ses_restart_%d", i) }
	for i := range n {
		if err := first.Create(ctx, i%3, sid(i), loc); err != nil {
			t.Fatal(err)
		}
		if err := first.Admit(ctx, i%3, sid(i), fmt.Sprintf("msg_%d", i), "gated s="+sid(i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every session's tool running", func() error {
		m, err := clustertest.Markers(loc)
		if err == nil && len(m) < n {
			err = fmt.Errorf("%d of %d tools started", len(m), n)
		}
		return err
	})
	first.Stop() // SIGKILL of every member

	second, err := clustertest.StartCluster(ctx, cfg("second", true))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	eventually(t, "every session resumed and settled with no caller", func() error {
		for i := range n {
			ok, err := clustertest.Settled(ctx, j, sid(i))
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("session %s not settled", sid(i))
			}
		}
		return nil
	})
	markers, err := clustertest.Markers(loc)
	if err != nil {
		t.Fatal(err)
	}
	for m, count := range markers {
		if count != 1 {
			t.Errorf("tool %s ran %d times", m, count)
		}
	}
	for i := range n {
		envs, err := j.ReadEvents(ctx, sid(i), 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		for _, e := range envs {
			if f, ok := e.Event.(messages.ToolFailed); ok && f.Error == "Tool execution interrupted" {
				failed++
			}
		}
		if failed != 1 {
			t.Errorf("session %s: %d tools failed as interrupted, want its one gated call", sid(i), failed)
		}
	}
}
