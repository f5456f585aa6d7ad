package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Level is one throughput step: Sessions run concurrently, each Turns
// prompts one after another.
type Level struct {
	Sessions int `json:"sessions"`
	Turns    int `json:"turns"`
}

// DefaultLevels: 10, 50 and 500 concurrent sessions, 50-500 turns each step.
var DefaultLevels = []Level{{10, 5}, {50, 2}, {500, 1}}

// Config configures one run against one target.
type Config struct {
	Target Target
	// LLMURL is the fake model server's OpenAI base URL. Required.
	LLMURL string
	// Dir is a fresh directory for the run. Required.
	Dir string
	// LatencyRuns is the number of single-session turns timed; default 30.
	LatencyRuns int
	// Levels are the throughput steps; default DefaultLevels.
	Levels []Level
	// StartTimeout bounds start-up to first answer; default 2 minutes.
	StartTimeout time.Duration
	// TurnTimeout bounds one turn; default 5 minutes.
	TurnTimeout time.Duration
	// LevelTimeout, when set, cuts a throughput step short: turns not
	// finished by then are not counted, the rate is over the turns that
	// were, and the step is marked Partial.
	LevelTimeout time.Duration
	// Progress receives one line per phase; nil discards.
	Progress io.Writer
	// ProfileDir, when set and the target is Profiled, gets the server's
	// CPU profile over a ProfileSeconds load of 50 sessions after the
	// measured run (<system>-cpu.pprof) and its heap (<system>-heap.pprof).
	ProfileDir     string
	ProfileSeconds int
}

// Latency is a latency distribution in milliseconds.
type Latency struct {
	Runs int     `json:"runs"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
}

// LevelResult is one throughput step's outcome.
type LevelResult struct {
	Level
	Seconds     float64 `json:"seconds"`
	TurnsPerSec float64 `json:"turns_per_sec"`
	CPUPerTurn  float64 `json:"cpu_ms_per_turn"`
	Latency     Latency `json:"latency"`
	// Partial: the step hit Config.LevelTimeout with Completed of
	// Sessions×Turns turns done.
	Partial   bool `json:"partial,omitempty"`
	Completed int  `json:"completed_turns"`
	// Failed turns are not counted; FirstError says why the first failed.
	Failed     int    `json:"failed_turns,omitempty"`
	FirstError string `json:"first_error,omitempty"`
}

// Result is one system's figures.
type Result struct {
	System         string        `json:"system"`
	StartupSeconds float64       `json:"startup_to_first_answer_s"`
	Latency        Latency       `json:"single_session_latency"`
	Throughput     []LevelResult `json:"throughput"`
	// CPUPerTurn is the server's CPU over every timed turn (latency and
	// throughput phases), in milliseconds.
	CPUPerTurn float64 `json:"cpu_ms_per_turn"`
	PeakRSS    int64   `json:"peak_rss_bytes"`
	RSSAfter   int64   `json:"rss_after_bytes"`
	// RSSAfterFile is the file-backed part of RSSAfter (mapped files such
	// as an mmap'd journal, which the kernel can drop), not heap.
	RSSAfterFile int64 `json:"rss_after_file_bytes"`
	// RSSAfterExe is the part of RSSAfterFile that maps the server's own
	// executable: it grows with the linked code and tables of a new binary,
	// in windows of pages (the kernel maps pages around each fault).
	RSSAfterExe int64 `json:"rss_after_exe_bytes"`
}

func (c *Config) defaults() error {
	if c.Target == nil || c.LLMURL == "" || c.Dir == "" {
		return errors.New("driver: Target, LLMURL and Dir are required")
	}
	if c.LatencyRuns <= 0 {
		c.LatencyRuns = 30
	}
	if len(c.Levels) == 0 {
		c.Levels = DefaultLevels
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 2 * time.Minute
	}
	if c.TurnTimeout <= 0 {
		c.TurnTimeout = 5 * time.Minute
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// Run starts the target, measures it and stops it.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	if err := cfg.defaults(); err != nil {
		return res, err
	}
	res.System = cfg.Target.Name()
	s := Setup{Dir: cfg.Dir, Project: filepath.Join(cfg.Dir, "project"), LLMURL: cfg.LLMURL}
	if err := os.MkdirAll(s.Project, 0o755); err != nil {
		return res, err
	}
	if s.Addr, err = freeAddr(); err != nil {
		return res, err
	}
	if p, ok := cfg.Target.(Profiled); ok && p.ServesPprof() && cfg.ProfileDir != "" {
		if s.PprofAddr, err = freeAddr(); err != nil {
			return res, err
		}
	}
	cmd, err := cfg.Target.Command(ctx, s)
	if err != nil {
		return res, err
	}
	logPath := filepath.Join(cfg.Dir, "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return res, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start %s: %w", res.System, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer stop(cmd, exited)
	pid := cmd.Process.Pid
	fail := func(err error) error {
		select {
		case <-exited:
			return fmt.Errorf("%s: %w (the server exited: %s; log %s)", res.System, err, cmd.ProcessState, logPath)
		default:
			return fmt.Errorf("%s: %w (log %s)", res.System, err, logPath)
		}
	}

	c := newClient("http://"+s.Addr, s.Project)
	if m, ok := cfg.Target.(SessionModeler); ok {
		ref := m.SessionModel()
		c.model = &ref
	}
	defer c.close()
	fmt.Fprintf(cfg.Progress, "%s: starting (pid %d, %s)\n", res.System, pid, s.Addr)
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	err = waitHealthy(sctx, c, exited)
	if err == nil {
		err = firstAnswer(sctx, c)
	}
	cancel()
	if err != nil {
		return res, fail(fmt.Errorf("start-up: %w", err))
	}
	res.StartupSeconds = time.Since(t0).Seconds()
	fmt.Fprintf(cfg.Progress, "%s: first answer after %.2fs\n", res.System, res.StartupSeconds)

	cpu0, err := serverCPU(pid)
	if err != nil {
		return res, fail(err)
	}
	turns := 0
	lat, err := latencyPhase(ctx, c, cfg)
	if err != nil {
		return res, fail(fmt.Errorf("latency: %w", err))
	}
	res.Latency, turns = lat, lat.Runs
	fmt.Fprintf(cfg.Progress, "%s: latency p50 %.1fms p90 %.1fms p99 %.1fms (%d runs)\n", res.System, lat.P50, lat.P90, lat.P99, lat.Runs)

	for _, lv := range cfg.Levels {
		before, err := serverCPU(pid)
		if err != nil {
			return res, fail(err)
		}
		lr, err := throughputPhase(ctx, c, cfg, lv)
		if err != nil {
			return res, fail(fmt.Errorf("throughput at %d sessions: %w", lv.Sessions, err))
		}
		after, err := serverCPU(pid)
		if err != nil {
			return res, fail(err)
		}
		n := lr.Completed
		if n == 0 {
			return res, fail(fmt.Errorf("throughput at %d sessions: no turn finished within %s", lv.Sessions, cfg.LevelTimeout))
		}
		lr.CPUPerTurn = ms(after-before) / float64(n)
		turns += n
		res.Throughput = append(res.Throughput, lr)
		fmt.Fprintf(cfg.Progress, "%s: %d sessions × %d turns: %.1f turns/s, %.2f ms CPU/turn%s\n", res.System, lv.Sessions, lv.Turns, lr.TurnsPerSec, lr.CPUPerTurn, lr.note())
	}
	cpu1, err := serverCPU(pid)
	if err != nil {
		return res, fail(err)
	}
	res.CPUPerTurn = ms(cpu1-cpu0) / float64(turns)
	mem, err := procMem(pid)
	if err != nil {
		return res, fail(err)
	}
	res.RSSAfter, res.PeakRSS, res.RSSAfterFile, res.RSSAfterExe = mem.rss, mem.peak, mem.file, mem.exe
	if s.PprofAddr != "" {
		if err := profilePhase(ctx, c, cfg, "http://"+s.PprofAddr); err != nil {
			return res, fail(fmt.Errorf("profile: %w", err))
		}
	}
	return res, nil
}

// profilePhase takes a CPU profile while 50 sessions prompt back to back,
// then a heap profile, into cfg.ProfileDir.
func profilePhase(ctx context.Context, c *client, cfg Config, pprofURL string) error {
	secs := cfg.ProfileSeconds
	if secs <= 0 {
		secs = 10
	}
	if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
		return err
	}
	const sessions = 50
	ids := make([]string, sessions)
	if err := parallel(sessions, 32, func(i int) (err error) {
		ids[i], err = c.createSession(ctx)
		return err
	}); err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	loadDone := make(chan error, 1)
	go func() {
		loadDone <- parallel(sessions, sessions, func(i int) error {
			for k := 0; ; k++ {
				err := c.turn(lctx, ids[i], fmt.Sprintf("[run:prof-%d-%d]", i, k))
				if lctx.Err() != nil {
					return nil
				}
				if err != nil {
					return err
				}
			}
		})
	}()
	name := cfg.Target.Name()
	err := fetchTo(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", pprofURL, secs), filepath.Join(cfg.ProfileDir, name+"-cpu.pprof"))
	cancel()
	if lerr := <-loadDone; err == nil && lerr != nil {
		err = fmt.Errorf("load: %w", lerr)
	}
	if err != nil {
		return err
	}
	if err := fetchTo(ctx, pprofURL+"/debug/pprof/heap", filepath.Join(cfg.ProfileDir, name+"-heap.pprof")); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Progress, "%s: profiles in %s\n", name, cfg.ProfileDir)
	return nil
}

func fetchTo(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// stop ends the server: SIGTERM to its process group, SIGKILL after 10 s.
func stop(cmd *exec.Cmd, exited <-chan struct{}) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	// Children left in the group (tool processes) go too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// waitHealthy polls /api/health, then (for a target that names its
// model) /api/model until the model is listed.
func waitHealthy(ctx context.Context, c *client, exited <-chan struct{}) error {
	for {
		if c.healthy(ctx) && (c.model == nil || c.modelListed(ctx)) {
			return nil
		}
		select {
		case <-exited:
			return errors.New("the server exited before it was healthy")
		case <-ctx.Done():
			return fmt.Errorf("not healthy: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func firstAnswer(ctx context.Context, c *client) error {
	id, err := c.createSession(ctx)
	if err != nil {
		return err
	}
	return c.turn(ctx, id, "[run:warmup]")
}

func latencyPhase(ctx context.Context, c *client, cfg Config) (Latency, error) {
	ds := make([]time.Duration, 0, cfg.LatencyRuns)
	for i := range cfg.LatencyRuns {
		id, err := c.createSession(ctx)
		if err != nil {
			return Latency{}, err
		}
		tctx, cancel := context.WithTimeout(ctx, cfg.TurnTimeout)
		t0 := time.Now()
		err = c.turn(tctx, id, fmt.Sprintf("[run:lat-%d]", i))
		d := time.Since(t0)
		cancel()
		if err != nil {
			return Latency{}, err
		}
		ds = append(ds, d)
	}
	return summarize(ds), nil
}

func throughputPhase(ctx context.Context, c *client, cfg Config, lv Level) (LevelResult, error) {
	ids := make([]string, lv.Sessions)
	if err := parallel(lv.Sessions, 32, func(i int) (err error) {
		ids[i], err = c.createSession(ctx)
		return err
	}); err != nil {
		return LevelResult{}, err
	}
	lctx, cancel := ctx, context.CancelFunc(func() {})
	if cfg.LevelTimeout > 0 {
		lctx, cancel = context.WithTimeout(ctx, cfg.LevelTimeout)
	}
	defer cancel()
	var (
		mu     sync.Mutex
		failed int
		first  error
	)
	ds := make([]time.Duration, 0, lv.Sessions*lv.Turns)
	t0 := time.Now()
	// A failed turn does not stop the step (one slow drain among 500 must
	// not void the others' figures); it ends that session's turns and is
	// reported. A step where every turn failed is an error.
	_ = parallel(lv.Sessions, lv.Sessions, func(i int) error {
		for k := range lv.Turns {
			tctx, cancel := context.WithTimeout(lctx, cfg.TurnTimeout)
			t := time.Now()
			err := c.turn(tctx, ids[i], fmt.Sprintf("[run:c%d-%d-%d]", lv.Sessions, i, k))
			d := time.Since(t)
			cancel()
			mu.Lock()
			switch {
			case err == nil:
				ds = append(ds, d)
			case cutShort(ctx, lctx):
				// not counted: the step ran out of time
			default:
				failed++
				if first == nil {
					first = err
				}
			}
			mu.Unlock()
			if err != nil {
				return nil
			}
		}
		return nil
	})
	elapsed := time.Since(t0)
	if ctx.Err() != nil {
		return LevelResult{}, ctx.Err()
	}
	if len(ds) == 0 && first != nil {
		return LevelResult{}, first
	}
	lr := levelResult(lv, elapsed, ds)
	if lr.Failed = failed; first != nil {
		lr.FirstError = first.Error()
	}
	return lr, nil
}

// cutShort: the step's own deadline ended the turn, not the run's.
func cutShort(run, step context.Context) bool {
	return run.Err() == nil && errors.Is(step.Err(), context.DeadlineExceeded)
}

// levelResult rates the turns that finished over the step's wall time.
func levelResult(lv Level, elapsed time.Duration, ds []time.Duration) LevelResult {
	lr := LevelResult{Level: lv, Seconds: elapsed.Seconds(), Completed: len(ds), Latency: summarize(ds)}
	lr.Partial = len(ds) < lv.Sessions*lv.Turns
	if elapsed > 0 {
		lr.TurnsPerSec = float64(len(ds)) / elapsed.Seconds()
	}
	return lr
}

// note says how a cut-short step ended, "" for a whole one.
func (lr LevelResult) note() string {
	if !lr.Partial {
		return ""
	}
	n := fmt.Sprintf(" (cut short after %.0fs: %d of %d turns", lr.Seconds, lr.Completed, lr.Sessions*lr.Turns)
	if lr.Failed > 0 {
		n += fmt.Sprintf("; %d failed, the first: %s", lr.Failed, lr.FirstError)
	}
	return n + ")"
}

// parallel runs f(0..n-1) with at most width at once; the first error wins.
func parallel(n, width int, f func(int) error) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	sem := make(chan struct{}, width)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(i); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	at := func(p float64) float64 { return ms(ds[int(p*float64(len(ds)-1))]) }
	return Latency{Runs: len(ds), P50: at(0.50), P90: at(0.90), P99: at(0.99)}
}
