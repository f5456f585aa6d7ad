package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestBuiltinIsValidAndNotShared(t *testing.T) {
	c := Builtin()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := c.Resolve(provider.ModelRef{Provider: "anthropic", Model: "claude-sonnet-4-5"})
	if err != nil || m.ContextWindow != 200000 || !m.Reasoning || !m.Tools {
		t.Fatalf("claude-sonnet-4-5 = %+v, %v", m, err)
	}
	c.Providers["openai"].Models["gpt-4o"] = Model{}
	if m, _ := Builtin().Resolve(provider.ModelRef{Provider: "openai", Model: "gpt-4o"}); m.ContextWindow != 128000 {
		t.Fatal("Builtin returned shared state")
	}
}

func TestFileMergesOverBuiltin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.json")
	os.WriteFile(path, []byte(`{
		"providers": {
			"ollama": {"kind": "openai", "base_url": "http://127.0.0.1:11434/v1", "allow_unlisted": true,
				"models": {"qwen3:8b": {"context_window": 40960, "output_limit": 8192, "tools": true, "reasoning": true,
					"controls": {"temperature": 0.6}, "wire": {"top_k": 20}}}},
			"anthropic": {"models": {"claude-sonnet-4-5": {"context_window": 1000000, "output_limit": 64000, "tools": true, "reasoning": true}}}
		},
		"default": {"provider": "ollama", "model": "qwen3:8b"}
	}`), 0o644)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := c.Resolve(provider.ModelRef{Provider: "anthropic", Model: "claude-sonnet-4-5"}); m.ContextWindow != 1000000 {
		t.Errorf("override lost: %+v", m)
	}
	if _, err := c.Resolve(provider.ModelRef{Provider: "anthropic", Model: "claude-haiku-4-5"}); err != nil {
		t.Errorf("built-in model lost by merging: %v", err)
	}
	if c.Providers["anthropic"].APIKeyEnv != "ANTHROPIC_API_KEY" {
		t.Errorf("built-in provider fields lost: %+v", c.Providers["anthropic"])
	}
	if m, err := c.Resolve(provider.ModelRef{Provider: "ollama", Model: "anything"}); err != nil || m.ContextWindow != Unlisted().ContextWindow {
		t.Errorf("unlisted model = %+v, %v", m, err)
	}
	if c.Default == nil || c.Default.Model != "qwen3:8b" {
		t.Errorf("default = %v", c.Default)
	}
}

func TestBadCatalogsNameTheEntry(t *testing.T) {
	cases := map[string]string{
		`{"providers":{"x":{"kind":"gemini"}}}`:                                                        `provider "x": kind "gemini"`,
		`{"providers":{"x":{"kind":"openai","base_url":"localhost:8080"}}}`:                            `base_url`,
		`{"providers":{"x":{"kind":"openai","models":{"m":{"context_window":10,"output_limit":20}}}}}`: `model "m"`,
		`{"providers":{"x":{"kind":"openai","modles":{}}}}`:                                            `unknown field`,
		`{"default":{"provider":"openai","model":"gpt-9"}}`:                                            `default model: unknown model "gpt-9"`,
		`{"providers":{"x":{"kind":"openai","mid_system":"sometimes"}}}`:                               `mid_system`,
	}
	for src, want := range cases {
		if _, err := Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

func TestApplyKeepsControlsOptionsAndWireSeparateAndRequestWins(t *testing.T) {
	t06, t02 := 0.6, 0.2
	yes := true
	m := Model{OutputLimit: 64000, Reasoning: false,
		Controls: provider.Controls{Temperature: &t06, Stop: []string{"END"}},
		Options:  provider.Options{ParallelToolCalls: &yes, ReasoningEffort: "high"},
		Wire:     map[string]json.RawMessage{"top_k": json.RawMessage(`20`), "min_p": json.RawMessage(`0.05`)},
	}
	req := &provider.Request{Model: provider.ModelRef{Model: "x"},
		Controls: provider.Controls{Temperature: &t02},
		Options:  provider.Options{ReasoningBudget: 5000},
		Wire:     map[string]json.RawMessage{"top_k": json.RawMessage(`40`)},
	}
	out := Apply(m, req)
	if *out.Controls.Temperature != 0.2 || out.Controls.Stop[0] != "END" || out.Controls.MaxOutputTokens != MaxDefaultOutput {
		t.Errorf("controls = %+v", out.Controls)
	}
	if out.Options.ParallelToolCalls == nil || !*out.Options.ParallelToolCalls || out.Options.ReasoningEffort != "" || out.Options.ReasoningBudget != 0 {
		t.Errorf("options = %+v (reasoning must be dropped for a non-reasoning model)", out.Options)
	}
	if string(out.Wire["top_k"]) != "40" || string(out.Wire["min_p"]) != "0.05" {
		t.Errorf("wire = %v", out.Wire)
	}
	if req.Controls.MaxOutputTokens != 0 || len(req.Wire) != 1 {
		t.Error("Apply mutated the caller's request")
	}
}

// A turn read up to its finish part and closed, as the drain's pump reads
// one, is a finished operation (no error.type); one closed before its
// finish is an interrupted one. Before, every turn the drain read was
// counted as interrupted: only a read on to io.EOF recorded it as done.
func TestTurnClosedAfterItsFinishIsNotCountedInterrupted(t *testing.T) {
	reg := metrics.NewRegistry()
	rt, err := metrics.NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(OpenConfig{Getenv: env(nil), Metrics: rt, NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	req := &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hello"}}}
	for _, toFinish := range []bool{true, false} {
		s, err := r.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for toFinish {
			p, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind == provider.PartFinish {
				break
			}
		}
		s.Close()
	}
	mfs, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "gen_ai_client_operation_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			kind := "finished"
			for _, l := range m.GetLabel() {
				if l.GetName() == "error_type" {
					kind = l.GetValue()
				}
			}
			counts[kind] += m.GetHistogram().GetSampleCount()
		}
	}
	if counts["finished"] != 1 || counts["interrupted"] != 1 || len(counts) != 2 {
		t.Fatalf("operations by outcome %v, want one finished and one interrupted", counts)
	}
}

func TestOpenWithoutKeysServesTheOfflineDemo(t *testing.T) {
	r, err := Open(OpenConfig{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Configured(), ","); got != "scripted" {
		t.Fatalf("configured = %s", got)
	}
	if r.Default() != (provider.ModelRef{Provider: "scripted", Model: "demo"}) {
		t.Fatalf("default = %v", r.Default())
	}
	s, err := r.Stream(context.Background(), &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := provider.Collect(s, "scripted")
	if err != nil || !strings.Contains(acc.Message().Text, "offline demo") {
		t.Fatalf("%q %v", acc.Message().Text, err)
	}
	if _, err := r.For(provider.ModelRef{Provider: "openai", Model: "gpt-4o"}); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("For(unconfigured) err = %v", err)
	}
	if p, err := r.For(r.Default()); err != nil || p != provider.Provider(r) {
		t.Fatalf("For(default) = %v, %v", p, err)
	}
	if _, err := r.Stream(context.Background(), &provider.Request{Model: provider.ModelRef{Provider: "openai", Model: "gpt-4o"}}); !errors.Is(err, provider.ErrInvalidRequest) || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("unconfigured provider err = %v", err)
	}
}

func TestOpenFromEnvironmentRoutesToALocalOpenAICompatibleServer(t *testing.T) {
	var body map[string]any
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","choices":[{"index":0,"delta":{"content":"local"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	r, err := Open(OpenConfig{Getenv: env(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "SESSIONRT_MODEL": "openai/llama3.2"})})
	if err != nil {
		t.Fatal(err)
	}
	if r.Default() != (provider.ModelRef{Provider: "openai", Model: "llama3.2"}) {
		t.Fatalf("default = %v", r.Default())
	}
	s, err := r.Stream(context.Background(), &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := provider.Collect(s, "openai")
	if err != nil || acc.Message().Text != "local" {
		t.Fatalf("%q %v", acc.Message().Text, err)
	}
	if body["model"] != "llama3.2" || body["max_tokens"] != float64(Unlisted().OutputLimit) || auth != "" {
		t.Errorf("body model %v max_tokens %v auth %q", body["model"], body["max_tokens"], auth)
	}
}

func TestOpenPrefersAnthropicThenOpenAIAndRejectsBadModelEnv(t *testing.T) {
	r, err := Open(OpenConfig{Getenv: env(map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})})
	if err != nil {
		t.Fatal(err)
	}
	if r.Default().Provider != "anthropic" || strings.Join(r.Configured(), ",") != "anthropic,openai,scripted" {
		t.Errorf("default %v configured %v", r.Default(), r.Configured())
	}
	r, _ = Open(OpenConfig{Getenv: env(map[string]string{"OPENAI_API_KEY": "k"})})
	if r.Default() != (provider.ModelRef{Provider: "openai", Model: "gpt-4.1"}) {
		t.Errorf("default = %v", r.Default())
	}
	if m, err := r.Model(r.Default()); err != nil || m.ContextWindow != 1047576 {
		t.Errorf("model = %+v %v", m, err)
	}
	for _, bad := range []string{"gpt-4o", "anthropic/claude-sonnet-4-5", "openai/gpt-9"} {
		if _, err := Open(OpenConfig{Getenv: env(map[string]string{"OPENAI_API_KEY": "k", "SESSIONRT_MODEL": bad})}); err == nil || !strings.Contains(err.Error(), "SESSIONRT_MODEL") {
			t.Errorf("SESSIONRT_MODEL=%s: err = %v", bad, err)
		}
	}
}

func TestPartitionSplitsAISDKShapedOptionsIntoTheThreeDomains(t *testing.T) {
	c, o, w, err := Partition(map[string]json.RawMessage{
		"temperature":          json.RawMessage(`0.3`),
		"topP":                 json.RawMessage(`0.9`),
		"maxOutputTokens":      json.RawMessage(`8000`),
		"stopSequences":        json.RawMessage(`["END"]`),
		"reasoningEffort":      json.RawMessage(`"high"`),
		"thinking":             json.RawMessage(`{"type":"enabled","budgetTokens":12000}`),
		"parallelToolCalls":    json.RawMessage(`false`),
		"top_k":                json.RawMessage(`40`),
		"chat_template_kwargs": json.RawMessage(`{"enable_thinking":true}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if *c.Temperature != 0.3 || *c.TopP != 0.9 || c.MaxOutputTokens != 8000 || c.Stop[0] != "END" {
		t.Errorf("controls = %+v", c)
	}
	if o.ReasoningEffort != "high" || o.ReasoningBudget != 12000 || o.ParallelToolCalls == nil || *o.ParallelToolCalls {
		t.Errorf("options = %+v", o)
	}
	if len(w) != 2 || string(w["top_k"]) != "40" || string(w["chat_template_kwargs"]) != `{"enable_thinking":true}` {
		t.Errorf("wire = %v", w)
	}
	if _, _, _, err := Partition(map[string]json.RawMessage{"temperature": json.RawMessage(`"hot"`)}); err == nil || !strings.Contains(err.Error(), `"temperature"`) {
		t.Errorf("bad temperature err = %v", err)
	}
}

func TestCatalogParamsArePartitionedOnLoad(t *testing.T) {
	c, err := Parse([]byte(`{"providers":{"vllm":{"kind":"openai","base_url":"http://127.0.0.1:8000/v1",
		"models":{"qwen":{"context_window":32768,"output_limit":8192,"tools":true,
			"params":{"temperature":0.7,"top_k":20},"controls":{"temperature":0.1}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Resolve(provider.ModelRef{Provider: "vllm", Model: "qwen"})
	if *m.Controls.Temperature != 0.1 || string(m.Wire["top_k"]) != "20" || m.Params != nil {
		t.Fatalf("model = %+v", m)
	}
	if _, err := Parse([]byte(`{"providers":{"x":{"kind":"openai","models":{"m":{"params":{"topP":"x"}}}}}}`)); err == nil || !strings.Contains(err.Error(), `model "m": option "topP"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestExampleLocalServersCatalogOpens(t *testing.T) {
	c, err := Load("testdata/local_servers.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(OpenConfig{Catalog: c, Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	// Keyless local servers and the scripted ones are configured; vllm wants
	// VLLM_API_KEY, which is unset; the hosted built-ins have no keys.
	if got := strings.Join(r.Configured(), ","); got != "chaos,llamacpp,lmstudio,ollama,scripted" {
		t.Errorf("configured = %s", got)
	}
	if r.Default() != (provider.ModelRef{Provider: "ollama", Model: "qwen3:8b"}) {
		t.Errorf("default = %v", r.Default())
	}
	m, _ := r.Model(r.Default())
	if *m.Controls.Temperature != 0.6 || string(m.Wire["top_k"]) != "20" {
		t.Errorf("ollama model = %+v", m)
	}
}

func TestOpenLoadsTheCatalogNamedBySESSIONRT_CATALOG(t *testing.T) {
	r, err := Open(OpenConfig{Getenv: env(map[string]string{"SESSIONRT_CATALOG": "testdata/local_servers.json"})})
	if err != nil {
		t.Fatal(err)
	}
	if r.Default().Provider != "ollama" {
		t.Errorf("default = %v", r.Default())
	}
	if _, err := Open(OpenConfig{Getenv: env(map[string]string{"SESSIONRT_CATALOG": "testdata/missing.json"})}); err == nil || !strings.Contains(err.Error(), "SESSIONRT_CATALOG") {
		t.Errorf("missing catalog err = %v", err)
	}
}

// Every failed turn is logged with its class and the provider's own message,
// and every retried attempt with its class, attempt and delay.
func TestFailedTurnsAndRetriesAreLoggedWithClassAndMessage(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if first {
			w.WriteHeader(503)
			io.WriteString(w, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`)
			return
		}
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}`)
	}))
	defer srv.Close()
	var logs strings.Builder
	var lmu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		lmu.Lock()
		defer lmu.Unlock()
		return logs.Write(p)
	}), nil))
	r, err := Open(OpenConfig{Getenv: env(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "SESSIONRT_MODEL": "openai/local"}),
		Logger: log, Retry: provider.RetryConfig{Sleep: func(context.Context, time.Duration) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Stream(context.Background(), &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}})
	if !errors.Is(err, provider.ErrContextOverflow) {
		t.Fatalf("err = %v", err)
	}
	lmu.Lock()
	out := logs.String()
	lmu.Unlock()
	for _, want := range []string{
		`msg="provider attempt failed, retrying" class=overloaded message="Loading model" status=503 type=unavailable_error attempt=2 delay=2s`,
		`level=WARN msg="provider turn failed" provider=openai model=local class=context_overflow message="Context size has been exceeded." status=500 type=server_error`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A turn that fails inside its stream is logged once, when the error ends it.
func TestAFailureInsideTheStreamIsLoggedOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "error: {\"code\":400,\"message\":\"the request exceeds the available context size. try increasing the context size or enable context shift\",\"type\":\"invalid_request_error\"}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	var logs strings.Builder
	r, err := Open(OpenConfig{Getenv: env(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "SESSIONRT_MODEL": "openai/local"}),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Stream(context.Background(), &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		if _, err := s.Next(); !errors.Is(err, provider.ErrContextOverflow) {
			t.Fatalf("err = %v", err)
		}
	}
	if n := strings.Count(logs.String(), `class=context_overflow message="the request exceeds the available context size. try increasing the context size or enable context shift" status=400 type=invalid_request_error`); n != 1 {
		t.Fatalf("%d log lines:\n%s", n, logs.String())
	}
}

// TestIdleTimeoutIsAProviderOption: idle_timeout on a catalog provider is the one way to
// bound a silent stream (the spec's default is none): set, a server that sends one
// delta and goes silent ends the turn with a retryable error; a bad value is refused
// naming the provider.
func TestIdleTimeoutIsAProviderOption(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // silent until the client gives up
	}))
	defer srv.Close()
	c, err := Parse([]byte(`{"providers":{"local":{"kind":"openai","base_url":"` + srv.URL + `/v1","allow_unlisted":true,"idle_timeout":"200ms"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(OpenConfig{Catalog: c, Getenv: env(nil), NoRetry: true})
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
	if _, err := Parse([]byte(`{"providers":{"local":{"kind":"openai","idle_timeout":"soon"}}}`)); err == nil || !strings.Contains(err.Error(), `provider "local": idle_timeout "soon"`) {
		t.Fatalf("bad idle_timeout: %v", err)
	}
}
