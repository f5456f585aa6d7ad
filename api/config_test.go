package api_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// configured is a temp HOME and a temp git project whose configuration files
// the runtime reads.
type configured struct {
	home, project string
}

func newConfigured(t *testing.T) configured {
	t.Helper()
	c := configured{home: t.TempDir(), project: t.TempDir()}
	if err := os.Mkdir(filepath.Join(c.project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return c
}

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (c configured) global(t *testing.T, text string) string {
	return writeFile(t, filepath.Join(c.home, ".config", "opencode", "opencode.jsonc"), text)
}

func (c configured) start(t *testing.T, o apitest.Options) *apitest.Runtime {
	t.Helper()
	if o.Env == nil {
		o.Env = map[string]string{"HOME": c.home}
	}
	if o.Loc == "" {
		o.Loc = c.project
	}
	return apitest.Start(t, o)
}

// toolCalls answers every first turn of a prompt with the given call, the
// next with text.
func callThenText(name, args string) apitest.TurnFunc {
	return func(req *provider.Request, n int) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == provider.RoleTool {
			return scripted.Turn{Text: "done"}, nil
		}
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: name, Args: []byte(args)}}}, nil
	}
}

// journalTypes lists a session's durable event type names.
func journalTypes(t *testing.T, rt *apitest.Runtime, id string) []string {
	t.Helper()
	evs, err := rt.Node.Journal.ReadEvents(ctxT(t), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type.Name
	}
	return out
}

func toolFailure(t *testing.T, rt *apitest.Runtime, id string) string {
	t.Helper()
	evs, err := rt.Node.Journal.ReadEvents(ctxT(t), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == (messages.ToolFailed{}).EventType() {
			return e.Event.(messages.ToolFailed).Error
		}
	}
	return ""
}

func TestPlanAgentCannotEdit(t *testing.T) {
	cf := newConfigured(t)
	rt := cf.start(t, apitest.Options{Turns: callThenText("apply_patch",
		`{"patch":"*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch"}`)})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Agent: "plan", Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, c, s.ID, "write hello.txt")
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if msg := toolFailure(t, rt, s.ID); !strings.Contains(msg, "permission denied: edit") {
		t.Fatalf("apply_patch under plan: %q, want a denial (events %v)", msg, journalTypes(t, rt, s.ID))
	}
	if _, err := os.Stat(filepath.Join(cf.project, "hello.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("plan wrote hello.txt: %v", err)
	}
	// The build agent of the same project may.
	b := create(t, c, rt)
	prompt(t, c, b.ID, "write hello.txt")
	if err := c.Wait(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(cf.project, "hello.txt")); err != nil || string(got) != "hi\n" {
		t.Fatalf("build: %q %v", got, err)
	}
}

// askedID waits for the session's next permission request and returns it.
func askedID(t *testing.T, c *client.Client, id string) (string, string, []string) {
	t.Helper()
	ev := waitEvent(t, c, id, "session.next.permission.asked")
	var d struct {
		ID, Action string
		Resources  []string
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil || d.ID == "" {
		t.Fatalf("permission.asked %s: %v", ev.Data, err)
	}
	return d.ID, d.Action, d.Resources
}

func TestConfiguredBashPatternAsksAndAlwaysHoldsForTheProject(t *testing.T) {
	cf := newConfigured(t)
	cf.global(t, `{
		// every command asks, but for echo
		"permission": {"bash": {"*": "ask", "echo *": "allow"}},
	}`)
	rt := cf.start(t, apitest.Options{Turns: callThenText("bash", `{"command":"git status","description":"status"}`)})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "status?")
	id, action, res := askedID(t, c, s.ID)
	if action != "bash" || len(res) != 1 || res[0] != "git status" {
		t.Fatalf("asked %s %v", action, res)
	}
	if err := c.ReplyPermission(ctx, s.ID, id, "always", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	// Another session of the project runs "git status" without asking.
	s2 := create(t, c, rt)
	prompt(t, c, s2.ID, "status again")
	if err := c.Wait(ctx, s2.ID); err != nil {
		t.Fatal(err)
	}
	for _, typ := range journalTypes(t, rt, s2.ID) {
		if typ == (messages.PermissionAsked{}).EventType().Name {
			t.Fatal("asked again in the same project after always")
		}
	}
	if msg := toolFailure(t, rt, s2.ID); msg != "" {
		t.Fatalf("second run failed: %s", msg)
	}
	// Another project still asks.
	other := t.TempDir()
	s3, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: other}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, c, s3.ID, "status elsewhere")
	id3, _, _ := askedID(t, c, s3.ID)
	if err := c.ReplyPermission(ctx, s3.ID, id3, "reject", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s3.ID); err != nil {
		t.Fatal(err)
	}
}

func TestExternalDirectoryAsks(t *testing.T) {
	cf := newConfigured(t)
	outside := t.TempDir()
	rt := cf.start(t, apitest.Options{Turns: callThenText("bash", `{"command":"pwd","workdir":"`+outside+`","description":"where"}`)})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "pwd outside")
	id, action, res := askedID(t, c, s.ID)
	real, _ := filepath.EvalSymlinks(outside)
	if action != "external_directory" || len(res) != 1 || res[0] != real {
		t.Fatalf("asked %s %v, want external_directory %s", action, res, real)
	}
	if err := c.ReplyPermission(ctx, s.ID, id, "reject", "stay in the project"); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if msg := toolFailure(t, rt, s.ID); !strings.Contains(msg, "stay in the project") {
		t.Fatalf("tool failure %q, want the feedback", msg)
	}
}

func TestMalformedConfigurationConcernsItsLocationOnly(t *testing.T) {
	cf := newConfigured(t)
	bad := writeFile(t, filepath.Join(cf.project, "opencode.jsonc"), "{\n  \"agent\": {\n    \"x\": {\"steps\": 2,,}\n  }\n}\n")
	rt := cf.start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	_, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || !strings.Contains(apiErr.Body.Message, bad+":3:22: ") {
		t.Fatalf("create in the malformed Location: %v, want 400 naming %s:3:22", err, bad)
	}
	// Another Location of the same server works.
	other := t.TempDir()
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: other}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, c, s.ID, "hi")
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	// Fixed, the Location works without a restart.
	writeFile(t, bad, `{"agent": {"x": {"steps": 2}}}`)
	if _, err := c.CreateSession(ctx, wire.CreateSessionRequest{Agent: "x", Location: &wire.LocationRef{Directory: cf.project}}); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownAgentOrModelIsRefusedWithTheKnownNames(t *testing.T) {
	cf := newConfigured(t)
	cf.global(t, `{"agent": {"review": {"mode": "primary"}}}`)
	rt := cf.start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	err := c.SwitchAgent(ctx, s.ID, "nope")
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || !strings.Contains(apiErr.Body.Message, "(agents: build, plan, review)") {
		t.Fatalf("switch to an unknown agent: %v", err)
	}
	if err := c.SwitchAgent(ctx, s.ID, "review"); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateSession(ctx, wire.CreateSessionRequest{Agent: "ghost", Location: &wire.LocationRef{Directory: cf.project}})
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || !strings.Contains(apiErr.Body.Message, `unknown agent "ghost"`) {
		t.Fatalf("create with an unknown agent: %v", err)
	}
}

// A changed configuration applies from the next turn: the first turn of a
// prompt runs under the old rules, the file changes while it streams, and
// the call of the second turn is decided by the new ones.
func TestChangedConfigurationAppliesAtTheNextTurn(t *testing.T) {
	cf := newConfigured(t)
	file := writeFile(t, filepath.Join(cf.project, "opencode.json"), `{"permission": {"bash": "allow"}}`)
	rt := cf.start(t, apitest.Options{})
	rt.SetTurns(func(req *provider.Request, n int) (scripted.Turn, error) {
		switch n {
		case 0:
			// Mid-turn: the change must wait for the next boundary.
			writeFile(t, file, `{"permission": {"bash": "deny"}}`)
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "bash", Args: []byte(`{"command":"echo one","description":"one"}`)}}}, nil
		case 1:
			for _, tl := range req.Tools {
				if tl.Name == "bash" {
					return scripted.Turn{}, errors.New("bash still offered after the configuration denied it")
				}
			}
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c2", Name: "bash", Args: []byte(`{"command":"echo two","description":"two"}`)}}}, nil
		}
		return scripted.Turn{Text: "done"}, nil
	})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "go")
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Node.Journal.ReadEvents(ctx, s.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, e := range evs {
		switch ev := e.Event.(type) {
		case messages.ToolSucceeded:
			results = append(results, "ok: "+strings.TrimSpace(strings.Split(ev.Output, "\n")[0]))
		case messages.ToolFailed:
			results = append(results, "failed: "+ev.Error)
		case messages.TurnFailed:
			results = append(results, "turn failed: "+ev.Message)
		}
	}
	if len(results) != 2 || results[0] != "ok: one" || !strings.HasPrefix(results[1], "failed: permission denied: bash") {
		t.Fatalf("results %q: want the first call run, the second denied", results)
	}
}
