package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/sessionrt/sessionrt/chaos"
	"github.com/sessionrt/sessionrt/cluster/clustertest"
)

// ChaosMemberKillFlags configure `sessionrt chaos --mode member-kill`; the
// members share the global --journal (MySQL/MariaDB; its tables are created).
type ChaosMemberKillFlags struct {
	ClusterMembers  int           `help:"member-kill: member processes." default:"3"`
	ClusterSessions int           `help:"member-kill: sessions prompted through the members." default:"100"`
	ToolSleep       time.Duration `help:"member-kill: how long each tool runs (the kill comes while they run)." default:"4s"`
	LocationOnKill  bool          `help:"member-kill: pin the sessions' Location to the killed member, so every session's tool runs there."`
	Rejoin          bool          `help:"member-kill: afterwards restart the killed member while every session waits in a gated tool; the sessions that move to it must have every append of their old activations refused."`
}

func (c *ChaosRunCmd) runMemberKill(ctx context.Context, g *Globals, dir string) (chaos.MemberKillReport, error) {
	if g.JournalDSN == "" {
		return chaos.MemberKillReport{}, &exitError{code: exitUsage, err: errors.New("chaos: --mode member-kill needs --journal mysql://… (the members share it)")}
	}
	self, err := os.Executable()
	if err != nil {
		return chaos.MemberKillReport{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return chaos.MemberKillReport{}, err
	}
	return chaos.RunMemberKills(ctx, chaos.MemberKillConfig{
		Data: dir, JournalURL: g.JournalDSN, Members: c.ClusterMembers, Sessions: c.ClusterSessions, ToolSleep: c.ToolSleep,
		LocationOnVictim: c.LocationOnKill, Rejoin: c.Rejoin,
		Command: func(cfg clustertest.MemberConfig) *exec.Cmd {
			b, _ := json.Marshal(cfg)
			return exec.Command(self, "chaos", "member", string(b))
		},
		Logf: func(format string, args ...any) { fmt.Fprintf(g.errOut(), format+"\n", args...) },
	})
}

// ChaosMemberCmd is one cluster member process of a member-kill run.
type ChaosMemberCmd struct {
	Config string `arg:"" help:"The member's configuration, as JSON."`
}

func (c *ChaosMemberCmd) Run(g *Globals) error {
	var cfg clustertest.MemberConfig
	if err := json.Unmarshal([]byte(c.Config), &cfg); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("chaos member: config: %w", err)}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return clustertest.Member(ctx, cfg, g.out())
}
