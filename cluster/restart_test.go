package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sessionrt/sessionrt/chaos"
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
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(loc, chaos.GateFile), nil, 0o644) })
	cfg := func(dir string, atStart bool) chaos.MemberKillConfig {
		return chaos.MemberKillConfig{Data: filepath.Join(data, dir), JournalURL: db.URL(), Members: 3, ResumeAtStart: atStart,
			Command: func(cfg chaos.MemberConfig) *exec.Cmd {
				b, _ := json.Marshal(cfg)
				return exec.Command(bin, string(b))
			}}
	}
	for _, d := range []string{"first", "second"} {
		if err := os.MkdirAll(filepath.Join(data, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	first, err := chaos.StartCluster(ctx, cfg("first", false))
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
		m, err := chaos.Markers(loc)
		if err == nil && len(m) < n {
			err = fmt.Errorf("%d of %d tools started", len(m), n)
		}
		return err
	})
	first.Stop() // SIGKILL of every member

	second, err := chaos.StartCluster(ctx, cfg("second", true))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	eventually(t, "every session resumed and settled with no caller", func() error {
		for i := range n {
			ok, err := chaos.Settled(ctx, j, sid(i))
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("session %s not settled", sid(i))
			}
		}
		return nil
	})
	markers, err := chaos.Markers(loc)
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
