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
	Events []struct {
		Type string
		Seq  int64
	}
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
}

func TestOpenCodeSDKDrivesASession(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir := sdkDir(t)
	rt := apitest.Start(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{Text: "hi from sessionrt", Chunk: 3}, nil
	}})
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "testdata", "sdk", "drive.mjs")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "SESSIONRT_URL="+rt.URL, "SESSIONRT_TOKEN="+rt.Token, "SESSIONRT_DIR="+rt.Loc, "SDK_DIR="+dir)
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
	// The event stream replayed seq 1 and tailed the rest, in order, to idle.
	for i, ev := range res.Events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: %+v", i, ev.Seq, res.Events)
		}
	}
	if n := len(res.Events); n < 5 || res.Events[0].Type != "session.next.created" || res.Events[n-1].Type != "session.next.idle" {
		t.Fatalf("events: %+v", res.Events)
	}
	if len(res.Messages) != 2 || res.Messages[0].Type != "user" || res.Messages[0].Text != "hello from the sdk" ||
		res.Messages[1].Type != "assistant" || res.Messages[1].Text != "hi from sessionrt" {
		t.Fatalf("messages: %+v", res.Messages)
	}
	if len(res.HistorySeqs) != len(res.Events) {
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
	if res.Missing.Status != 404 || res.Missing.Tag != "SessionNotFoundError" || !strings.Contains(res.Missing.Message, "ses_missing") {
		t.Fatalf("unknown session through the SDK: %+v", res.Missing)
	}
}
