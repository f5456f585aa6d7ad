package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SDKVersion is the @opencode-ai/sdk release the test drives.
const SDKVersion = "1.19.3"

// sdkDir returns a directory whose node_modules holds the SDK:
// SESSIONRT_SDK_DIR, else <tmp>/sessionrt-sdk (where .ci/run installs it),
// installing it there with npm when missing.
func sdkDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SESSIONRT_SDK_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sessionrt-sdk")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@opencode-ai", "sdk", "package.json")); err == nil {
		return dir
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skipf("OpenCode SDK not installed in %s and no npm to install it: run npm install --prefix %s @opencode-ai/sdk@%s", dir, dir, SDKVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--silent", "@opencode-ai/sdk@"+SDKVersion).CombinedOutput()
	if err != nil {
		t.Skipf("cannot install @opencode-ai/sdk@%s into %s (offline?): %v\n%s", SDKVersion, dir, err, out)
	}
	return dir
}

type wireEvent struct {
	Type   string
	Seq    int64
	TextID string
}

// checkTextBlock asserts that evs open the text block before its deltas and
// end, all under one textID, and that the durable events are contiguous
// from first.
func checkTextBlock(t *testing.T, name string, evs []wireEvent, first int64, wantDeltas bool) {
	t.Helper()
	started, deltas, ended := -1, 0, -1
	id := ""
	next := first
	for i, ev := range evs {
		switch ev.Type {
		case "session.next.text.started":
			if started >= 0 || ev.TextID == "" || ev.Seq != 0 {
				t.Fatalf("%s: text.started at %d: %+v", name, i, evs)
			}
			started, id = i, ev.TextID
			continue
		case "session.next.text.delta":
			if started < 0 || ev.TextID != id {
				t.Fatalf("%s: text.delta at %d before text.started or with another textID: %+v", name, i, evs)
			}
			deltas++
			continue
		case "session.next.text.ended":
			if started < 0 || ev.TextID != id {
				t.Fatalf("%s: text.ended at %d without text.started or with another textID: %+v", name, i, evs)
			}
			ended = i
		}
		if ev.Seq != next {
			t.Fatalf("%s: event %d has seq %d, want %d: %+v", name, i, ev.Seq, next, evs)
		}
		next++
	}
	if ended < 0 || (wantDeltas && deltas == 0) {
		t.Fatalf("%s: ended at %d, %d deltas: %+v", name, ended, deltas, evs)
	}
}

type driveResult struct {
	SDKVersion string `json:"sdkVersion"`
	Health     struct{ Healthy bool }
	Created    struct {
		ID       string
		Location struct{ Directory string }
	}
	Got      struct{ ID string }
	Listed   []string
	Admitted struct {
		AdmittedSeq int64
		ID          string
		SessionID   string
		Delivery    string
	}
	Events   []wireEvent
	Live     []wireEvent
	Messages []struct {
		Type string
		Text string
	}
	HistorySeqs []int64
	Permissions []any
	Questions   []any
	Active      map[string]any
	FirstPage   struct {
		Count int
		Next  *string
	}
	Message          bool
	Context          int
	ModelAfterSwitch struct{ ID, ProviderID string }
	GlobalFirst      string
	Missing          struct {
		Status  int
		Tag     string
		Message string
	}
	Location struct {
		Directory string
		Project   struct{ ID, Directory string }
	}
	Catalog struct {
		Agents, Models, Providers, Commands, Skills, References []string
		Provider                                                string
	}
	FS struct {
		List, Find []string
		Read       string
	}
	Requests struct {
		Permissions, Saved, Questions []any
	}
	Question struct {
		Pending, Left  int
		Header, Answer string
	}
	Revert struct {
		Staged                  string
		AfterCommit, AfterClear int
		V1Diff                  bool
		V1Revert                string
		V1Unrevert              any
	}
}

func TestOpenCodeSDKDrivesASession(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir := sdkDir(t)
	rt := apitest.Start(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		switch last := req.Messages[len(req.Messages)-1]; {
		case last.Role == provider.RoleTool && last.ToolResult != nil:
			return scripted.Turn{Text: "answered: " + last.ToolResult.Output}, nil
		case strings.HasPrefix(last.Text, "ask me"):
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "question", Args: []byte(
				`{"questions":[{"question":"Which color?","header":"Color","options":[{"label":"red","description":"warm"},{"label":"blue","description":"cool"}]}]}`)}}}, nil
		}
		return scripted.Turn{Text: "hi from sessionrt", Chunk: 3}, nil
	}})
	// The Location's configuration and files the catalog and fs calls read.
	writeFile(t, filepath.Join(rt.Loc, "opencode.jsonc"), `{
		// a command and an agent the SDK lists
		"command": {"greet": {"template": "Say hello to $ARGUMENTS"}},
		"agent": {"review": {"description": "Reviews", "mode": "primary"}},
	}`)
	writeFile(t, filepath.Join(rt.Loc, ".opencode", "skill", "tidy", "SKILL.md"), "---\nname: tidy\ndescription: Tidy up\n---\nTidy.\n")
	writeFile(t, filepath.Join(rt.Loc, "hello.txt"), "hello from a file\n")
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "testdata", "sdk", "drive.mjs")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "SESSIONRT_URL="+rt.URL, "SESSIONRT_TOKEN="+rt.Token, "SESSIONRT_DIR="+rt.Loc, "SDK_DIR="+dir, "SESSIONRT_QUESTIONS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, stdout.String(), stderr.String())
	}
	var res driveResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("script output %q: %v (stderr %s)", stdout.String(), err, stderr.String())
	}
	t.Logf("@opencode-ai/sdk %s", res.SDKVersion)

	id := res.Created.ID
	if !res.Health.Healthy || !strings.HasPrefix(id, "ses_") || res.Created.Location.Directory != rt.Loc || res.Got.ID != id {
		t.Fatalf("health/create/get: %+v", res)
	}
	if len(res.Listed) != 1 || res.Listed[0] != id {
		t.Fatalf("list: %v", res.Listed)
	}
	if res.Admitted.SessionID != id || res.Admitted.AdmittedSeq < 2 || !strings.HasPrefix(res.Admitted.ID, "msg_") || res.Admitted.Delivery != "steer" {
		t.Fatalf("prompt receipt: %+v", res.Admitted)
	}
	// The event stream replayed seq 1 and tailed the rest, in order, to idle;
	// the text block was opened before its end, under one textID.
	checkTextBlock(t, "session stream", res.Events, 1, false)
	if n := len(res.Events); n < 5 || res.Events[0].Type != "session.next.created" || res.Events[n-1].Type != "session.next.idle" {
		t.Fatalf("events: %+v", res.Events)
	}
	// The global stream adds the live deltas, under the same textID.
	if len(res.Live) == 0 {
		t.Fatal("no live events of the second prompt")
	}
	checkTextBlock(t, "global stream", res.Live, res.Live[0].Seq, true)
	if len(res.Messages) != 2 || res.Messages[0].Type != "user" || res.Messages[0].Text != "hello from the sdk" ||
		res.Messages[1].Type != "assistant" || res.Messages[1].Text != "hi from sessionrt" {
		t.Fatalf("messages: %+v", res.Messages)
	}
	if len(res.HistorySeqs) != len(res.Events)-1 { // the stream's text.started is derived, not history
		t.Fatalf("history has %d events, the stream %d", len(res.HistorySeqs), len(res.Events))
	}
	if res.Permissions == nil || len(res.Permissions) != 0 || res.Questions == nil || len(res.Questions) != 0 || res.Active == nil {
		t.Fatalf("permissions %v questions %v active %v", res.Permissions, res.Questions, res.Active)
	}
	if res.FirstPage.Count != 1 || res.FirstPage.Next == nil || !res.Message || res.Context != 2 {
		t.Fatalf("message paging %+v, message by ID %v, context %d", res.FirstPage, res.Message, res.Context)
	}
	if res.ModelAfterSwitch.ID != "other-model" || res.GlobalFirst != "server.connected" {
		t.Fatalf("model after switch %+v, first global event %q", res.ModelAfterSwitch, res.GlobalFirst)
	}
	if res.Location.Directory != rt.Loc || res.Location.Project.ID == "" {
		t.Fatalf("location %+v", res.Location)
	}
	cat := res.Catalog
	if strings.Join(cat.Agents, ",") != "build,plan,review" || len(cat.Models) == 0 || strings.Join(cat.Providers, ",") != "scripted" ||
		cat.Provider != "scripted" || strings.Join(cat.Commands, ",") != "greet" || strings.Join(cat.Skills, ",") != "tidy" || cat.References == nil {
		t.Fatalf("catalog %+v", cat)
	}
	if !contains(res.FS.List, "hello.txt") || !contains(res.FS.List, ".opencode") || strings.Join(res.FS.Find, ",") != "hello.txt" || res.FS.Read != "hello from a file\n" {
		t.Fatalf("fs %+v", res.FS)
	}
	if res.Requests.Permissions == nil || res.Requests.Saved == nil || res.Requests.Questions == nil {
		t.Fatalf("requests %+v", res.Requests)
	}
	if q := res.Question; q.Pending != 2 || q.Header != "Color" || !strings.Contains(q.Answer, "Which color? → blue") || q.Left != 0 {
		t.Fatalf("question through the SDK: %+v (want 2 pending, the answer reaching the model, none left)", q)
	}
	if res.Missing.Status != 404 || res.Missing.Tag != "SessionNotFoundError" || !strings.Contains(res.Missing.Message, "ses_missing") {
		t.Fatalf("unknown session through the SDK: %+v", res.Missing)
	}
	// Reverting to the first prompt hides every message; a clear brings them back.
	if rv := res.Revert; rv.Staged != res.Admitted.ID || rv.AfterCommit != 0 || rv.AfterClear != len(res.Messages) ||
		!rv.V1Diff || rv.V1Revert != res.Admitted.ID || rv.V1Unrevert != nil {
		t.Fatalf("revert through the SDK: %+v (want the prompt %s staged, 0 messages after commit, %d after clear)", rv, res.Admitted.ID, len(res.Messages))
	}
}
