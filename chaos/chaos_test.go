package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"testing"
)

func TestActorKillsAtEveryFaultPointKeepTheInvariants(t *testing.T) {
	cfg := ActorConfig{Data: t.TempDir()}
	if os.Getenv("CHAOS_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rep, err := RunActorKills(context.Background(), cfg)
	t.Logf("\n%s", rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if rep.ActorKills < 200 {
		t.Fatalf("only %d actor kills: the run exercised too little", rep.ActorKills)
	}
	for _, p := range []string{"after-admission", "after-promotion", "mid-stream", "after-tool-called", "mid-tool", "after-settlement", "before-turn-end"} {
		if rep.Faults[p] == 0 {
			t.Errorf("no fault injected at %s", p)
		}
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("SESSIONRT_CHAOS_WORKER") != "" {
		var cfg WorkerConfig
		if err := json.Unmarshal([]byte(os.Getenv("SESSIONRT_CHAOS_WORKER")), &cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := Worker(context.Background(), cfg, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestProcessKillsLoseNothingAndLeaveNoOrphans: workers SIGKILLed at random
// moments and right after receipts; the client-side ledger shows every
// acknowledged prompt promoted exactly once although no prompt was sent
// twice and nobody asked for a run (each worker has its own sessions).
func TestProcessKillsLoseNothingAndLeaveNoOrphans(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and SIGKILLs worker processes")
	}
	rep, err := RunProcessKills(context.Background(), ProcessConfig{
		Data: t.TempDir(),
		Command: func(cfg WorkerConfig) *exec.Cmd {
			b, _ := json.Marshal(cfg)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "SESSIONRT_CHAOS_WORKER="+string(b))
			return cmd
		},
	})
	t.Logf("\n%s", rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if rep.ProcessKills < 10 || rep.PromptsAcknowledged == 0 || rep.KillsAfterReceipt == 0 {
		t.Fatalf("the run exercised too little: %d kills (%d right after a receipt), %d prompts", rep.ProcessKills, rep.KillsAfterReceipt, rep.PromptsAcknowledged)
	}
	if rep.PromptsPromotedOnce != rep.PromptsAcknowledged {
		t.Fatalf("ledger: %d receipts, %d promoted once", rep.PromptsAcknowledged, rep.PromptsPromotedOnce)
	}
}
