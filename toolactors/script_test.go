package toolactors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/toolactors/internal/scripttest"
	"github.com/sessionrt/sessionrt/toolactors/managed"
	"github.com/sessionrt/sessionrt/toolactors/permission"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// TestScripts runs the registry's scenario scripts in testdata/ (s50 output
// bounds, s51 managed files, s56 permissions) through the real registry
// actor: real tools on real files in $LOC, the real permission evaluator
// and approval store, real Managed Tool Output Files in $MANAGED (in the
// data directory $DATA). Each call
// prints its one settlement, that is what the model sees; an ask prints the
// pending request instead, and the call waits for a reply. Regenerate with
// go test ./toolactors -run TestScripts -rewrite and read the diff.
//
// Commands besides scripttest's file commands:
//
//	registry [managed=unwritable] [project=p]   (re)start the registry; approvals are kept
//	rules [agent=plan]           one rule a line: action effect resource (`bash allow git *`)
//	bash id=c1                   the input is the command
//	read id=c1 path=p [offset=n] [limit=n]
//	call id=c1 tool=name         the input is the raw JSON input
//	reply id=c1 answer=once|always|reject|…   the input, if any, is the feedback
//	cancel id=c1                 interrupt the call, as a request answered once it stopped
//	approvals                    the saved approvals of the project
//	managed                      the files in $MANAGED, each with its size
//	logs                         the operator diagnostics logged since the last logs
//
// A call's managed file is named in the output as tool_1, tool_2… in the
// order they appear. A call with excerpt=N prints only the first and the
// last N lines of the text and the truncation marker.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := newScriptEnv(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return e.handle(t, td)
		})
	})
}

type scriptEnv struct {
	t         *testing.T
	names     scripttest.Names
	sys       *actor.ActorSystem
	reg       *actor.PID
	store     *managed.Store
	approvals *permission.MemoryApprovals
	logs      *syncBuffer
	logsSeen  int
	logger    *slog.Logger
	rules     []permission.Rule
	agent     string
	client    *scriptClient
	pending   map[string]chan *ToolSettled
	aliases   int
	// projectName keys saved approvals; "" is the registry's default, $LOC.
	projectName string

	mu      sync.Mutex
	started map[string]bool // bash calls whose process started
}

func newScriptEnv(t *testing.T) *scriptEnv {
	e := &scriptEnv{
		t: t, approvals: &permission.MemoryApprovals{}, logs: &syncBuffer{},
		rules:   []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Allow}},
		client:  &scriptClient{asks: make(chan permission.Request, 8), replies: map[string]chan permission.Reply{}},
		pending: map[string]chan *ToolSettled{}, started: map[string]bool{},
	}
	// Operator diagnostics without their time, so a script can show them.
	e.logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	e.names.Add("$LOC", scripttest.Dir(t))
	e.names.Add("$OUT", scripttest.Dir(t))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.sys = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	t.Cleanup(func() {
		if e.reg != nil {
			_ = e.sys.Root.StopFuture(e.reg).Wait()
		}
	})
	return e
}

func (e *scriptEnv) handle(t *testing.T, td *datadriven.TestData) string {
	if out, ok := scripttest.Files(t, td, &e.names); ok {
		return out
	}
	switch td.Cmd {
	case "registry":
		e.start(t, td)
		return ""
	case "rules":
		e.rules = nil
		e.agent = ""
		td.MaybeScanArgs(t, "agent", &e.agent)
		for _, l := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.SplitN(strings.TrimSpace(l), " ", 3)
			if len(f) != 3 {
				if l != "" {
					t.Fatalf("%s: rule %q: want action effect resource", td.Pos, l)
				}
				continue
			}
			e.rules = append(e.rules, permission.Rule{Action: f[0], Effect: permission.Effect(f[1]), Resource: f[2]})
		}
		return ""
	case "bash", "read", "call":
		e.ensureStarted(t)
		out := e.call(t, td)
		if td.HasArg("excerpt") {
			var n int
			td.ScanArgs(t, "excerpt", &n)
			out = scripttest.Excerpt(out, n)
		}
		return out
	case "reply":
		id := e.id(t, td)
		var answer string
		td.ScanArgs(t, "answer", &answer)
		replies := e.client.replyTo(id)
		if replies == nil {
			t.Fatalf("%s: %s has no pending ask", td.Pos, id)
		}
		replies <- permission.Reply{Answer: permission.Answer(answer), Feedback: strings.TrimSpace(td.Input)}
		return e.await(t, id)
	case "cancel":
		id := e.id(t, td)
		res, err := e.sys.Root.RequestFuture(e.reg, &CancelTool{SessionID: "s1", CallID: id}, 30*time.Second).Result()
		if err != nil {
			t.Fatalf("%s: cancel: %v", td.Pos, err)
		}
		out := fmt.Sprintf("cancelled: %d call stopped\n", res.(*CancelAck).Stopped)
		if _, ok := e.pending[id]; ok {
			out += e.await(t, id)
		}
		return out
	case "approvals":
		saved, err := e.approvals.Approvals(context.Background(), e.project())
		if err != nil {
			t.Fatal(err)
		}
		if len(saved) == 0 {
			return "(none)\n"
		}
		var b strings.Builder
		for _, r := range saved {
			fmt.Fprintf(&b, "%s %s %s\n", r.Action, r.Effect, r.Resource)
		}
		return b.String()
	case "managed":
		entries, err := os.ReadDir(e.names.Dir("$MANAGED"))
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return "(no directory)\n"
		}
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, en := range entries {
			e.alias(en.Name())
			content, err := os.ReadFile(filepath.Join(e.names.Dir("$MANAGED"), en.Name()))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s (%d lines, %d bytes)\n", e.names.Normalize(en.Name()), strings.Count(string(content), "\n"), len(content))
		}
		if b.Len() == 0 {
			return "(empty)\n"
		}
		return b.String()
	case "logs":
		all := e.logs.String()
		out := all[e.logsSeen:]
		e.logsSeen = len(all)
		if out == "" {
			return "(none)\n"
		}
		return e.names.Normalize(out)
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

// start (re)starts the registry. A managed=unwritable store is one whose
// directory cannot be created: its parent is a regular file.
func (e *scriptEnv) start(t *testing.T, td *datadriven.TestData) {
	if e.reg != nil {
		if err := e.sys.Root.StopFuture(e.reg).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	dir := e.names.Dir("$MANAGED")
	if dir == "" {
		data := scripttest.Dir(t)
		e.names.Add("$DATA", data)
		dir = filepath.Join(data, "tool-output")
		if td != nil && td.HasArg("managed") {
			var how string
			td.ScanArgs(t, "managed", &how)
			if how != "unwritable" {
				t.Fatalf("%s: managed=%s: only unwritable", td.Pos, how)
			}
			blocker := filepath.Join(data, "a-file")
			if err := os.WriteFile(blocker, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			dir = filepath.Join(blocker, "tool-output")
		}
		// The marker names the file, and its length comes out of the preview's
		// byte budget: a directory of one length on every machine keeps the
		// previews byte for byte the same.
		const managedDirLen = 160
		if pad := managedDirLen - len(dir) - 1; pad > 0 {
			dir += "-" + strings.Repeat("x", pad)
		} else {
			t.Fatalf("temporary directory %s is over %d bytes", dir, managedDirLen)
		}
		e.names.Add("$MANAGED", dir)
	} else if td != nil && td.HasArg("managed") {
		t.Fatalf("%s: the managed directory is chosen by the first registry command", td.Pos)
	}
	var err error
	if e.store, err = managed.New(managed.Config{Dir: dir, Logger: e.logger}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Dir: e.names.Dir("$LOC"), Output: e.store, Logger: e.logger, Approvals: e.approvals,
		Tools: tools.Config{BashKillGrace: 500 * time.Millisecond, OnBashStart: func(id string, _ int) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.started[id] = true
		}},
	}
	if td != nil {
		td.MaybeScanArgs(t, "project", &cfg.Project)
	}
	props, err := Props(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.reg = e.sys.Root.Spawn(props)
	e.projectName = cfg.Project
}

func (e *scriptEnv) ensureStarted(t *testing.T) {
	if e.reg == nil {
		e.start(t, nil)
	}
}

func (e *scriptEnv) project() string {
	if e.projectName != "" {
		return e.projectName
	}
	return e.names.Dir("$LOC")
}

func (e *scriptEnv) id(t *testing.T, td *datadriven.TestData) string {
	var id string
	td.ScanArgs(t, "id", &id)
	return id
}

// call sends one ExecuteTool and waits for its settlement or its ask.
func (e *scriptEnv) call(t *testing.T, td *datadriven.TestData) string {
	id := e.id(t, td)
	tool := td.Cmd
	var input any
	switch td.Cmd {
	case "bash":
		input = map[string]any{"command": e.names.Expand(strings.TrimSpace(td.Input))}
	case "read":
		in := map[string]any{}
		var p string
		td.ScanArgs(t, "path", &p)
		in["path"] = e.names.Expand(p)
		for _, k := range []string{"offset", "limit"} {
			if td.HasArg(k) {
				var v int
				td.ScanArgs(t, k, &v)
				in[k] = v
			}
		}
		input = in
	case "call":
		td.ScanArgs(t, "tool", &tool)
		input = json.RawMessage(e.names.Expand(td.Input))
	}
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	m := &ExecuteTool{SessionID: "s1", AssistantMessageID: "a1", CallID: id, Tool: tool, Input: raw,
		Agent: e.agent, Rules: e.rules, Asker: e.client}
	ch := make(chan *ToolSettled, 1)
	e.pending[id] = ch
	go func() {
		res, err := e.sys.Root.RequestFuture(e.reg, m, 60*time.Second).Result()
		if err != nil {
			t.Errorf("call %s: %v", id, err)
			ch <- nil
			return
		}
		ch <- res.(*ToolSettled)
	}()
	return e.await(t, id)
}

// await waits, bounded, for the call's settlement or for an ask from any
// call; an ask leaves the call pending.
func (e *scriptEnv) await(t *testing.T, id string) string {
	select {
	case s := <-e.pending[id]:
		delete(e.pending, id)
		if s == nil {
			t.FailNow()
		}
		return e.settlement(t, s)
	case r := <-e.client.asks:
		agent := ""
		if r.Agent != DefaultAgent {
			agent = " (agent " + r.Agent + ")"
		}
		return e.names.Normalize(fmt.Sprintf("%s asks%s: %s on %s; always would save %s; %q\n",
			r.CallID, agent, r.Action, list(r.Resources), list(r.Always), r.Title))
	case <-time.After(60 * time.Second):
		t.Fatalf("call %s neither settled nor asked within 60 s", id)
	}
	return ""
}

func list(s []string) string { return "[" + strings.Join(s, ", ") + "]" }

func (e *scriptEnv) settlement(t *testing.T, s *ToolSettled) string {
	if s.CallID == "" || (s.Output == nil) == (s.Error == nil) {
		t.Fatalf("malformed settlement %+v", s)
	}
	var b strings.Builder
	agent := ""
	if s.Agent != DefaultAgent {
		agent = " (agent " + s.Agent + ")"
	}
	if s.Error != nil {
		fmt.Fprintf(&b, "%s%s: error %s", s.CallID, agent, s.Error.Kind)
		if s.Error.Field != "" {
			fmt.Fprintf(&b, " field=%s", s.Error.Field)
		}
		if s.Error.Feedback != "" {
			fmt.Fprintf(&b, " feedback=%q", s.Error.Feedback)
		}
		fmt.Fprintf(&b, "\n%s\n", s.Error.Message)
		if s.Tool == "bash" {
			e.mu.Lock()
			started := e.started[s.CallID]
			e.mu.Unlock()
			if started {
				b.WriteString("(its process had started)\n")
			} else {
				b.WriteString("(no process started)\n")
			}
		}
		return e.names.Normalize(b.String())
	}
	o := s.Output
	fmt.Fprintf(&b, "%s%s: ok", s.CallID, agent)
	if o.Truncated {
		e.alias(filepath.Base(o.ManagedPath))
		fmt.Fprintf(&b, ", truncated to %d lines, %d bytes", strings.Count(o.Text, "\n"), len(o.Text))
		if o.ManagedPath != "" {
			fmt.Fprintf(&b, "; complete text in %s", o.ManagedPath)
			if !e.store.Owns(o.ManagedPath) {
				b.WriteString(" (NOT A MANAGED FILE)")
			}
		}
		if o.Lossy {
			b.WriteString("; lossy")
		}
	} else if o.ManagedPath != "" || o.Lossy {
		fmt.Fprintf(&b, "; NOT TRUNCATED BUT managed=%q lossy=%v", o.ManagedPath, o.Lossy)
	}
	b.WriteString("\n")
	e.aliasAll(o.Text)
	b.WriteString(o.Text)
	if o.Text != "" && !strings.HasSuffix(o.Text, "\n") {
		b.WriteString("\n(no final newline)\n")
	}
	return e.names.Normalize(b.String())
}

var managedName = regexp.MustCompile(managed.Prefix + `[0-9a-z]+_[0-9a-f]{16}`)

// alias names a managed file tool_N, N in order of appearance.
func (e *scriptEnv) alias(name string) {
	if !managedName.MatchString(name) || e.names.Normalize(name) != name {
		return
	}
	e.aliases++
	e.names.Add(fmt.Sprintf("%s%d", managed.Prefix, e.aliases), name)
}

func (e *scriptEnv) aliasAll(text string) {
	found := managedName.FindAllString(text, -1)
	sort.Strings(found)
	for _, n := range found {
		e.alias(n)
	}
}

// scriptClient answers asks as the script says: each ask waits for the
// script's reply command for its call.
type scriptClient struct {
	asks    chan permission.Request
	mu      sync.Mutex
	replies map[string]chan permission.Reply
}

func (c *scriptClient) Ask(ctx context.Context, r permission.Request) (permission.Reply, error) {
	ch := make(chan permission.Reply, 1)
	c.mu.Lock()
	c.replies[r.CallID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.replies, r.CallID)
		c.mu.Unlock()
	}()
	c.asks <- r
	select {
	case rep := <-ch:
		return rep, nil
	case <-ctx.Done():
		return permission.Reply{}, ctx.Err()
	}
}

func (c *scriptClient) replyTo(id string) chan permission.Reply {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replies[id]
}
