package driver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/bench/fakellm"
)

// sessionrtBinary builds sessionrt once (or takes SESSIONRT_BIN).
func sessionrtBinary(t *testing.T) string {
	if bin := os.Getenv("SESSIONRT_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "sessionrt")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build sessionrt: %v\n%s", err, out)
	}
	return bin
}

// A small run against a real `sessionrt serve` subprocess measures every
// figure: start-up, latency, throughput, CPU and RSS.
func TestRunMeasuresSessionrtServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server subprocess")
	}
	bin := sessionrtBinary(t)
	llm, err := fakellm.Start(fakellm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress strings.Builder
	res, err := Run(ctx, Config{Target: Sessionrt{Binary: bin}, LLMURL: llm.URL, Dir: t.TempDir(),
		LatencyRuns: 3, Levels: []Level{{Sessions: 3, Turns: 2}}, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if res.StartupSeconds <= 0 || res.Latency.Runs != 3 || res.Latency.P50 <= 0 || len(res.Throughput) != 1 ||
		res.Throughput[0].TurnsPerSec <= 0 || res.CPUPerTurn <= 0 || res.PeakRSS <= 0 || res.RSSAfter <= 0 {
		t.Fatalf("incomplete result %+v", res)
	}
	if res.RSSAfterExe <= 0 || res.RSSAfterExe > res.RSSAfterFile {
		t.Fatalf("executable's RSS %d of file-backed %d", res.RSSAfterExe, res.RSSAfterFile)
	}
	// 1 warm-up + 3 latency + 6 throughput turns, two model calls each.
	if st := llm.Stats(); st.ToolCalls != 10 || st.Finals != 10 || st.Errors != 0 {
		t.Fatalf("fake model saw %+v, want 10 tool calls and 10 finals", st)
	}
	var out strings.Builder
	if err := Compare(res).Print(&out); err != nil || !strings.Contains(out.String(), "single-session latency p50") {
		t.Fatalf("table %q %v", out.String(), err)
	}
}

// Crash mode runs both crash points against a real `sessionrt serve`:
// the tool is seen running before the kill, the server comes back on the
// same data, the prompt is still there and a new prompt is answered.
func TestCrashModeRunsBothPointsAgainstSessionrt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server subprocesses")
	}
	bin := sessionrtBinary(t)
	gates := t.TempDir()
	llm, err := fakellm.Start(fakellm.Config{ToolGate: gates})
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress strings.Builder
	obs, err := CrashMode(ctx, CrashConfig{Target: Sessionrt{Binary: bin}, LLMURL: llm.URL, Model: llm, ToolGate: gates, Gate: fakellm.GatePath,
		Dir: t.TempDir(), Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(obs) != 2 || obs[0].Point != MidStream || obs[1].Point != MidTool {
		t.Fatalf("observations %+v", obs)
	}
	for _, o := range obs {
		if o.Err != "" || !o.PromptKept || o.RestartSeconds <= 0 || (!o.TurnResumed && !o.NewPromptAnswered) {
			t.Errorf("%s: %+v\n%s", o.Point, o, progress.String())
		}
	}
	if !obs[1].ToolStarted || obs[0].ToolStarted {
		t.Errorf("tool started: mid-stream %v, mid-tool %v", obs[0].ToolStarted, obs[1].ToolStarted)
	}
}
