package chaos

import (
	"context"
	"log/slog"
	"os"
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
