package toolactors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/toolactors/managed"
	"github.com/sessionrt/sessionrt/toolactors/permission"
	"github.com/sessionrt/sessionrt/toolactors/proc"
	"github.com/sessionrt/sessionrt/toolactors/schema"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	t      *testing.T
	sys    *actor.ActorSystem
	reg    *actor.PID
	dir    string
	store  *managed.Store
	logs   *syncBuffer
	pids   chan int
	config Config
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, logs: &syncBuffer{}, pids: make(chan int, 16)}
	logger := slog.New(slog.NewTextHandler(h.logs, nil))
	h.store, err = managed.New(managed.Config{Dir: filepath.Join(t.TempDir(), "tool-output"), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	h.config = Config{
		Dir: dir, Output: h.store, Logger: logger, Approvals: &permission.MemoryApprovals{},
		Tools: tools.Config{OnBashStart: func(_ string, pid int) { h.pids <- pid }, BashKillGrace: 500 * time.Millisecond},
	}
	if mutate != nil {
		mutate(&h.config)
	}
	props, err := Props(h.config)
	if err != nil {
		t.Fatal(err)
	}
	h.sys = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
	h.reg = h.sys.Root.Spawn(props)
	t.Cleanup(func() { h.sys.Root.Stop(h.reg) })
	return h
}

var allowAll = []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Allow}}

func (h *harness) call(id, tool string, input any) *ExecuteTool {
	raw, err := json.Marshal(input)
	if err != nil {
		h.t.Fatal(err)
	}
	return &ExecuteTool{SessionID: "s1", AssistantMessageID: "a1", CallID: id, Tool: tool, Input: raw, Rules: allowAll}
}

// execAsync sends a call and returns a channel with its settlement.
func (h *harness) execAsync(m *ExecuteTool) <-chan *ToolSettled {
	ch := make(chan *ToolSettled, 1)
	go func() {
		res, err := h.sys.Root.RequestFuture(h.reg, m, 60*time.Second).Result()
		if err != nil {
			h.t.Errorf("call %s: %v", m.CallID, err)
			ch <- nil
			return
		}
		ch <- res.(*ToolSettled)
	}()
	return ch
}

func (h *harness) exec(m *ExecuteTool) *ToolSettled {
	h.t.Helper()
	s := <-h.execAsync(m)
	if s == nil {
		h.t.FailNow()
	}
	if s.CallID != m.CallID || s.SessionID != m.SessionID || (s.Output == nil) == (s.Error == nil) {
		h.t.Fatalf("malformed settlement %+v", s)
	}
	return s
}

func (h *harness) ok(m *ExecuteTool) *ToolOutput {
	h.t.Helper()
	s := h.exec(m)
	if s.Error != nil {
		h.t.Fatalf("call %s failed: %+v", m.CallID, s.Error)
	}
	return s.Output
}

func (h *harness) fails(m *ExecuteTool, kind ErrorKind) *ToolError {
	h.t.Helper()
	s := h.exec(m)
	if s.Error == nil || s.Error.Kind != kind {
		h.t.Fatalf("call %s: got %+v / %+v, want error %s", m.CallID, s.Output, s.Error, kind)
	}
	return s.Error
}

// TestTruncationNoteSaysWhatTheFileHoldsAfterTheCapDropped: bash's in-memory cap drops
// the middle of an output before the text is saved, so the note must not tell the model
// that the file holds "the complete output" (it did), and must say how much was dropped.
func TestTruncationNoteSaysWhatTheFileHoldsAfterTheCapDropped(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Tools.BashOutputCap = 200_000 })
	out := h.ok(h.call("c1", "bash", map[string]any{"command": "seq 1 300000"})) // 1,988,895 bytes
	const dropped = 1_988_895 - 200_000
	if !out.Truncated || out.ManagedPath == "" {
		t.Fatalf("output not bounded: %+v", out)
	}
	if strings.Contains(out.Text, "complete output") {
		t.Fatalf("the note calls the saved file complete although %d bytes were dropped before: %q", dropped, noteOf(out.Text))
	}
	if want := fmt.Sprintf("%s holds the output except %d bytes dropped", out.ManagedPath, dropped); !strings.Contains(out.Text, want) {
		t.Fatalf("note %q does not say %q", noteOf(out.Text), want)
	}
	full, err := os.ReadFile(out.ManagedPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(full), fmt.Sprintf("[%d bytes of output dropped", dropped)) {
		t.Fatal("the saved file does not mark where the output was dropped")
	}
}

// noteOf is the bounding marker line of a preview.
func noteOf(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "... [") {
			return l
		}
	}
	return ""
}

// structuredTool is a real tool that returns only a structured value.
type structuredTool struct{ n int }

func (s structuredTool) Definition() tools.Definition {
	return tools.Definition{Name: "numbers", Action: "numbers", Input: schema.Object(nil, map[string]*schema.Schema{})}
}

func (s structuredTool) Run(context.Context, tools.Call) (tools.Result, error) {
	v := make([]int, s.n)
	for i := range v {
		v[i] = i
	}
	return tools.Result{Structured: map[string]any{"numbers": v}}, nil
}

func TestStructuredOnlyResultKeepsValueAndBoundsPreview(t *testing.T) {
	h := newHarness(t, nil)
	h.sys.Root.Send(h.reg, &Contribute{Scope: "extra", Tools: []tools.Tool{structuredTool{n: 20000}}})
	out := h.ok(h.call("c1", "numbers", map[string]any{}))
	var v struct{ Numbers []int }
	if err := json.Unmarshal(out.Structured, &v); err != nil || len(v.Numbers) != 20000 {
		t.Fatalf("structured value changed: %d numbers, %v", len(v.Numbers), err)
	}
	if !out.Truncated || len(out.Text) > 50*1024 || !strings.HasPrefix(out.Text, `{"numbers":[0,1,2`) {
		t.Fatalf("preview: truncated=%v len=%d", out.Truncated, len(out.Text))
	}
}

// panicTool panics inside Run.
type panicTool struct{}

func (panicTool) Definition() tools.Definition {
	return tools.Definition{Name: "boom", Action: "boom", Input: schema.Object(nil, map[string]*schema.Schema{})}
}

func (panicTool) Run(context.Context, tools.Call) (tools.Result, error) { panic("kaboom") }

func TestToolErrorsAreTypedSettlements(t *testing.T) {
	h := newHarness(t, nil)
	h.sys.Root.Send(h.reg, &Contribute{Scope: "extra", Tools: []tools.Tool{panicTool{}}})

	e := h.fails(h.call("c1", "nope", map[string]any{}), ErrorUnknownTool)
	if !strings.Contains(e.Message, `"nope"`) || !strings.Contains(e.Message, "bash") {
		t.Fatalf("unknown tool message %q", e.Message)
	}
	e = h.fails(h.call("c2", "bash", map[string]any{"command": []int{1}}), ErrorInvalidInput)
	if e.Field != "command" {
		t.Fatalf("field %q", e.Field)
	}
	select {
	case pid := <-h.pids:
		t.Fatalf("bash started (pid %d) for invalid input", pid)
	default:
	}
	e = h.fails(h.call("c3", "boom", map[string]any{}), ErrorPanicked)
	if !strings.Contains(e.Message, "kaboom") {
		t.Fatalf("panic message %q", e.Message)
	}
	e = h.fails(h.call("c4", "read", map[string]any{"path": "../etc/passwd"}), ErrorFailed)
	if !strings.Contains(e.Message, "../etc/passwd") || !strings.Contains(e.Message, "escapes the Location") {
		t.Fatalf("escape message %q", e.Message)
	}
	// The registry survived all of it.
	h.ok(h.call("c5", "bash", map[string]any{"command": "true"}))
	<-h.pids
}

func TestCancelInterruptsAndKillsProcessGroup(t *testing.T) {
	h := newHarness(t, nil)
	pending := h.execAsync(h.call("c1", "bash", map[string]any{"command": "sleep 300 & echo $! > bg.tmp; mv bg.tmp bg; wait"}))
	leader := <-h.pids
	waitFile(t, filepath.Join(h.dir, "bg"))
	h.sys.Root.Send(h.reg, &CancelTool{SessionID: "s1", CallID: "c1"})
	s := <-pending
	if s == nil || s.Error == nil || s.Error.Kind != ErrorInterrupted || s.Error.Message != InterruptedMessage {
		t.Fatalf("settlement %+v", s)
	}
	if !proc.Gone(leader, 5*time.Second) {
		t.Fatalf("leader %d alive after cancel", leader)
	}
	assertFileGone(t, filepath.Join(h.dir, "bg"))
}

func TestKillingBashToolActorKillsItsProcessGroup(t *testing.T) {
	h := newHarness(t, nil)
	pending := h.execAsync(h.call("c1", "bash", map[string]any{"command": "sleep 300 & echo $! > bg.tmp; mv bg.tmp bg; wait"}))
	leader := <-h.pids
	waitFile(t, filepath.Join(h.dir, "bg"))
	res, err := h.sys.Root.RequestFuture(h.reg, &ListCalls{}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := res.(*Calls).Calls
	if len(calls) != 1 || calls[0].CallID != "c1" {
		t.Fatalf("running calls %+v", calls)
	}
	// Kill the tool actor itself, not through the registry.
	if err := h.sys.Root.StopFuture(calls[0].Actor).Wait(); err != nil {
		t.Fatal(err)
	}
	// Stopped means the group is already gone: no wait needed for the leader.
	if proc.Alive(leader) {
		t.Fatalf("leader %d alive after its actor stopped", leader)
	}
	assertFileGone(t, filepath.Join(h.dir, "bg"))
	if s := <-pending; s == nil || s.Error == nil || s.Error.Kind != ErrorInterrupted {
		t.Fatalf("settlement %+v", s)
	}
}

func TestCancelAllCallsOfASession(t *testing.T) {
	h := newHarness(t, nil)
	a := h.execAsync(h.call("c1", "bash", map[string]any{"command": "sleep 300"}))
	b := h.execAsync(h.call("c2", "bash", map[string]any{"command": "sleep 300"}))
	other := h.call("c3", "bash", map[string]any{"command": "sleep 300"})
	other.SessionID = "s2"
	c := h.execAsync(other)
	pids := []int{<-h.pids, <-h.pids, <-h.pids}
	// As a request, the cancel is answered once both calls have stopped.
	ack, err := h.sys.Root.RequestFuture(h.reg, &CancelTool{SessionID: "s1"}, 30*time.Second).Result()
	if err != nil || ack.(*CancelAck).Stopped != 2 {
		t.Fatalf("ack %+v %v", ack, err)
	}
	for _, ch := range []<-chan *ToolSettled{a, b} {
		if s := <-ch; s == nil || s.Error == nil || s.Error.Kind != ErrorInterrupted {
			t.Fatalf("settlement %+v", s)
		}
	}
	select {
	case s := <-c:
		t.Fatalf("other session's call settled: %+v", s)
	default:
	}
	h.sys.Root.Send(h.reg, &CancelTool{SessionID: "s2"})
	<-c
	ack, err = h.sys.Root.RequestFuture(h.reg, &CancelTool{SessionID: "s3"}, 5*time.Second).Result()
	if err != nil || ack.(*CancelAck).Stopped != 0 {
		t.Fatalf("ack for no calls %+v %v", ack, err)
	}
	for _, p := range pids {
		if !proc.Gone(p, 5*time.Second) {
			t.Fatalf("pid %d alive", p)
		}
	}
}

func TestCatalogHidesDeniedToolsAndFollowsScopes(t *testing.T) {
	h := newHarness(t, nil)
	get := func(rules []permission.Rule) *Catalog {
		res, err := h.sys.Root.RequestFuture(h.reg, &CatalogRequest{Rules: rules}, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*Catalog)
	}
	names := func(c *Catalog) string {
		var n []string
		for _, d := range c.Tools {
			n = append(n, d.Name)
		}
		return strings.Join(n, ",")
	}
	c0 := get(nil)
	if names(c0) != "read,bash,apply_patch,glob,grep" {
		t.Fatalf("catalog %s", names(c0))
	}
	raw, err := json.Marshal(c0.Tools[1].Input)
	if err != nil || !strings.Contains(string(raw), `"required":["command"]`) {
		t.Fatalf("bash schema %s", raw)
	}
	if n := names(get([]permission.Rule{{Action: "bash", Resource: "*", Effect: permission.Deny}, {Action: "edit", Resource: "*", Effect: permission.Deny}})); n != "read,glob,grep" {
		t.Fatalf("denied tools advertised: %s", n)
	}
	h.sys.Root.Send(h.reg, &Contribute{Scope: "plugin", Tools: []tools.Tool{structuredTool{n: 1}}})
	c1 := get(nil)
	if names(c1) != "read,bash,apply_patch,glob,grep,numbers" || c1.Revision <= c0.Revision {
		t.Fatalf("after contribute: %s rev %d", names(c1), c1.Revision)
	}
	h.sys.Root.Send(h.reg, &CloseScope{Scope: "plugin"})
	if c2 := get(nil); names(c2) != names(c0) || c2.Revision <= c1.Revision {
		t.Fatalf("after close: %s", names(c2))
	}
	h.fails(h.call("c1", "numbers", map[string]any{}), ErrorUnknownTool)
}

func TestCallForAnotherLocationIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	m := h.call("c1", "bash", map[string]any{"command": "true"})
	m.Dir = t.TempDir()
	h.fails(m, ErrorFailed)
}

func assertFileGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !proc.Gone(pid, 5*time.Second) {
		t.Fatalf("process %d of the group survived", pid)
	}
}

// TestServerSIGKILLKillsToolProcesses re-executes this test binary as a "server" that
// runs a long bash tool, SIGKILLs it, and checks that the tool's processes die too.
func TestServerSIGKILLKillsToolProcesses(t *testing.T) {
	if dir := os.Getenv("SESSIONRT_TOOLACTORS_SERVER_DIR"); dir != "" {
		runChildServer(t, dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerSIGKILLKillsToolProcesses$", "-test.v")
	cmd.Env = append(os.Environ(), "SESSIONRT_TOOLACTORS_SERVER_DIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	leader := waitPID(t, filepath.Join(dir, "leader"), cmd)
	bg := waitPID(t, filepath.Join(dir, "bg"), cmd)
	if !proc.Alive(leader) || !proc.Alive(bg) {
		t.Fatal("tool processes not running")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !proc.Gone(leader, 10*time.Second) {
		t.Fatalf("tool leader %d outlived the SIGKILLed server", leader)
	}
	if !proc.Gone(bg, 10*time.Second) {
		t.Fatalf("background tool process %d outlived the SIGKILLed server", bg)
	}
}

func runChildServer(t *testing.T, dir string) {
	store, err := managed.New(managed.Config{Dir: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatal(err)
	}
	props, err := Props(Config{Dir: dir, Output: store, Tools: tools.Config{OnBashStart: func(_ string, pid int) {
		_ = os.WriteFile(filepath.Join(dir, "leader.tmp"), []byte(strconv.Itoa(pid)+"\n"), 0o644)
		_ = os.Rename(filepath.Join(dir, "leader.tmp"), filepath.Join(dir, "leader"))
	}}})
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem()
	reg := sys.Root.Spawn(props)
	raw, _ := json.Marshal(map[string]any{"command": "sleep 300 & echo $! > bg.tmp; mv bg.tmp bg; wait"})
	sys.Root.Send(reg, &ExecuteTool{SessionID: "s", CallID: "c", Tool: "bash", Input: raw, Rules: allowAll, ReplyTo: sys.NewLocalPID("nobody")})
	select {} // until SIGKILL
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

func waitPID(t *testing.T, path string, cmd *exec.Cmd) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	t.Fatalf("child server wrote no %s", path)
	return 0
}

func TestInvalidPermissionRuleFailsTheCallNamingIt(t *testing.T) {
	h := newHarness(t, nil)
	m := h.call("c1", "bash", map[string]any{"command": "true"})
	m.Rules = []permission.Rule{{Action: "bash", Resource: "*", Effect: "sometimes"}}
	e := h.fails(m, ErrorFailed)
	if !strings.Contains(e.Message, "sometimes") || !strings.Contains(e.Message, "rule 0") {
		t.Fatalf("message %q", e.Message)
	}
	select {
	case pid := <-h.pids:
		t.Fatalf("bash ran (pid %d) under an invalid rule", pid)
	default:
	}
}

// lateSuccessTool succeeds only after its call is cancelled, like a tool finishing at
// the very moment an interrupt arrives.
type lateSuccessTool struct{ started chan struct{} }

func (lateSuccessTool) Definition() tools.Definition {
	return tools.Definition{Name: "late", Action: "late", Input: schema.Object(nil, map[string]*schema.Schema{})}
}

func (l lateSuccessTool) Run(ctx context.Context, _ tools.Call) (tools.Result, error) {
	close(l.started)
	<-ctx.Done()
	return tools.Result{Text: strings.Repeat("done\n", 5000)}, nil
}

func TestSuccessAtCancelIsBoundedAndSettledAsSuccess(t *testing.T) {
	h := newHarness(t, nil)
	tool := lateSuccessTool{started: make(chan struct{})}
	h.sys.Root.Send(h.reg, &Contribute{Scope: "extra", Tools: []tools.Tool{tool}})
	pending := h.execAsync(h.call("c1", "late", map[string]any{}))
	<-tool.started
	h.sys.Root.Send(h.reg, &CancelTool{SessionID: "s1", CallID: "c1"})
	s := <-pending
	if s == nil || s.Error != nil || !s.Output.Truncated || s.Output.ManagedPath == "" {
		t.Fatalf("a success completing at cancel must settle bounded: %+v", s)
	}
	if n := strings.Count(s.Output.Text, "\n"); n > 2000 {
		t.Fatalf("raw oversized success published: %d lines", n)
	}
}

func TestDuplicateCallWhileRunningRunsOnce(t *testing.T) {
	h := newHarness(t, nil)
	settled := make(chan *ToolSettled, 4)
	probe := h.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(*ToolSettled); ok {
			settled <- s
		}
	}))
	m := h.call("c1", "bash", map[string]any{"command": "sleep 300"})
	m.ReplyTo = probe
	h.sys.Root.Send(h.reg, m)
	<-h.pids
	h.sys.Root.Send(h.reg, m) // a retried delivery
	res, err := h.sys.Root.RequestFuture(h.reg, &ListCalls{}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.(*Calls).Calls); n != 1 {
		t.Fatalf("%d running calls, want 1", n)
	}
	select {
	case pid := <-h.pids:
		t.Fatalf("the duplicate started a second process %d", pid)
	default:
	}
	if _, err := h.sys.Root.RequestFuture(h.reg, &CancelTool{SessionID: "s1", CallID: "c1"}, 30*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	if s := <-settled; s.Error == nil || s.Error.Kind != ErrorInterrupted {
		t.Fatalf("settlement %+v", s)
	}
	// Everything sent to the probe before this round trip has arrived.
	if _, err := h.sys.Root.RequestFuture(h.reg, &ListCalls{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-settled:
		t.Fatalf("second settlement %+v", s)
	default:
	}
}
