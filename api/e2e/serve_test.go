// Package e2e drives a real `sessionrt serve` subprocess over HTTP: the Go
// client, the CLI binary and OpenCode's SDK against the offline demo model.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
)

const token = "e2e-token"

func moduleRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var (
	buildOnce sync.Once
	binDir    string
	binErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// build compiles the sessionrt binary once for the package's tests.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "sessionrt-e2e-"); binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "sessionrt"), ".")
		cmd.Dir = moduleRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "sessionrt")
}

type server struct {
	cmd  *exec.Cmd
	url  string
	data string
}

// env is the subprocess environment: the test token and the offline demo
// model whatever the machine has configured.
func env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "SESSIONRT_CATALOG", "SESSIONRT_TOKEN", "SESSIONRT_MODEL", "SESSIONRT_SERVER":
			continue
		}
		out = append(out, kv)
	}
	return append(append(out, "SESSIONRT_TOKEN="+token, "SESSIONRT_MODEL=scripted/demo"), extra...)
}

// serve starts `sessionrt serve` on a free loopback port, with args after
// its own, and waits for its "serving" line.
func serve(t *testing.T, bin, data string, args ...string) *server {
	t.Helper()
	return serveEnv(t, bin, data, nil, args...)
}

// serveEnv is serve with extra environment variables (later ones win).
func serveEnv(t *testing.T, bin, data string, extraEnv []string, args ...string) *server {
	t.Helper()
	return serveWith(t, bin, data, extraEnv, io.Discard, args...)
}

// serveWith is serveEnv writing the server's log (stderr) to stderr.
func serveWith(t *testing.T, bin, data string, extraEnv []string, stderr io.Writer, args ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--data", data, "serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = env(extraEnv...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, data: data}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "serving "); ok {
				u, _, _ := strings.Cut(rest, " ")
				found <- u
			}
		}
	}()
	select {
	case s.url = <-found:
	case <-time.After(60 * time.Second):
		t.Fatal("sessionrt serve printed no serving line within 60 s")
	}
	return s
}

func TestServeAnswersTheClientTheCLIAndTheSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := build(t)
	srv := serve(t, bin, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := client.New(client.Config{BaseURL: srv.url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListSessions(ctx, client.ListOptions{}); errors.Is(err, client.ErrNotFound) {
		t.Skip("sessionrt serve does not mount api.New yet (cli/serve_api.go)")
	} else if err != nil {
		t.Fatal(err)
	}
	anon, _ := client.New(client.Config{BaseURL: srv.url})
	if _, err := anon.ListSessions(ctx, client.ListOptions{}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("without the token: %v, want 401", err)
	}

	// The Go client: create, prompt, wait, read the answer and the events.
	loc := t.TempDir()
	// The SDK drive reads this file back through /api/fs (serve's own file routes).
	if err := os.WriteFile(filepath.Join(loc, "hello.txt"), []byte("hello from a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: loc}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "hello"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Messages(ctx, s.ID, client.MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(msgs.Data); n < 2 || msgs.Data[n-1].Type != "assistant" || len(msgs.Data[n-1].Content) == 0 {
		t.Fatalf("no answer from the demo model: %+v", msgs.Data)
	}
	head, err := c.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(1); want <= head.LastSeq; want++ {
		ev, err := st.Next()
		if err == nil && ev.Event.Durable == nil && ev.ID == "" && strings.HasPrefix(ev.Event.Type, "session.next.") {
			want-- // a derived opening event (text.started, tool.input.*) before its block's durable end
			continue
		}
		if err != nil || ev.Event.Durable == nil || ev.Event.Durable.Seq != want {
			t.Fatalf("event stream at %d: %+v %v", want, ev, err)
		}
	}
	st.Close()

	// The README's second terminal: the CLI binary gets an answer.
	cli := exec.CommandContext(ctx, bin, "session", "prompt", "new", "hello", "--server", srv.url)
	cli.Env = env()
	cli.Dir = loc
	var out, errb bytes.Buffer
	cli.Stdout, cli.Stderr = &out, &errb
	if err := cli.Run(); err != nil || strings.TrimSpace(out.String()) == "" {
		t.Fatalf("sessionrt session prompt new hello: %v, stdout %q, stderr %q", err, out.String(), errb.String())
	}

	// OpenCode's SDK, when installed (see api/sdktest).
	sdk := os.Getenv("SESSIONRT_SDK_DIR")
	if sdk == "" {
		sdk = filepath.Join(os.TempDir(), "sessionrt-sdk")
	}
	node, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(filepath.Join(sdk, "node_modules", "@opencode-ai", "sdk")); err != nil || nodeErr != nil {
		t.Logf("OpenCode SDK part skipped: no node or no SDK in %s", sdk)
		return
	}
	drive := exec.CommandContext(ctx, node, filepath.Join(moduleRoot(t), "api", "testdata", "sdk", "drive.mjs"))
	drive.Env = env("SESSIONRT_URL="+srv.url, "SESSIONRT_DIR="+loc, "SDK_DIR="+sdk)
	out.Reset()
	errb.Reset()
	drive.Stdout, drive.Stderr = &out, &errb
	if err := drive.Run(); err != nil {
		t.Fatalf("SDK against serve: %v\n%s", err, errb.String())
	}
	var res struct {
		Messages []struct{ Type, Text string }
		Events   []struct{ Type string }
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Messages) != 2 || res.Messages[1].Text == "" || res.Events[len(res.Events)-1].Type != "session.next.idle" {
		t.Fatalf("SDK result: %s (%v)", out.String(), err)
	}
}

// A health check that does not need the API (serve's own route).
func TestServeHealth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	srv := serve(t, build(t), t.TempDir())
	req, _ := http.NewRequest("GET", srv.url+"/api/health", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health: %d", resp.StatusCode)
	}
}

// processWith reports whether a live process's command line contains s.
func processWith(s string) bool {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			if st, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie is dead
			}
			return true
		}
	}
	return false
}

// eventually polls an external condition (another process's life) until a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill -9 of the server mid-tool: the tool's process dies with it; the
// restarted server recovers the session, fails the leftover call once
// ("interrupted") without running it again, and loses no admitted prompt.
func TestServeKilledMidToolRecoversWithoutRepeatingTheTool(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds and runs the binary; reads /proc")
	}
	bin := build(t)
	data := t.TempDir()
	srv := serve(t, bin, data)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, _ := client.New(client.Config{BaseURL: srv.url, Token: token})
	if _, err := c.ListSessions(ctx, client.ListOptions{}); errors.Is(err, client.ErrNotFound) {
		t.Skip("sessionrt serve does not mount api.New yet (cli/serve_api.go)")
	}
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("sleep %d.%03d", 40+time.Now().Nanosecond()%10, time.Now().Nanosecond()%1000)
	admitted, err := c.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "run: " + marker + "; echo finished"}})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the durable tool call, then for its process.
	st, err := c.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var callID string
	for callID == "" {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event.Type == "session.next.tool.called" {
			var d struct{ CallID string }
			_ = json.Unmarshal(ev.Event.Data, &d)
			callID = d.CallID
		}
	}
	st.Close()
	eventually(t, "the tool's process never started", func() bool { return processWith(marker) })

	if err := srv.cmd.Process.Kill(); err != nil { // kill -9
		t.Fatal(err)
	}
	_ = srv.cmd.Wait()
	eventually(t, "the tool's process survived the server", func() bool { return !processWith(marker) })

	srv2 := serve(t, bin, data)
	c2, _ := client.New(client.Config{BaseURL: srv2.url, Token: token})
	if err := c2.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	var all []wire.Event
	for after := int64(0); ; {
		h, err := c2.History(ctx, s.ID, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, h.Data...)
		if !h.HasMore {
			break
		}
		after = all[len(all)-1].Durable.Seq
	}
	called, failed, succeeded := 0, 0, 0
	for i, ev := range all {
		if ev.Durable.Seq != int64(i+1) {
			t.Fatalf("seq %d at position %d", ev.Durable.Seq, i)
		}
		var d struct {
			CallID string
			Error  struct{ Message string }
		}
		_ = json.Unmarshal(ev.Data, &d)
		if d.CallID != callID {
			continue
		}
		switch ev.Type {
		case "session.next.tool.called":
			called++
		case "session.next.tool.failed":
			failed++
			if !strings.Contains(strings.ToLower(d.Error.Message), "interrupted") {
				t.Errorf("leftover call failed with %q, want interrupted", d.Error.Message)
			}
		case "session.next.tool.success":
			succeeded++
		}
	}
	if called != 1 || failed != 1 || succeeded != 0 {
		t.Fatalf("call %s: called %d, failed %d, succeeded %d; want 1, 1, 0", callID, called, failed, succeeded)
	}
	if processWith(marker) {
		t.Fatal("the tool ran again after the restart")
	}
	msgs, err := c2.Messages(ctx, s.ID, client.MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range msgs.Data {
		found = found || (m.Type == "user" && m.ID == admitted.ID)
	}
	if !found {
		t.Fatalf("the admitted prompt %s is not in the history after the restart", admitted.ID)
	}
	if got, err := c2.Session(ctx, s.ID); err != nil || got.Status != "idle" {
		t.Fatalf("after recovery: %+v %v", got, err)
	}
}

// POST interrupt mid-tool: the call's process is killed, the call fails
// durably, the session is idle and takes the next prompt.
func TestServeInterruptMidToolKillsTheToolProcess(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds and runs the binary; reads /proc")
	}
	srv := serve(t, build(t), t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, _ := client.New(client.Config{BaseURL: srv.url, Token: token})
	if _, err := c.ListSessions(ctx, client.ListOptions{}); errors.Is(err, client.ErrNotFound) {
		t.Skip("sessionrt serve does not mount api.New yet (cli/serve_api.go)")
	}
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("sleep %d.%03d", 50+time.Now().Nanosecond()%10, time.Now().Nanosecond()%1000)
	if _, err := c.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "run: " + marker}}); err != nil {
		t.Fatal(err)
	}
	st, err := c.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event.Type == "session.next.tool.called" {
			break
		}
	}
	eventually(t, "the tool's process never started", func() bool { return processWith(marker) })
	if err := c.Interrupt(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the tool's process survived the interrupt", func() bool { return !processWith(marker) })
	sawFailed := false
	for !sawFailed {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		sawFailed = ev.Event.Type == "session.next.tool.failed"
	}
	if got, err := c.Session(ctx, s.ID); err != nil || got.Status != "idle" {
		t.Fatalf("after interrupt: %+v %v", got, err)
	}
	if _, err := c.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "still there?"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
}
