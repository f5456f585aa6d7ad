package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessionrt/sessionrt/bench/driver"
	"github.com/sessionrt/sessionrt/bench/fakellm"
	"github.com/sessionrt/sessionrt/bench/peer"
)

// BenchCmd measures sessionrt (and a peer) end to end over HTTP against a
// fake model server, each in a subprocess with a fresh data directory.
// With --crash it kills each server with SIGKILL mid-stream and mid-tool
// instead, restarts it on the same data and reports what it shows.
type BenchCmd struct {
	Crash        bool          `help:"Crash mode: kill -9 each server mid-stream (the fake model holds the stream open) and mid-tool (bash waits on a gate file), restart it on the same data, and report per system: prompt kept? interrupted turn resumed? tool repaired at start-up or only later? orphan child processes left (by pid and process group)?"`
	LevelTimeout time.Duration `help:"Cut a throughput step short after this long (its rate is over the turns that finished; the table says so); 0 waits for every turn." default:"3m"`
	Peer         string        `help:"Incumbent to run beside sessionrt (opencode); empty runs sessionrt alone." enum:",opencode" default:""`
	Out          string        `help:"Directory for bench.json (and the chart); default none." type:"path"`
	Runs         int           `help:"Single-session latency runs." default:"30"`
	Levels       string        `help:"Throughput steps as sessions×turns, comma-separated." default:"10x5,50x2,500x1"`
	ChunkDelay   time.Duration `help:"Fake model: delay before each streamed chunk (slow streams)." default:"0s"`
	ToolSleep    time.Duration `help:"Fake model: the bash call sleeps this long before echo (slow tools)." default:"0s"`
	Profile      bool          `help:"After sessionrt's measured run, take its server's CPU profile over 10 s of 50 sessions and its heap profile (sessionrt-cpu.pprof, sessionrt-heap.pprof in --out, or the current directory)."`
	Binary       string        `help:"sessionrt executable to serve (default this one)." type:"path" hidden:""`
	Baseline     string        `help:"A previous sessionrt executable to run beside this one in the same run (as sessionrt-baseline, after it): a hot-path change is compared side by side; the ratio column is baseline/this. For RSS, give both binaries the same page-cache state (copies made together, or each dropped first with dd if=BIN iflag=nocache count=0): a just-linked binary is cached in large folios the kernel maps whole, +8.6 MB file-backed RSS for the same code." type:"path"`
	Work         string        `help:"Scratch directory for the servers' data (default a fresh temp dir, removed after)." type:"path"`
}

func parseLevels(s string) ([]driver.Level, error) {
	var out []driver.Level
	for _, part := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(part), "x")
		n, err1 := strconv.Atoi(a)
		t, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || n <= 0 || t <= 0 {
			return nil, fmt.Errorf("--levels: %q is not sessions×turns like 50x2", part)
		}
		out = append(out, driver.Level{Sessions: n, Turns: t})
	}
	return out, nil
}

func (c *BenchCmd) Run(g *Globals) error {
	levels, err := parseLevels(c.Levels)
	if err != nil {
		return err
	}
	if c.Runs <= 0 {
		return fmt.Errorf("--runs must be positive, not %d", c.Runs)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var failed error
	work := c.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "sessionrt-bench-"); err != nil {
			return err
		}
		defer func() {
			if failed == nil { // a failed run keeps its server logs
				os.RemoveAll(work)
			}
		}()
	}
	// The fake model's request log shows what each system really sent.
	var llmLog io.Writer
	if c.Out != "" {
		if err := os.MkdirAll(c.Out, 0o755); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(c.Out, "fakellm.log"))
		if err != nil {
			return err
		}
		defer f.Close()
		llmLog = f
	}
	gates := filepath.Join(work, "gates")
	if err := os.MkdirAll(gates, 0o755); err != nil {
		return err
	}
	llm, err := fakellm.Start(fakellm.Config{ChunkDelay: c.ChunkDelay, ToolSleep: c.ToolSleep, ToolGate: gates, Log: llmLog})
	if err != nil {
		return err
	}
	defer llm.Close()

	targets := []driver.Target{driver.Sessionrt{Binary: c.Binary}}
	if c.Baseline != "" {
		if c.Peer != "" {
			return fmt.Errorf("--baseline and --peer: choose one (the table compares two systems)")
		}
		targets = append(targets, driver.Sessionrt{Binary: c.Baseline, Label: "sessionrt-baseline"})
	}
	if c.Peer == "opencode" {
		targets = append(targets, &peer.OpenCode{Progress: g.errOut()})
	}
	if c.Crash {
		failed = c.crash(ctx, g, targets, llm, work, gates)
		return failed
	}
	profileDir := ""
	if c.Profile {
		if profileDir = c.Out; profileDir == "" {
			profileDir = "."
		}
	}
	var results []driver.Result
	for _, t := range targets {
		dir := filepath.Join(work, t.Name())
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		res, err := driver.Run(ctx, driver.Config{Target: t, LLMURL: llm.URL, Dir: dir, LatencyRuns: c.Runs, Levels: levels, LevelTimeout: c.LevelTimeout, Progress: g.errOut(), ProfileDir: profileDir})
		if err != nil {
			// A failed peer still leaves sessionrt's figures to print.
			failed = fmt.Errorf("bench %s: %w", t.Name(), err)
			fmt.Fprintln(g.errOut(), failed)
			if len(results) == 0 {
				return failed
			}
			continue
		}
		results = append(results, res)
	}
	rep := driver.Compare(results...)
	if err := rep.Print(g.out()); err != nil {
		return err
	}
	st := llm.Stats()
	fmt.Fprintf(g.errOut(), "fake model: %d requests (%d tool calls, %d finals, %d plain, %d refused)\n", st.Requests, st.ToolCalls, st.Finals, st.Plain, st.Errors)
	if c.Out != "" {
		if err := rep.Write(c.Out); err != nil {
			return err
		}
		fmt.Fprintf(g.errOut(), "wrote %s\n", c.Out)
	}
	return failed
}

// crash runs crash mode on every target and prints one table.
func (c *BenchCmd) crash(ctx context.Context, g *Globals, targets []driver.Target, llm *fakellm.Server, work, gates string) error {
	var all []driver.CrashObservation
	var failed error
	for _, t := range targets {
		obs, err := driver.CrashMode(ctx, driver.CrashConfig{Target: t, LLMURL: llm.URL, Model: llm, ToolGate: gates, Gate: fakellm.GatePath,
			Dir: filepath.Join(work, "crash-"+t.Name()), Progress: g.errOut()})
		all = append(all, obs...)
		if err != nil {
			failed = fmt.Errorf("bench --crash %s: %w", t.Name(), err)
			fmt.Fprintln(g.errOut(), failed)
		}
		for _, o := range obs {
			if o.Err != "" && failed == nil {
				failed = fmt.Errorf("bench --crash %s %s: %s", o.System, o.Point, o.Err)
			}
		}
	}
	if err := driver.PrintCrash(g.out(), all); err != nil {
		return err
	}
	if c.Out != "" {
		b, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(c.Out, "crash.json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(g.errOut(), "wrote %s\n", filepath.Join(c.Out, "crash.json"))
	}
	return failed
}
