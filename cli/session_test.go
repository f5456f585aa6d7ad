package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// clientCLI is the part of the command tree these files add, parsed the way
// root.go's run parses the whole tree, so the tests hold before it is wired.
type clientCLI struct {
	Globals
	Session    SessionCmd    `cmd:""`
	Permission PermissionCmd `cmd:""`
	Trace      TraceCmd      `cmd:""`
}

func runClient(args []string, stdout, stderr *bytes.Buffer) int {
	var root clientCLI
	root.Stdout, root.Stderr = stdout, stderr
	exited, exitCode := false, 0
	parser, err := kong.New(&root, kong.Name("sessionrt"), kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exited, exitCode = true, code }), kong.Bind(&root.Globals))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, err := parser.Parse(args)
	if exited {
		return exitCode
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if err := ctx.Run(); err != nil {
		fmt.Fprintln(stderr, err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

type cliRun struct {
	t    *testing.T
	rt   *apitest.Runtime
	data string
}

// do runs one command against the test server and returns exit code and output.
func (c cliRun) do(args ...string) (int, string, string) {
	c.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--data", c.data}, args...)
	full = append(full, "--server", c.rt.URL, "--token", c.rt.Token)
	code := runClient(full, &out, &errb)
	return code, out.String(), errb.String()
}

func (c cliRun) ok(args ...string) string {
	c.t.Helper()
	code, out, errs := c.do(args...)
	if code != 0 {
		c.t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
	}
	return out
}

func newCLIRun(t *testing.T, o apitest.Options) cliRun {
	return cliRun{t: t, rt: apitest.Start(t, o), data: t.TempDir()}
}

func TestSessionCommandsDriveARealServer(t *testing.T) {
	c := newCLIRun(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{Text: "echo: " + req.Messages[len(req.Messages)-1].Text}, nil
	}})
	id := strings.TrimSpace(c.ok("session", "create", "--dir", c.rt.Loc))
	if !strings.HasPrefix(id, "ses_") {
		t.Fatalf("create printed %q", id)
	}
	if out := c.ok("session", "list"); !strings.Contains(out, id) || !strings.Contains(out, "STATUS") {
		t.Fatalf("list: %q", out)
	}
	var listed []wire.Session
	if err := json.Unmarshal([]byte(c.ok("session", "list", "--json")), &listed); err != nil || len(listed) != 1 || listed[0].ID != id {
		t.Fatalf("list --json: %+v %v", listed, err)
	}
	if out := c.ok("session", "show", id); !strings.Contains(out, c.rt.Loc) || !strings.Contains(out, "idle") {
		t.Fatalf("show: %q", out)
	}
	if out := c.ok("session", "prompt", id, "hello", "there"); strings.TrimSpace(out) != "echo: hello there" {
		t.Fatalf("prompt printed %q, want the answer", out)
	}
	var pr struct {
		Receipt  wire.InputAdmitted
		Messages []wire.Message
	}
	if err := json.Unmarshal([]byte(c.ok("session", "prompt", id, "again", "--json")), &pr); err != nil || pr.Receipt.AdmittedSeq == 0 || len(pr.Messages) != 2 {
		t.Fatalf("prompt --json: %+v %v", pr, err)
	}
	if out := c.ok("session", "prompt", id, "later", "--hold"); !strings.Contains(out, "admitted msg_") {
		t.Fatalf("prompt --hold: %q", out)
	}
	if out := c.ok("session", "run", id); !strings.Contains(out, "ended normally") {
		t.Fatalf("run: %q", out)
	}
	if out := c.ok("session", "messages", id); strings.Count(out, "assistant") != 3 || !strings.Contains(out, "echo: later") {
		t.Fatalf("messages: %q", out)
	}
	if out := c.ok("session", "events", id); !strings.Contains(out, "session.next.created") || !strings.Contains(out, "session.next.idle") {
		t.Fatalf("events: %q", out)
	}
	lines := strings.Split(strings.TrimSpace(c.ok("session", "events", id, "--after", "1", "--json")), "\n")
	var first wire.Event
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Durable.Seq != 2 {
		t.Fatalf("events --after 1 --json starts with %q (%v)", lines[0], err)
	}
	dest := t.TempDir()
	if out := c.ok("session", "move", id, dest); !strings.Contains(out, dest) {
		t.Fatalf("move: %q", out)
	}
	if out := c.ok("session", "interrupt", id); !strings.Contains(out, "interrupted") {
		t.Fatalf("interrupt: %q", out)
	}
}

func TestSessionCommandsExitCodes(t *testing.T) {
	c := newCLIRun(t, apitest.Options{})
	id := strings.TrimSpace(c.ok("session", "create"))
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"session", "show", "ses_missing"}, exitNotFound},
		{[]string{"session", "prompt", "ses_missing", "hi"}, exitNotFound},
		{[]string{"permission", "reply", id, "per_missing", "once"}, exitNotFound},
		{[]string{"session", "create", "--model", "nomodel"}, exitUsage},
		{[]string{"session", "prompt", id, "hi", "--id", "bad id"}, exitUsage},
		{[]string{"session", "show"}, exitUsage}, // missing argument
		{[]string{"permission", "reply", id, "per_x", "maybe"}, exitUsage},
	}
	for _, tc := range cases {
		if code, _, errs := c.do(tc.args...); code != tc.code || errs == "" {
			t.Errorf("%v: exit %d (stderr %q), want %d with a message", tc.args, code, errs, tc.code)
		}
	}
	c.ok("session", "prompt", id, "first", "--id", "msg_fixed", "--hold")
	if code, _, errs := c.do("session", "prompt", id, "second", "--id", "msg_fixed", "--hold"); code != exitConflict || !strings.Contains(errs, "ConflictError") {
		t.Fatalf("reused message ID: exit %d %q, want %d", code, errs, exitConflict)
	}
	var out, errb bytes.Buffer
	if code := runClient([]string{"session", "list", "--server", c.rt.URL, "--token", "wrong"}, &out, &errb); code != exitFailure || !strings.Contains(errb.String(), "401") {
		t.Fatalf("wrong token: exit %d %q", code, errb.String())
	}
}

func TestTokenComesFromTheDataDirectory(t *testing.T) {
	c := newCLIRun(t, apitest.Options{})
	if err := os.WriteFile(filepath.Join(c.data, tokenFile), []byte(c.rt.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SESSIONRT_TOKEN", "")
	var out, errb bytes.Buffer
	if code := runClient([]string{"--data", c.data, "session", "list", "--server", c.rt.URL}, &out, &errb); code != 0 {
		t.Fatalf("token from the data directory: exit %d %q", code, errb.String())
	}
}

func TestPermissionAndTraceCommands(t *testing.T) {
	c := newCLIRun(t, apitest.Options{})
	id := strings.TrimSpace(c.ok("session", "create"))
	if out := c.ok("permission", "list", id); !strings.Contains(out, "REQUEST") {
		t.Fatalf("permission list: %q", out)
	}
	if out := c.ok("permission", "list", id, "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("permission list --json: %q", out)
	}
	c.ok("session", "prompt", id, "trace this")
	if out := c.ok("trace", "show", id); !strings.Contains(out, "invoke_agent") || !strings.Contains(out, "chat") {
		t.Fatalf("trace show: %q", out)
	}
}

func TestClientCommandHelpShowsExamples(t *testing.T) {
	for _, args := range [][]string{{"session", "--help"}, {"session", "prompt", "--help"}, {"permission", "--help"}, {"trace", "show", "--help"}} {
		var out, errb bytes.Buffer
		if code := runClient(args, &out, &errb); code != 0 || !strings.Contains(out.String(), "Examples") || !strings.Contains(out.String(), "--server") {
			t.Errorf("%v: exit %d, help %q", args, code, out.String())
		}
	}
}

func TestPromptStreamsTextAndToolCallsOnce(t *testing.T) {
	c := newCLIRun(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		if n%2 == 0 {
			return scripted.Turn{Text: "let me look", Chunk: 3, ToolCalls: []scripted.ToolCall{{Name: "bash", Args: []byte(`{"command":"echo hi","description":"greet"}`)}}}, nil
		}
		return scripted.Turn{Text: "all done here", Chunk: 2}, nil
	}})
	id := strings.TrimSpace(c.ok("session", "create", "--dir", c.rt.Loc))
	for i := 0; i < 3; i++ { // the same answer each time: nothing doubled, nothing lost
		if out := c.ok("session", "prompt", id, "look"); out != "let me look\n[bash]\nall done here\n" {
			t.Fatalf("prompt %d printed %q", i, out)
		}
	}
}

// A prompt whose drain fails prints why and exits 1; show tells it too.
func TestPromptAndShowPrintWhyTheDrainFailed(t *testing.T) {
	c := newCLIRun(t, apitest.Options{Turns: func(*provider.Request, int) (scripted.Turn, error) {
		return scripted.Turn{}, &provider.Error{Kind: provider.KindAuth, Message: "invalid API key"}
	}})
	id := strings.TrimSpace(c.ok("session", "create", "--dir", c.rt.Loc))
	code, _, errs := c.do("session", "prompt", id, "hello")
	if code != exitFailure || !strings.Contains(errs, "stopped (provider)") || !strings.Contains(errs, "invalid API key") {
		t.Fatalf("prompt: exit %d, stderr %q; want 1 and why", code, errs)
	}
	code, out, _ := c.do("session", "prompt", id, "again", "--json")
	var pr struct{ Outcome wire.Outcome }
	if code != exitFailure || json.Unmarshal([]byte(out), &pr) != nil || pr.Outcome.Kind != "provider" {
		t.Fatalf("prompt --json: exit %d, %q", code, out)
	}
	if out := c.ok("session", "show", id); !strings.Contains(out, "failed (provider)") || !strings.Contains(out, "invalid API key") {
		t.Fatalf("show: %q", out)
	}
}
