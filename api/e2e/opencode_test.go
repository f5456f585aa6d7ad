package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/title"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// OpenCodeVersion is the opencode-ai release whose own clients (the TUI,
// `opencode attach`, and `opencode run --attach`) these tests drive.
const OpenCodeVersion = "1.18.33"

// opencodeBin finds the opencode binary of the opencode-ai npm package:
// SESSIONRT_OPENCODE_DIR, else <tmp>/sessionrt-opencode (where .ci/run
// installs it), installing it there with npm when missing. It skips, saying
// why, when neither works.
func opencodeBin(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SESSIONRT_OPENCODE_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sessionrt-opencode")
	}
	bin := filepath.Join(dir, "node_modules", "opencode-linux-x64", "bin", "opencode")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skipf("SKIP (loud): opencode-ai@%s is not installed in %s and there is no npm to install it: run npm install --prefix %s opencode-ai@%s", OpenCodeVersion, dir, dir, OpenCodeVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--silent", "opencode-ai@"+OpenCodeVersion).CombinedOutput()
	if err != nil {
		t.Skipf("SKIP (loud): cannot install opencode-ai@%s into %s (offline?): %v\n%s", OpenCodeVersion, dir, err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("SKIP (loud): opencode-ai@%s installed no linux-x64 binary at %s (another platform?)", OpenCodeVersion, bin)
	}
	return bin
}

// The fake model's script, keyed on the conversation: a first turn that
// says a sentence and calls bash, an answer once the tool result is back,
// and a stream that never ends on its own when the prompt says "slow".
const (
	fakeToolCommand = `printf 'tool-%s\n' output-marker`
	fakeToolOutput  = "tool-output-marker"
	fakeAnswer      = "The answer is forty-two."
)

// fakeModel is the fake model's state the failover test watches: the
// prompts with "failover" in them are held open the first time (until the
// member streaming them dies) and answered after.
type fakeModel struct {
	failovers atomic.Int32
	held      chan struct{} // closed when the first failover stream is open
	heldOnce  sync.Once
}

const fakeResumed = "Resumed after the failover."

// fakeOpenAI is an OpenAI-compatible Chat Completions server (streaming).
func fakeOpenAI(t *testing.T) string {
	t.Helper()
	return newFakeModel(t).url
}

type fakeServer struct {
	*fakeModel
	url string
}

func newFakeModel(t *testing.T) fakeServer {
	t.Helper()
	fm := &fakeModel{held: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		user := ""      // every user message: a resumed turn may end with the runtime's restart note
		naming := false // a session title request (serve names sessions), not a turn
		for _, m := range req.Messages {
			if m.Role == "user" {
				user += string(m.Content)
			}
			var text string
			naming = naming || m.Role == "system" && json.Unmarshal(m.Content, &text) == nil && text == title.Instructions
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		send := func(delta map[string]any, finish any) bool {
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return false
			}
			fl.Flush()
			return r.Context().Err() == nil
		}
		switch {
		case naming:
			send(map[string]any{"content": "Fake session title"}, nil)
			send(map[string]any{}, "stop")
		case req.Messages[len(req.Messages)-1].Role == "tool":
			for _, p := range []string{"The answer ", "is forty-", "two."} {
				send(map[string]any{"content": p}, nil)
			}
			send(map[string]any{}, "stop")
		case strings.Contains(user, "failover"):
			if fm.failovers.Add(1) == 1 {
				send(map[string]any{"content": "working on it "}, nil)
				fm.heldOnce.Do(func() { close(fm.held) })
				<-r.Context().Done() // until the member streaming it dies
				return
			}
			send(map[string]any{"content": fakeResumed}, nil)
			send(map[string]any{}, "stop")
		case strings.Contains(user, "slow"):
			for i := 0; i < 6000; i++ {
				if !send(map[string]any{"content": fmt.Sprintf("word%d ", i)}, nil) {
					return
				}
				select {
				case <-r.Context().Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			send(map[string]any{}, "stop")
		default:
			args, _ := json.Marshal(map[string]string{"command": fakeToolCommand, "description": "print the marker"})
			send(map[string]any{"content": "Let me check."}, nil)
			send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
				"function": map[string]any{"name": "bash", "arguments": string(args)}}}}, nil)
			send(map[string]any{}, "tool_calls")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(srv.Close)
	return fakeServer{fm, srv.URL + "/v1"}
}

// serveFake starts sessionrt serve on the fake model.
func serveFake(t *testing.T, bin, model string, args ...string) *server {
	t.Helper()
	return serveEnv(t, bin, t.TempDir(), []string{"OPENAI_BASE_URL=" + model, "OPENAI_API_KEY=fake", "SESSIONRT_MODEL=openai/fake"}, args...)
}

// opencodeEnv is an isolated environment for OpenCode's clients: a fresh
// HOME, no auto-update, an empty models catalog (nothing fetched), and the
// server's token as OPENCODE_SERVER_PASSWORD.
func opencodeEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	models := filepath.Join(home, "models.json")
	if err := os.WriteFile(models, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "OPENCODE") || k == "HOME" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "HOME="+home, "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_MODELS_PATH="+models, "OPENCODE_SERVER_PASSWORD="+token)
}

// `opencode run --attach URL "…"` prints the tool call and the answer and
// exits 0, authenticated by OPENCODE_SERVER_PASSWORD alone.
func TestOpenCodeRunAttach(t *testing.T) {
	t.Parallel() // the OpenCode tests overlap: most of their time is the client starting
	if testing.Short() {
		t.Skip("builds and runs the binary and OpenCode")
	}
	oc := opencodeBin(t)
	srv := serveFake(t, build(t), fakeOpenAI(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	project := t.TempDir()
	cmd := exec.CommandContext(ctx, oc, "run", "--attach", srv.url, "--dir", project, "use the tool")
	cmd.Env = opencodeEnv(t)
	cmd.Dir = project
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String() + stderr.String()
	if err != nil {
		t.Fatalf("opencode run --attach: %v\n%s", err, out)
	}
	for _, want := range []string{fakeToolCommand, fakeToolOutput, "Let me check.", fakeAnswer} {
		if !strings.Contains(out, want) {
			t.Fatalf("opencode run --attach printed no %q:\n%s", want, out)
		}
	}
	t.Logf("opencode run --attach:\n%s", out)
}

// tui is OpenCode's TUI (opencode attach URL) in a tmux server of its own.
type tui struct {
	t    *testing.T
	sock string
}

func startTUI(t *testing.T, oc, url string, args ...string) *tui {
	t.Helper()
	return startTUIWith(t, oc, url, token, args...)
}

// startTUIWith runs opencode attach url with password as
// OPENCODE_SERVER_PASSWORD.
func startTUIWith(t *testing.T, oc, url, password string, args ...string) *tui {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("SKIP (loud): no tmux to run OpenCode's TUI in (apt-get install tmux)")
	}
	u := &tui{t: t, sock: fmt.Sprintf("sessionrt-e2e-%d-%d", os.Getpid(), time.Now().UnixNano())}
	project := t.TempDir()
	tmux := append([]string{"-L", u.sock, "-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "--", oc, "attach", url, "--dir", project}, args...)
	cmd := exec.Command("tmux", tmux...)
	cmd.Env = append(opencodeEnv(t), "OPENCODE_SERVER_PASSWORD="+password)
	cmd.Dir = project
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("TUI screen at the end:\n%s", u.screen())
		}
		// The client must be gone before its HOME (a TempDir) is removed.
		pid, _ := exec.Command("tmux", "-L", u.sock, "display-message", "-p", "#{pane_pid}").Output()
		_ = exec.Command("tmux", "-L", u.sock, "kill-server").Run()
		if p := strings.TrimSpace(string(pid)); p != "" {
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat("/proc/" + p); err != nil {
					break
				}
			}
		}
	})
	return u
}

func (u *tui) screen() string {
	out, _ := exec.Command("tmux", "-L", u.sock, "capture-pane", "-p").Output()
	return string(out)
}

func (u *tui) keys(keys ...string) {
	u.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-L", u.sock, "send-keys"}, keys...)...).CombinedOutput(); err != nil {
		u.t.Fatalf("tmux send-keys %q: %v\n%s", keys, err, out)
	}
}

// shows polls the screen until want shows or limit passes.
func (u *tui) shows(limit time.Duration, want string) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if strings.Contains(u.screen(), want) {
			return true
		}
	}
	return false
}

// waitFor polls the screen until every want shows (progress, not time:
// the limit only bounds a hang).
func (u *tui) waitFor(limit time.Duration, want ...string) string {
	u.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := u.screen()
		missing := ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("the TUI did not show %q within %s; screen:\n%s", missing, limit, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// OpenCode's TUI attached to sessionrt: a typed prompt shows the tool's
// output and the answer; Esc Esc interrupts a stream that would not end.
func TestOpenCodeTUI(t *testing.T) {
	t.Parallel() // the OpenCode tests overlap: most of their time is the client starting
	if testing.Short() {
		t.Skip("builds and runs the binary and OpenCode")
	}
	oc := opencodeBin(t)
	srv := serveFake(t, build(t), fakeOpenAI(t))
	u := startTUI(t, oc, srv.url)
	u.waitFor(90*time.Second, "Ask anything")
	u.keys("-l", "use the tool")
	u.keys("Enter")
	screen := u.waitFor(60*time.Second, fakeToolOutput, fakeAnswer)
	t.Logf("TUI after a prompt:\n%s", screen)

	u.keys("-l", "be slow")
	u.keys("Enter")
	u.waitFor(60*time.Second, "word3 ")
	// The first Esc arms the interrupt for 5 s, the second one sends it; on a
	// loaded machine the window can pass before the TUI draws the hint, so
	// the pair is tried again (each try is one abort at most).
	for try := 1; ; try++ {
		if try > 3 {
			u.t.Fatalf("Esc Esc did not interrupt in 3 tries; screen:\n%s", u.screen())
		}
		u.keys("Escape")
		if !u.shows(10*time.Second, "esc again to interrupt") {
			continue
		}
		u.keys("Escape")
		if u.shows(20*time.Second, "interrupted") {
			break
		}
	}
}

// The TUI attached to member A of a two-member cluster, its session hosted
// on member B: B is SIGKILLed while it streams the turn, the session
// resumes on A, and the TUI shows the answer without help.
func TestOpenCodeTUIAcrossAClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary and OpenCode")
	}
	oc := opencodeBin(t)
	bin := build(t)
	db := testdb.MariaDB(t)
	journal := fmt.Sprintf("mysql://root@%s/%s", db.Addr, db.Name)
	ports := freePorts(t, 2)
	peers := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	model := newFakeModel(t)
	member := func(i int) *server {
		return serveEnv(t, bin, t.TempDir(), []string{"OPENAI_BASE_URL=" + model.url, "OPENAI_API_KEY=fake", "SESSIONRT_MODEL=openai/fake"},
			"--journal", journal, "--cluster-member", fmt.Sprintf("m%d", i), "--cluster-name", "e2e-tui", "--cluster-peers", peers,
			"--cluster-health", fmt.Sprint(ports[i]))
	}
	a, b := member(0), member(1)
	project := t.TempDir()

	// A session created through A whose grain disthash places on B.
	where := func(id string) string {
		out, err := exec.Command(bin, "cluster", "--peers", peers, "--name", "e2e-tui", "--expect", "2", "where", id).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	members, err := exec.Command(bin, "cluster", "--peers", peers, "--name", "e2e-tui", "--expect", "2", "--wait", "30s", "--json", "members").Output()
	if err != nil {
		t.Fatalf("cluster members: %v", err)
	}
	var ms []struct {
		Address string
		Kinds   []string
	}
	if err := json.Unmarshal(members, &ms); err != nil || len(ms) != 2 {
		t.Fatalf("cluster members: %s %v", members, err)
	}
	onB := "" // B's address: the member that pins Location kind location@m1
	for _, m := range ms {
		if slices.Contains(m.Kinds, "location@m1") {
			onB = m.Address
		}
	}
	if onB == "" {
		t.Fatalf("no member hosts location@m1: %s", members)
	}
	sessionID := ""
	for try := 0; try < 40 && sessionID == ""; try++ {
		req, _ := http.NewRequest("POST", a.url+"/session", strings.NewReader("{}"))
		req.SetBasicAuth("opencode", token)
		req.Header.Set("x-opencode-directory", project)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var sess struct{ ID string }
		_ = json.NewDecoder(resp.Body).Decode(&sess)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			time.Sleep(200 * time.Millisecond) // the topology may still be forming
			continue
		}
		if where(sess.ID) == onB {
			sessionID = sess.ID
		}
	}
	if sessionID == "" {
		t.Fatal("no session created through A was placed on B in 40 tries")
	}

	u := startTUI(t, oc, a.url, "--session", sessionID)
	u.waitFor(90*time.Second, "fake OpenAI")
	u.keys("-l", "failover please")
	u.keys("Enter")
	select {
	case <-model.held:
	case <-time.After(60 * time.Second):
		t.Fatalf("B never streamed the turn; screen:\n%s", u.screen())
	}
	// The turn shows on A from the journal (B's live deltas stay on B's bus).
	u.waitFor(30*time.Second, "Build · fake")
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	screen := u.waitFor(120*time.Second, fakeResumed)
	t.Logf("TUI on A after B died mid-turn:\n%s", screen)
}

// A permission that asks, answered from the TUI: the runtime runs in this
// process (apitest: the real node and API handler on a loopback server,
// a scripted model) with a "build" agent whose rules ask for every tool,
// since `sessionrt serve` reads no permission configuration yet (#16).
func TestOpenCodeTUIAnswersAPermission(t *testing.T) {
	t.Parallel() // the OpenCode tests overlap: most of their time is the client starting
	if testing.Short() {
		t.Skip("runs OpenCode")
	}
	oc := opencodeBin(t)
	rt := apitest.Start(t, apitest.Options{
		Agents: map[string]actors.Agent{"build": {Rules: []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Ask}}}},
		Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
			if req.Messages[len(req.Messages)-1].Role == provider.RoleTool {
				return scripted.Turn{Text: fakeAnswer}, nil
			}
			args, _ := json.Marshal(map[string]string{"command": fakeToolCommand, "description": "print the marker"})
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "bash", Args: args}}}, nil
		},
		API: func(c *api.Config) {
			c.Catalog = func(context.Context, string) api.Catalog {
				m := apitest.Model
				return api.Catalog{DefaultAgent: "build", DefaultModel: m, Agents: []api.CatalogAgent{{Name: "build", Mode: "primary"}},
					Providers: []api.CatalogProvider{{ID: m.Provider, Models: []api.CatalogModel{{ID: m.ID, Context: 100000, Output: 4096, Tools: true}}}}}
			}
		},
	})
	u := startTUIWith(t, oc, rt.URL, rt.Token)
	u.waitFor(90*time.Second, "Ask anything")
	u.keys("-l", "use the tool")
	u.keys("Enter")
	u.waitFor(60*time.Second, "Permission required", "Allow once")
	u.keys("Enter") // the first option: allow once
	screen := u.waitFor(60*time.Second, fakeToolOutput, fakeAnswer)
	t.Logf("TUI after allowing the tool once:\n%s", screen)
}
