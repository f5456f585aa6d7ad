package peer

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/bench/driver"
	"github.com/sessionrt/sessionrt/bench/fakellm"
)

// OpenCode, installed from npm and configured with the fake model, answers
// the driver's V2 workload. Opt-in (SESSIONRT_BENCH_OPENCODE=1): it installs
// a 185 MB package, and OpenCode 1.18.33's V2 runner does not yet pick the
// configured custom provider (see the package doc).
func TestOpenCodeAnswersTheWorkload(t *testing.T) {
	if testing.Short() || os.Getenv("SESSIONRT_BENCH_OPENCODE") == "" {
		t.Skip("opt-in: SESSIONRT_BENCH_OPENCODE=1 installs and starts opencode")
	}
	llm, err := fakellm.Start(fakellm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress strings.Builder
	oc := &OpenCode{Progress: &progress}
	res, err := driver.Run(ctx, driver.Config{Target: oc, LLMURL: llm.URL, Dir: testDir(t),
		LatencyRuns: 2, Levels: []driver.Level{{Sessions: 2, Turns: 1}}, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if res.Latency.Runs != 2 || res.Throughput[0].TurnsPerSec <= 0 || res.PeakRSS <= 0 {
		t.Fatalf("incomplete result %+v", res)
	}
	if st := llm.Stats(); st.ToolCalls < 5 || st.Finals < 5 || st.Errors != 0 {
		t.Fatalf("fake model saw %+v, want at least 5 tool calls and 5 finals", st)
	}
	t.Logf("%s\n%+v", progress.String(), res)
}

// testDir keeps the run's files (server.log) in BENCH_KEEP when set.
func testDir(t *testing.T) string {
	if d := os.Getenv("BENCH_KEEP"); d != "" {
		return d
	}
	return t.TempDir()
}
