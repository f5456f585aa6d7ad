package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"

	"github.com/sessionrt/sessionrt/chaos"
	"github.com/sessionrt/sessionrt/session/sim"
)

// ChaosCmd groups the fault-injection suites.
type ChaosCmd struct {
	Run    ChaosRunCmd    `cmd:"" default:"withargs" help:"Run the suites and print what they found (the default)."`
	Worker ChaosWorkerCmd `cmd:"" hidden:"" help:"(internal) one worker process of a process-kill run."`
	Member ChaosMemberCmd `cmd:"" hidden:"" help:"(internal) one cluster member process of a member-kill run."`
}

// ChaosRunCmd runs the fault-injection suites and prints what they found.
type ChaosRunCmd struct {
	Mode      string `help:"actors (kill Session and tool actors at every fault point), process (SIGKILL whole server processes), both, member-kill (SIGKILL a cluster member mid-tool; needs --journal), or sim (the deterministic simulator of the session core: --seed, --seeds, --steps)." enum:"actors,process,both,member-kill,sim" default:"both"`
	Dir       string `help:"Directory for the run's journals (default: a fresh temporary directory)." type:"path"`
	Kills     int    `help:"Session actor kills in actors mode." default:"210"`
	Processes int    `help:"Process kills in process mode." default:"12"`
	Sessions  int    `help:"Sessions driven concurrently." default:"8"`
	JSON      bool   `help:"Print the reports as JSON."`
	ChaosSimFlags
	ChaosMemberKillFlags
}

// ChaosSimFlags configure --mode sim.
type ChaosSimFlags struct {
	Seed  uint64 `help:"sim: the first seed." default:"1"`
	Seeds int    `help:"sim: how many seeds, from --seed on." default:"1"`
	Steps int    `help:"sim: steps per seed." default:"10000"`
	Break string `help:"sim: break one rule on purpose to see it caught (promote-early, rerun-tool, keep-questions)." enum:",promote-early,rerun-tool,keep-questions" default:""`
}

// runSim runs the simulator over the seeds; the first violation fails the
// run with its seed and the command that replays it.
func (c *ChaosRunCmd) runSim(g *Globals) error {
	var total sim.Result
	for i := range uint64(c.Seeds) {
		res, err := sim.Run(sim.Config{Seed: c.Seed + i, Sessions: c.Sessions, Steps: c.Steps, Break: c.Break})
		total.Add(res)
		if err != nil {
			return fmt.Errorf("sim: invariant violated: %w", err)
		}
	}
	if c.JSON {
		return printJSON(g.out(), total)
	}
	fmt.Fprintf(g.out(), "sim: %d seeds from %d, %d steps, %d events, %d drains, %d turns, %d promotions, %d tool calls, %d crashes, %d stale appends refused, %d interrupts, %d titles: every invariant held\n",
		c.Seeds, c.Seed, total.Steps, total.Events, total.Drains, total.Turns, total.Promotions, total.ToolCalls, total.Crashes, total.StaleRefused, total.Interrupts, total.Titles)
	return nil
}

func (c *ChaosRunCmd) Help() string {
	return `Exit code 0 when every invariant held: no admitted prompt lost, no tool run
twice, every interrupted tool failed durably, contiguous seqs, journal verify clean.

Examples:
  sessionrt chaos
  sessionrt chaos --mode actors --kills 500 --json
  sessionrt chaos --mode sim --seeds 1000 --steps 1000
  sessionrt chaos --mode member-kill --journal mysql://root@127.0.0.1:3306/test`
}

func (c *ChaosRunCmd) Run(g *Globals) error {
	if c.Mode == "sim" {
		return c.runSim(g)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir := c.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sessionrt-chaos-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	var reports []chaos.Report
	if c.Mode == "actors" || c.Mode == "both" {
		rep, err := chaos.RunActorKills(ctx, chaos.ActorConfig{Data: dir + "/actors", Sessions: c.Sessions, Kills: c.Kills})
		if err != nil {
			return fmt.Errorf("actor-kill run: %w", err)
		}
		reports = append(reports, rep)
	}
	if c.Mode == "process" || c.Mode == "both" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		rep, err := chaos.RunProcessKills(ctx, chaos.ProcessConfig{Data: dir + "/process", Sessions: c.Sessions, Kills: c.Processes,
			Command: func(cfg chaos.WorkerConfig) *exec.Cmd {
				b, _ := json.Marshal(cfg)
				return exec.Command(self, "chaos", "worker", string(b))
			}})
		if err != nil {
			return fmt.Errorf("process-kill run: %w", err)
		}
		reports = append(reports, rep)
	}
	failed := false
	for _, r := range reports {
		if c.JSON {
			if err := printJSON(g.out(), r); err != nil {
				return err
			}
		} else {
			fmt.Fprint(g.out(), r.String())
		}
		failed = failed || r.Err() != nil
	}
	if c.Mode == "member-kill" {
		rep, err := c.runMemberKill(ctx, g, dir+"/member-kill")
		if err != nil {
			return fmt.Errorf("member-kill run: %w", err)
		}
		if c.JSON {
			if err := printJSON(g.out(), rep); err != nil {
				return err
			}
		} else {
			fmt.Fprint(g.out(), rep.String())
		}
		failed = failed || rep.Err() != nil
	}
	if failed {
		return &exitError{code: exitFailure, err: fmt.Errorf("chaos: invariants violated (see the report)")}
	}
	return nil
}

// ChaosWorkerCmd is one worker process of a process-kill run.
type ChaosWorkerCmd struct {
	Config string `arg:"" help:"The worker's configuration, as JSON."`
}

func (c *ChaosWorkerCmd) Run(g *Globals) error {
	var cfg chaos.WorkerConfig
	if err := json.Unmarshal([]byte(c.Config), &cfg); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("chaos worker: config: %w", err)}
	}
	return chaos.Worker(context.Background(), cfg, g.out())
}
