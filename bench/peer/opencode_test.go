package peer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/bench/driver"
	"github.com/sessionrt/sessionrt/bench/fakellm"
)

// OpenCode, installed from npm and configured with the fake model, answers
// the driver's V2 workload. Opt-in (SESSIONRT_BENCH_OPENCODE=1): it installs
// a 185 MB package.
func TestOpenCodeAnswersTheWorkload(t *testing.T) {
	if testing.Short() || os.Getenv("SESSIONRT_BENCH_OPENCODE") == "" {
		t.Skip("opt-in: SESSIONRT_BENCH_OPENCODE=1 installs and starts opencode")
	}
	var calls strings.Builder
	llm, err := fakellm.Start(fakellm.Config{Log: &calls})
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
	t.Logf("%s\n%+v\nfake model requests:\n%s", progress.String(), res, calls.String())
}

// testDir keeps the run's files (server.log) in BENCH_KEEP when set.
func testDir(t *testing.T) string {
	if d := os.Getenv("BENCH_KEEP"); d != "" {
		return d
	}
	return t.TempDir()
}

// The generated opencode.json names the fake server as the only provider's
// endpoint, has no "env" list (which would leave the provider unavailable
// in the V2 catalog), allows every tool and makes the fake model the
// default; Command writes it and an empty model catalog into an isolated
// HOME and points OpenCode at both.
func TestCommandWritesAnIsolatedConfigForTheFakeModel(t *testing.T) {
	cache := t.TempDir()
	bin, ok := fakeInstall(t, cache)
	if !ok {
		t.Skip("no OpenCode platform package for this GOOS/GOARCH")
	}
	dir := t.TempDir()
	oc := &OpenCode{Cache: cache}
	cmd, err := oc.Command(context.Background(), driver.Setup{Dir: dir, Project: dir + "/project", Addr: "127.0.0.1:4321", LLMURL: "http://127.0.0.1:9/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Path != bin || strings.Join(cmd.Args[1:], " ") != "serve --print-logs --hostname 127.0.0.1 --port 4321" {
		t.Fatalf("command %s %q", cmd.Path, cmd.Args)
	}
	env := map[string]string{}
	for _, kv := range cmd.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v // later entries win, as for exec
	}
	home := dir + "/home"
	if env["HOME"] != home || env["XDG_CONFIG_HOME"] != home+"/.config" || env["OPENCODE_MODELS_PATH"] != home+"/models.json" ||
		env["OPENCODE_DISABLE_AUTOUPDATE"] != "1" || env["OPENCODE_DISABLE_MODELS_FETCH"] != "1" {
		t.Fatalf("environment %v", env)
	}
	catalog, err := os.ReadFile(home + "/models.json")
	if err != nil || strings.TrimSpace(string(catalog)) != "{}" {
		t.Fatalf("catalog %q %v, want an empty object", catalog, err)
	}
	b, err := os.ReadFile(home + "/.config/opencode/opencode.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Model      string            `json:"model"`
		Autoupdate bool              `json:"autoupdate"`
		Permission map[string]string `json:"permission"`
		Provider   map[string]struct {
			NPM     string            `json:"npm"`
			API     string            `json:"api"`
			Env     []string          `json:"env"`
			Options map[string]string `json:"options"`
			Models  map[string]struct {
				ToolCall bool `json:"tool_call"`
			} `json:"models"`
		} `json:"provider"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	p, ok := cfg.Provider["bench"]
	if !ok || len(cfg.Provider) != 1 || p.NPM != "@ai-sdk/openai-compatible" || p.API != "http://127.0.0.1:9/v1" ||
		p.Options["baseURL"] != "http://127.0.0.1:9/v1" || p.Options["apiKey"] == "" || p.Env != nil || !p.Models["bench"].ToolCall {
		t.Fatalf("provider %+v", cfg.Provider)
	}
	if cfg.Model != "bench/bench" || cfg.Autoupdate || cfg.Permission["*"] != "allow" {
		t.Fatalf("config %s", b)
	}
	if m := oc.SessionModel(); m != (driver.ModelRef{ProviderID: "bench", ID: "bench"}) {
		t.Fatalf("session model %+v", m)
	}
}

// A key for a real provider in the caller's environment never reaches the
// peer.
func TestCleanEnvDropsProviderKeysAndHome(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-real")
	t.Setenv("OPENCODE_CONFIG", "/etc/x.json")
	for _, kv := range cleanEnv() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "OPENAI_API_KEY" || k == "OPENCODE_CONFIG" || k == "HOME" {
			t.Fatalf("%s kept", k)
		}
	}
}

// fakeInstall puts an executable where npm would put the platform binary.
func fakeInstall(t *testing.T, cache string) (string, bool) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		return "", false
	}
	d := filepath.Join(cache, "node_modules", "opencode-"+runtime.GOOS+"-"+arch, "bin")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(d, "opencode")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, true
}
