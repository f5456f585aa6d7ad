package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/sessionrt/sessionrt/bench/driver"
)

// DefaultOpenCode is the npm package spec installed on first use.
const DefaultOpenCode = "opencode-ai@1.18"

// ErrNoNPM is returned when OpenCode is not installed and npm is missing.
var ErrNoNPM = errors.New("npm not found on PATH: it installs opencode-ai")

// OpenCode runs `opencode serve`.
type OpenCode struct {
	// Package is the npm spec; default DefaultOpenCode.
	Package string
	// Cache is the install folder; default <user cache dir>/sessionrt/bench/opencode.
	Cache string
	// Progress receives npm's output on install; nil discards.
	Progress io.Writer

	once sync.Once
	bin  string
	err  error
}

func (*OpenCode) Name() string { return "opencode" }

// Binary returns the opencode executable, installing it on first use.
func (o *OpenCode) Binary(ctx context.Context) (string, error) {
	o.once.Do(func() { o.bin, o.err = o.install(ctx) })
	return o.bin, o.err
}

func (o *OpenCode) install(ctx context.Context) (string, error) {
	spec, dir := o.Package, o.Cache
	if spec == "" {
		spec = DefaultOpenCode
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("opencode cache folder: %w", err)
		}
		dir = filepath.Join(base, "sessionrt", "bench", "opencode")
	}
	if bin, ok := installed(dir); ok {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", ErrNoNPM
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("opencode cache folder: %w", err)
	}
	out := o.Progress
	if out == nil {
		out = io.Discard
	}
	fmt.Fprintf(out, "installing %s into %s\n", spec, dir)
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel", "error", spec)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install %s: %w", spec, err)
	}
	bin, ok := installed(dir)
	if !ok {
		return "", fmt.Errorf("npm installed %s into %s but no opencode binary for %s/%s is there", spec, dir, runtime.GOOS, runtime.GOARCH)
	}
	return bin, nil
}

// installed finds the platform binary npm put in dir. It is run directly,
// not through the package's node wrapper, so /proc figures are OpenCode's.
func installed(dir string) (string, bool) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	nm := filepath.Join(dir, "node_modules")
	for _, p := range []string{
		filepath.Join(nm, "opencode-"+runtime.GOOS+"-"+arch, "bin", "opencode"),
		filepath.Join(nm, "opencode-"+runtime.GOOS+"-"+arch+"-baseline", "bin", "opencode"),
	} {
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// ProviderID and ModelID name the fake model in OpenCode's catalog.
const (
	ProviderID = "bench"
	ModelID    = "bench"
)

// Config is the opencode.json written into the isolated HOME (OpenCode's
// V1 format, which its V2 runtime converts: provider.<id>.options.baseURL
// becomes the catalog's api URL and apiKey an api setting).
//
// The provider has no "env" list on purpose: with one, OpenCode makes an
// integration for it, and the V2 catalog counts a provider with an
// integration available only once it has a connection.
func Config(llmURL string) map[string]any {
	ref := ProviderID + "/" + ModelID
	return map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"autoupdate":  false,
		"share":       "disabled",
		"model":       ref,
		"small_model": ref,
		"permission":  map[string]any{"*": "allow", "bash": "allow", "edit": "allow", "external_directory": "allow"},
		"provider": map[string]any{
			ProviderID: map[string]any{
				"npm":     "@ai-sdk/openai-compatible",
				"name":    "Bench fake model",
				"api":     llmURL,
				"options": map[string]any{"baseURL": llmURL, "apiKey": "bench"},
				"models": map[string]any{
					ModelID: map[string]any{"name": "bench", "tool_call": true, "limit": map[string]int{"context": 128000, "output": 4096}},
				},
			},
		},
	}
}

// emptyCatalog replaces OpenCode's models.dev catalog (OPENCODE_MODELS_PATH):
// without it OpenCode uses the snapshot bundled in its binary, whose models
// take precedence over the configured default, and a session goes to the
// first keyless model there (api.minimax.io), which is not the workload.
const emptyCatalog = "{}\n"

// SessionModel makes the driver name the fake model when it creates a
// session (so nothing depends on which default OpenCode picks) and wait
// for GET /api/model to list it before the first turn.
func (*OpenCode) SessionModel() driver.ModelRef {
	return driver.ModelRef{ProviderID: ProviderID, ID: ModelID}
}

func (o *OpenCode) Command(ctx context.Context, s driver.Setup) (*exec.Cmd, error) {
	bin, err := o.Binary(ctx)
	if err != nil {
		return nil, err
	}
	home := filepath.Join(s.Dir, "home")
	cfgDir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(Config(s.LLMURL), "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "opencode.json"), b, 0o644); err != nil {
		return nil, fmt.Errorf("write opencode config: %w", err)
	}
	catalog := filepath.Join(home, "models.json")
	if err := os.WriteFile(catalog, []byte(emptyCatalog), 0o644); err != nil {
		return nil, fmt.Errorf("write opencode model catalog: %w", err)
	}
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "serve", "--print-logs", "--hostname", host, "--port", port)
	cmd.Dir = s.Project
	cmd.Env = append(cleanEnv(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"OPENCODE_MODELS_PATH="+catalog,
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
	)
	return cmd, nil
}

// cleanEnv is the environment without provider keys and HOME/XDG folders,
// so the peer sees only the fake model and the isolated HOME.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
			"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT":
			continue
		}
		out = append(out, kv)
	}
	return out
}
