package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HeldModel is the fake model's crash-test side (fakellm.Server).
type HeldModel interface {
	// WaitHeld returns once a stream for marker is held open.
	WaitHeld(ctx context.Context, marker string) error
	// Release lets the streams held for marker finish and holds no later
	// one for it.
	Release(marker string)
}

// CrashConfig configures crash mode for one target.
type CrashConfig struct {
	Target Target
	// LLMURL is the fake model server's base URL; Model is the same server.
	LLMURL string
	Model  HeldModel
	// ToolGate is the fake model's Config.ToolGate directory; Gate names
	// the file a held tool waits on (fakellm.GatePath).
	ToolGate string
	Gate     func(dir, marker string) string
	// Dir is a fresh directory; each point gets its own data under it.
	Dir string
	// Points are the crash points to run; default MidStream and MidTool.
	Points []string
	// StartupWindow is how long after the restarted server is ready a
	// repair counts as "at start-up"; default 5 s.
	StartupWindow time.Duration
	// Progress receives one line per step; nil discards.
	Progress io.Writer
}

// CrashMode kills the target with SIGKILL at each point of a turn,
// restarts it on the same data and reports what it shows. A scenario that
// cannot be run to the end still returns what was seen, with Err set.
func CrashMode(ctx context.Context, cfg CrashConfig) ([]CrashObservation, error) {
	if cfg.Target == nil || cfg.LLMURL == "" || cfg.Model == nil || cfg.ToolGate == "" || cfg.Gate == nil || cfg.Dir == "" {
		return nil, errors.New("driver: crash mode needs Target, LLMURL, Model, ToolGate, Gate and Dir")
	}
	if len(cfg.Points) == 0 {
		cfg.Points = []string{MidStream, MidTool}
	}
	if cfg.StartupWindow <= 0 {
		cfg.StartupWindow = 5 * time.Second
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	var out []CrashObservation
	for i, point := range cfg.Points {
		if point != MidStream && point != MidTool {
			return out, fmt.Errorf("driver: unknown crash point %q", point)
		}
		o := crashOnce(ctx, cfg, point, i)
		if o.Err != "" {
			fmt.Fprintf(cfg.Progress, "%s %s: %s\n", o.System, point, o.Err)
		}
		out = append(out, o)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// server is one started server process in its own process group.
type server struct {
	cmd    *exec.Cmd
	exited chan struct{}
	pid    int
}

func launch(ctx context.Context, t Target, s Setup, logPath string) (*server, error) {
	cmd, err := t.Command(ctx, s)
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", t.Name(), err)
	}
	sv := &server{cmd: cmd, exited: make(chan struct{}), pid: cmd.Process.Pid}
	go func() { _ = cmd.Wait(); logf.Close(); close(sv.exited) }()
	return sv, nil
}

func crashOnce(ctx context.Context, cfg CrashConfig, point string, n int) (o CrashObservation) {
	o = CrashObservation{System: cfg.Target.Name(), Point: point}
	progress := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "%s %s: %s\n", o.System, point, fmt.Sprintf(format, args...))
	}
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("%s-%d", point, n))
	s := Setup{Dir: dir, Project: filepath.Join(dir, "project"), LLMURL: cfg.LLMURL}
	if err := os.RemoveAll(dir); err != nil { // a reused --work holds the last run's data
		o.Err = err.Error()
		return o
	}
	if err := os.MkdirAll(s.Project, 0o755); err != nil {
		o.Err = err.Error()
		return o
	}
	var err error
	if s.Addr, err = freeAddr(); err != nil {
		o.Err = err.Error()
		return o
	}
	logPath := filepath.Join(dir, "server.log")
	c := newClient("http://"+s.Addr, s.Project)
	if m, ok := cfg.Target.(SessionModeler); ok {
		ref := m.SessionModel()
		c.model = &ref
	}
	defer c.close()
	var orphans []Proc
	defer func() { // whatever happened, nothing we started stays behind
		for _, p := range orphans {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}()
	fail := func(err error) CrashObservation {
		o.Err = fmt.Sprintf("%v (log %s)", err, logPath)
		return o
	}

	sv, err := launch(ctx, cfg.Target, s, logPath)
	if err != nil {
		return fail(err)
	}
	defer func() { stop(sv.cmd, sv.exited) }()
	if err := ready(ctx, c, sv.exited); err != nil {
		return fail(fmt.Errorf("start-up: %w", err))
	}
	id, err := c.createSession(ctx)
	if err != nil {
		return fail(err)
	}
	// Markers are unique per system and point: the fake model holds by
	// marker.
	marker := fmt.Sprintf("[run:hold-stream-%s-%d]", o.System, n)
	if point == MidTool {
		marker = fmt.Sprintf("[run:hold-tool-%s-%d]", o.System, n)
	}
	gate := cfg.Gate(cfg.ToolGate, marker)
	if err := os.Remove(gate); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	if err := c.prompt(ctx, id, marker); err != nil {
		return fail(err)
	}

	// Wait for the crash point.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var callID string
	if point == MidStream {
		if err := cfg.Model.WaitHeld(wctx, marker); err != nil {
			return fail(err)
		}
	} else {
		err := poll(wctx, 50*time.Millisecond, func() (bool, error) {
			if len(gated(descendants(sv.pid), gate)) == 0 {
				return false, nil
			}
			evs, err := c.history(wctx, id)
			if err != nil {
				return false, nil
			}
			callID = readFacts(evs, marker, "", 0).callID
			return callID != "", nil
		})
		if err != nil {
			return fail(fmt.Errorf("the tool never started: %w", err))
		}
		o.ToolStarted = true
	}
	evs, err := c.history(ctx, id)
	if err != nil {
		return fail(err)
	}
	before := readFacts(evs, marker, callID, 0)
	kids := descendants(sv.pid)
	progress("killing pid %d with SIGKILL (%d child processes)", sv.pid, len(kids))

	// kill -9 the server process alone: its children show what it leaves.
	_ = syscall.Kill(sv.pid, syscall.SIGKILL)
	<-sv.exited
	// A child killed through PR_SET_PDEATHSIG or its pipe closing goes
	// within moments; give them a bounded while before counting.
	_ = poll(ctx, 50*time.Millisecond, func() (bool, error) { return len(alive(kids)) == 0, nil }, time.Second)
	orphans = alive(kids)
	o.Orphans = orphans
	if orphans == nil {
		o.Orphans = []Proc{}
	}
	progress("%d orphan processes", len(orphans))
	cfg.Model.Release(marker) // the killed stream is gone; a resumed call gets answered

	// Restart on the same data.
	t0 := time.Now()
	sv2, err := launch(ctx, cfg.Target, s, logPath)
	if err != nil {
		return fail(fmt.Errorf("restart: %w", err))
	}
	defer func() { stop(sv2.cmd, sv2.exited) }()
	if err := ready(ctx, c, sv2.exited); err != nil {
		return fail(fmt.Errorf("restart: %w", err))
	}
	o.RestartSeconds = time.Since(t0).Seconds()
	progress("ready again after %.1fs", o.RestartSeconds)

	// The start-up window: nothing is sent, the gate stays shut.
	facts := func() historyFacts {
		evs, err := c.history(ctx, id)
		if err != nil {
			return historyFacts{}
		}
		return readFacts(evs, marker, callID, before.lastSeq)
	}
	var f historyFacts
	_ = poll(ctx, 100*time.Millisecond, func() (bool, error) {
		f = facts()
		if point == MidTool && len(gated(descendants(sv2.pid), gate)) > 0 {
			o.ToolRerun = true
		}
		return f.replied || f.failedAfter > 0 && (point == MidStream || f.toolOutcome != ""), nil
	}, cfg.StartupWindow)
	o.PromptKept = f.promptKept
	o.ToolSettledAtStartup = o.ToolStarted && f.toolOutcome != ""
	o.TurnFailedAtStartup = f.failedAfter > 0

	// Open the gate (a re-run tool and any orphan finish), then give the
	// interrupted turn a bounded while to finish by itself.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		return fail(err)
	}
	_ = poll(ctx, 100*time.Millisecond, func() (bool, error) {
		f = facts()
		return f.replied || f.failedAfter > 0, nil
	}, 10*time.Second)
	o.TurnResumed, o.TurnFailed = f.replied, f.failedAfter > 0
	settledBeforePrompt := f.toolOutcome != ""
	o.ToolOutcome = f.toolOutcome

	// A new prompt: is the session usable, and does it repair the tool?
	if !o.TurnResumed {
		o.NewPromptSent = true
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.turn(tctx, id, fmt.Sprintf("[run:after-crash-%d]", n))
		cancel()
		o.NewPromptAnswered = err == nil
		if err != nil {
			progress("the new prompt: %v", err)
		}
		f = facts()
		o.ToolOutcome = f.toolOutcome
		o.ToolSettledAfterPrompt = o.ToolStarted && !settledBeforePrompt && f.toolOutcome != ""
		o.TurnFailed = o.TurnFailed || f.failedAfter > 0
	}
	return o
}

// ready waits for health (and the target's model) for at most 2 minutes.
func ready(ctx context.Context, c *client, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return waitHealthy(ctx, c, exited)
}

// poll calls f every interval until it says done, it fails, ctx ends or
// the optional limit passes; it reports why it stopped.
func poll(ctx context.Context, interval time.Duration, f func() (bool, error), limit ...time.Duration) error {
	if len(limit) > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit[0])
		defer cancel()
	}
	for {
		done, err := f()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// prompt admits one prompt carrying marker without waiting for the reply.
func (c *client) prompt(ctx context.Context, id, marker string) error {
	body := map[string]any{"prompt": map[string]string{"text": "Run echo hi with bash " + marker}}
	return c.do(ctx, http.MethodPost, "/api/session/"+id+"/prompt", body, nil)
}

// history reads a session's durable events, a page of 100 at a time (the
// most OpenCode serves).
func (c *client) history(ctx context.Context, id string) ([]historyEvent, error) {
	var all []historyEvent
	after := int64(0)
	for range 100 { // bounded: a crash scenario writes a few dozen events
		var out struct {
			Data    []historyEvent `json:"data"`
			HasMore bool           `json:"hasMore"`
		}
		path := fmt.Sprintf("/api/session/%s/history?limit=100", id)
		if after > 0 {
			path += fmt.Sprintf("&after=%d", after)
		}
		if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
			return all, err
		}
		all = append(all, out.Data...)
		if !out.HasMore || len(out.Data) == 0 {
			return all, nil
		}
		after = out.Data[len(out.Data)-1].Durable.Seq
	}
	return all, errors.New("history: more than 100 pages")
}

// descendants lists the processes under pid (children, theirs, …) from
// /proc, whatever process group or session they moved to.
func descendants(pid int) []Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]Proc{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := procStat(p)
		if !ok || st.state == 'Z' {
			continue
		}
		children[st.ppid] = append(children[st.ppid], Proc{PID: p, PGID: st.pgid, Command: cmdline(p)})
	}
	var out []Proc
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, ch := range children[next] {
			out = append(out, ch)
			queue = append(queue, ch.PID)
		}
	}
	return out
}

// alive keeps the processes that still run (not gone, not zombies).
func alive(ps []Proc) []Proc {
	var out []Proc
	for _, p := range ps {
		if st, ok := procStat(p.PID); ok && st.state != 'Z' && cmdline(p.PID) == p.Command {
			out = append(out, p)
		}
	}
	return out
}

// gated keeps the processes waiting on the tool gate.
func gated(ps []Proc, gate string) []Proc {
	var out []Proc
	for _, p := range ps {
		if strings.Contains(p.Command, gate) {
			out = append(out, p)
		}
	}
	return out
}

type stat struct {
	state      byte
	ppid, pgid int
}

func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || len(f[0]) != 1 {
		return stat{}, false
	}
	return stat{state: f[0][0], ppid: ppid, pgid: pgid}, true
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
