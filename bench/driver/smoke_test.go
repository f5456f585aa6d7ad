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
	// 1 warm-up + 3 latency + 6 throughput turns, two model calls each.
	if st := llm.Stats(); st.ToolCalls != 10 || st.Finals != 10 || st.Errors != 0 {
		t.Fatalf("fake model saw %+v, want 10 tool calls and 10 finals", st)
	}
	var out strings.Builder
	if err := Compare(res).Print(&out); err != nil || !strings.Contains(out.String(), "single-session latency p50") {
		t.Fatalf("table %q %v", out.String(), err)
	}
}
