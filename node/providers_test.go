package node

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/config"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/catalog"
)

// configuredCatalog is providerCatalog over the built-in catalog for a
// project whose opencode.json is text (no global file).
func configuredCatalog(t *testing.T, text string) (*catalog.Catalog, error) {
	t.Helper()
	home, proj := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "opencode.json"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home}
	getenv := func(k string) string { return env[k] }
	c, err := config.NewLoader(config.Options{Getenv: getenv}).Load(proj)
	if err != nil {
		return nil, err
	}
	return providerCatalog(catalog.Builtin(), c.Info, getenv)
}

// The spec (002, provider runner): "The runner does not impose a universal
// provider-stream inactivity or absolute timeout. A future slice should
// design configurable policy around provider behavior". sessionrt's policy
// is OpenCode's documented provider option, options.chunkTimeout
// ("Timeout in milliseconds between streamed SSE chunks for this provider
// … Set to false to disable timeout"), with the spec's default of none:
// unset or false gives no idle timeout; a number bounds a silent stream,
// which then ends with a retryable error; a bad value names where it is.
func TestChunkTimeoutFromOpenCodeConfigIsTheIdleTimeoutDefaultNone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // silent until the client gives up
	}))
	defer srv.Close()
	configured := func(options string) string {
		return `{"provider": {"local": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "` + srv.URL + `/v1"` + options + `}}}}`
	}
	for _, tc := range []struct{ options, want string }{
		{"", ""},
		{`, "chunkTimeout": false`, ""},
		{`, "chunkTimeout": 250`, "250ms"},
		{`, "chunkTimeout": 600000`, "10m0s"},
	} {
		c, err := configuredCatalog(t, configured(tc.options))
		if err != nil {
			t.Fatalf("%q: %v", tc.options, err)
		}
		if got := c.Providers["local"].IdleTimeout; got != tc.want {
			t.Fatalf("options %q: idle timeout %q, want %q", tc.options, got, tc.want)
		}
	}

	c, err := configuredCatalog(t, configured(`, "chunkTimeout": 200`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := catalog.Open(catalog.OpenConfig{Catalog: c, Getenv: func(string) string { return "" }, NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Stream(context.Background(), &provider.Request{Model: provider.ModelRef{Provider: "local", Model: "m"}, Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Collect(s, "openai"); !errors.Is(err, provider.ErrRetryable) || !strings.Contains(err.Error(), "no data from the provider") {
		t.Fatalf("err = %v, want the idle timeout's retryable error", err)
	}

	for _, bad := range []string{`"soon"`, `0`, `true`, `-5`} {
		_, err := configuredCatalog(t, configured(`, "chunkTimeout": `+bad))
		var fe *config.FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "provider.local.options.chunkTimeout: "+bad+" given, want a positive number of milliseconds or false") {
			t.Fatalf("chunkTimeout %s: %v, want a file error naming the key", bad, err)
		}
	}
}

// A whitelist limits the openai provider to its models even when
// OPENAI_BASE_URL names a local server, which otherwise serves any model
// (catalog.Open allows unlisted models there): a model outside the
// whitelist is refused, one inside is served.
func TestWhitelistHoldsForALocalOpenAIServer(t *testing.T) {
	c, err := configuredCatalog(t, `{"provider": {"openai": {"whitelist": ["gpt-4.1", "llama3"]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
	r, err := catalog.Open(catalog.OpenConfig{Catalog: c, Getenv: func(k string) string { return env[k] }, NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Model(provider.ModelRef{Provider: "openai", Model: "gpt-4o"}); err == nil {
		t.Fatal("openai/gpt-4o is served, want it refused: it is not in the whitelist")
	}
	for _, m := range []string{"gpt-4.1", "llama3"} {
		if _, err := r.Model(provider.ModelRef{Provider: "openai", Model: m}); err != nil {
			t.Fatalf("openai/%s: %v, want it served (whitelisted)", m, err)
		}
	}
	// Without a whitelist the local server serves what it has.
	c, err = configuredCatalog(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = catalog.Open(catalog.OpenConfig{Catalog: c, Getenv: func(k string) string { return env[k] }, NoRetry: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Model(provider.ModelRef{Provider: "openai", Model: "llama3"}); err != nil {
		t.Fatalf("openai/llama3 without a whitelist: %v, want it served by the local server", err)
	}
}
