package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
)

// fakeChat is a local OpenAI-compatible server: it answers every chat
// completion with text and records what each request carried.
type fakeChat struct {
	// answer, when set, chooses the answer from the request's text (every
	// string of its body, joined); default a fixed greeting.
	answer   func(text string) string
	mu       sync.Mutex
	requests []fakeChatRequest
}

type fakeChatRequest struct {
	Auth, Header, Model string
	Temperature         *float64
	// Body is the whole decoded request body; Text every string in it.
	Body map[string]any
	Text string
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Model       string   `json:"model"`
		Temperature *float64 `json:"temperature"`
	}
	_ = json.Unmarshal(raw, &body)
	var all map[string]any
	_ = json.Unmarshal(raw, &all)
	text := strings.Join(bodyTexts(all, nil), "\n")
	f.mu.Lock()
	f.requests = append(f.requests, fakeChatRequest{Auth: r.Header.Get("Authorization"), Header: r.Header.Get("X-Team"), Model: body.Model,
		Temperature: body.Temperature, Body: all, Text: text})
	f.mu.Unlock()
	answer := "hello from the configured model"
	if f.answer != nil {
		answer = f.answer(text)
	}
	content, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", "text/event-stream")
	for _, chunk := range []string{
		`{"id":"c1","object":"chat.completion.chunk","model":"` + body.Model + `","choices":[{"index":0,"delta":{"role":"assistant","content":` + string(content) + `},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"` + body.Model + `","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		`[DONE]`,
	} {
		fmt.Fprintf(w, "data: %s\n\n", chunk)
	}
}

// bodyTexts collects every string of a decoded JSON value, in order.
func bodyTexts(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = bodyTexts(e, out)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = bodyTexts(v[k], out)
		}
	}
	return out
}

func (f *fakeChat) seen() []fakeChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeChatRequest(nil), f.requests...)
}

// A provider configured in opencode.json (an OpenAI-compatible base URL, an
// API key from {env:}, a header, a model with limits and options) serves
// the sessions: it is the default model, listed by the catalog, and its
// requests carry the key, the header and the model's options.
func TestConfiguredOpenAICompatibleProviderServesSessions(t *testing.T) {
	fake := &fakeChat{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cf := newConfigured(t)
	cf.global(t, `{
		// a team's local model server
		"provider": {
			"local": {
				"npm": "@ai-sdk/openai-compatible",
				"name": "Team LLM",
				"options": {"baseURL": "`+srv.URL+`/v1", "apiKey": "{env:TEAM_KEY}", "headers": {"X-Team": "core"}},
				"models": {"coder-7b": {"name": "Coder 7B", "limit": {"context": 32000, "output": 4000}, "options": {"temperature": 0.25}}},
			},
		},
		"model": "local/coder-7b",
		"disabled_providers": ["openai"],
	}`)
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true,
		Env: map[string]string{"HOME": cf.home, "TEAM_KEY": "sk-team-secret", "OPENAI_API_KEY": "sk-not-used"}})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Model.ProviderID != "local" || s.Model.ID != "coder-7b" {
		t.Fatalf("session model %+v, want the configured local/coder-7b", s.Model)
	}
	prompt(t, c, s.ID, "hi")
	out, err := c.WaitOutcome(ctx, s.ID)
	if err != nil || out.Error != "" {
		t.Fatalf("wait: %+v %v", out, err)
	}
	msgs, err := c.Messages(ctx, s.ID, client.MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(msgs), "hello from the configured model") {
		t.Fatalf("messages %+v lack the fake model's answer", msgs)
	}
	reqs := fake.seen()
	if len(reqs) != 1 {
		t.Fatalf("%d requests reached the fake server, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Auth != "Bearer sk-team-secret" || r.Header != "core" || r.Model != "coder-7b" || r.Temperature == nil || *r.Temperature != 0.25 {
		t.Fatalf("request auth %q header %q model %q temperature %v", r.Auth, r.Header, r.Model, r.Temperature)
	}

	var provs struct {
		All []struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Models map[string]struct {
				Name  string `json:"name"`
				Limit struct {
					Context int `json:"context"`
				} `json:"limit"`
			} `json:"models"`
		} `json:"all"`
	}
	if code := v1(t, rt, "GET", "/provider?directory="+filepath.ToSlash(cf.project), "", &provs); code != 200 {
		t.Fatalf("GET /provider: %d", code)
	}
	var ids []string
	for _, p := range provs.All {
		ids = append(ids, p.ID)
		if p.ID == "local" && (p.Models["coder-7b"].Limit.Context != 32000 || p.Models["coder-7b"].Name != "Coder 7B") {
			t.Fatalf("local provider listed as %+v", p)
		}
	}
	if !strings.Contains(strings.Join(ids, ","), "local") || strings.Contains(strings.Join(ids, ","), "openai") {
		t.Fatalf("providers listed %v, want local and not the disabled openai (%+v)", ids, provs)
	}
}

// serve knows each model's context window from the catalog: a configured
// model whose limits leave little room compacts before the turn that would
// not fit, without waiting for the provider to refuse it. Before, node gave
// the drain no window and the summary request never came.
func TestConfiguredContextWindowCompactsBeforeTheTurn(t *testing.T) {
	long := strings.Repeat("A long answer that fills the history. ", 1300) // ~12k tokens
	fake := &fakeChat{answer: func(text string) string {
		switch {
		case strings.Contains(text, "You write the working summary of an AI coding session"):
			return "## Goal\nthe summary"
		case strings.Contains(text, "<conversation-summary>"):
			return "answered after the compaction"
		}
		return long
	}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cf := newConfigured(t)
	// Budget: 30,000 - max(output 1,000, buffer 20,000) = 10,000 tokens:
	// the second prompt's request (~12k) does not fit, and its older turn
	// is more than the 8,000 tokens a compaction keeps.
	cf.global(t, `{
		"provider": {"local": {"npm": "@ai-sdk/openai-compatible",
			"options": {"baseURL": "`+srv.URL+`/v1"},
			"models": {"small": {"limit": {"context": 30000, "output": 1000}}}}},
		"model": "local/small",
	}`)
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"first", "second"} {
		prompt(t, c, s.ID, text)
		if out, err := c.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" {
			t.Fatalf("wait after %q: %+v %v", text, out, err)
		}
	}
	var summaries, rebuilt int
	for _, r := range fake.seen() {
		if strings.Contains(r.Text, "You write the working summary of an AI coding session") {
			summaries++
		} else if strings.Contains(r.Text, "<conversation-summary>") {
			rebuilt++
		}
	}
	if summaries != 1 || rebuilt != 1 {
		t.Fatalf("%d summary requests and %d requests after a summary (of %d), want 1 and 1", summaries, rebuilt, len(fake.seen()))
	}
}

// A model variant a client selects reaches the provider request: at
// creation and by a model switch (V2), per prompt (V1, as OpenCode's TUI
// sends it), from the variants a reasoning model has by default and the
// ones configured; a variant the model lacks is refused with the known
// names. Before, the variant was dropped at the API.
func TestModelVariantReachesTheProviderRequest(t *testing.T) {
	fake := &fakeChat{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cf := newConfigured(t)
	cf.global(t, `{
		"provider": {"local": {"npm": "@ai-sdk/openai-compatible",
			"options": {"baseURL": "`+srv.URL+`/v1"},
			"models": {"thinker": {"reasoning": true, "options": {"temperature": 0.7},
				"variants": {"careful": {"temperature": 0.1, "reasoningEffort": "high", "seed": 7}, "medium": {"disabled": true}}}}}},
		"model": "local/thinker",
	}`)
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true})
	c := newClient(t, rt)
	ctx := ctxT(t)
	last := func() map[string]any {
		t.Helper()
		seen := fake.seen()
		if len(seen) == 0 {
			t.Fatal("no request reached the fake server")
		}
		return seen[len(seen)-1].Body
	}
	turn := func(id, text string) map[string]any {
		t.Helper()
		prompt(t, c, id, text)
		if out, err := c.WaitOutcome(ctx, id); err != nil || out.Error != "" {
			t.Fatalf("wait: %+v %v", out, err)
		}
		return last()
	}

	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project},
		Model: &wire.ModelRef{ProviderID: "local", ID: "thinker", Variant: "high"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Model.Variant != "high" {
		t.Fatalf("created session's model %+v, want variant high", s.Model)
	}
	if b := turn(s.ID, "one"); b["reasoning_effort"] != "high" || b["temperature"] != 0.7 {
		t.Fatalf("request with variant high: reasoning_effort %v temperature %v, want high and the model's 0.7", b["reasoning_effort"], b["temperature"])
	}
	if err := c.SwitchModel(ctx, s.ID, wire.ModelRef{ProviderID: "local", ID: "thinker", Variant: "careful"}); err != nil {
		t.Fatal(err)
	}
	if b := turn(s.ID, "two"); b["reasoning_effort"] != "high" || b["temperature"] != 0.1 || b["seed"] != 7.0 {
		t.Fatalf("request with the configured variant careful: %v", b)
	}
	if err := c.SwitchModel(ctx, s.ID, wire.ModelRef{ProviderID: "local", ID: "thinker"}); err != nil {
		t.Fatal(err)
	}
	if b := turn(s.ID, "three"); b["reasoning_effort"] != nil || b["temperature"] != 0.7 {
		t.Fatalf("request without a variant: %v", b)
	}

	// V1, as OpenCode's TUI and run send it: the variant rides on the prompt.
	body := `{"model": {"providerID": "local", "modelID": "thinker"}, "variant": "low", "parts": [{"type": "text", "text": "four"}]}`
	var reply struct {
		Info struct {
			ID string `json:"id"`
		} `json:"info"`
	}
	if code := v1(t, rt, "POST", "/session/"+s.ID+"/message", body, &reply); code != 200 {
		t.Fatalf("V1 prompt with a variant: %d", code)
	}
	if b := last(); b["reasoning_effort"] != "low" {
		t.Fatalf("V1 prompt with variant low: reasoning_effort %v", b["reasoning_effort"])
	}
	var msgs []struct {
		Info struct {
			Role  string `json:"role"`
			Model struct {
				Variant string `json:"variant"`
			} `json:"model"`
		} `json:"info"`
	}
	if code := v1(t, rt, "GET", "/session/"+s.ID+"/message", "", &msgs); code != 200 || len(msgs) == 0 {
		t.Fatalf("V1 messages: %d %d", code, len(msgs))
	}
	if u := msgs[len(msgs)-2].Info; u.Role != "user" || u.Model.Variant != "low" {
		t.Fatalf("V1 user message %+v, want its model's variant low", u)
	}

	// The catalog lists the variants; a disabled default is gone.
	var provs struct {
		All []struct {
			ID     string `json:"id"`
			Models map[string]struct {
				Variants map[string]map[string]any `json:"variants"`
			} `json:"models"`
		} `json:"all"`
	}
	if code := v1(t, rt, "GET", "/provider?directory="+filepath.ToSlash(cf.project), "", &provs); code != 200 {
		t.Fatalf("GET /provider: %d", code)
	}
	var names []string
	for _, p := range provs.All {
		if p.ID == "local" {
			for name := range p.Models["thinker"].Variants {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "careful,high,low" {
		t.Fatalf("variants listed %v, want careful, high, low", names)
	}

	err = c.SwitchModel(ctx, s.ID, wire.ModelRef{ProviderID: "local", ID: "thinker", Variant: "medium"})
	if err == nil || !strings.Contains(err.Error(), `no variant "medium" (variants: careful, high, low)`) {
		t.Fatalf("switch to a disabled variant: %v, want a refusal naming careful, high, low", err)
	}

	// The selection is durable: a restarted server reads it back.
	rt.Stop()
	rt = cf.start(t, apitest.Options{ConfiguredProviders: true, Data: rt.Node.Config.Data})
	c = newClient(t, rt)
	if got, err := c.Session(ctx, s.ID); err != nil || got.Model.Variant != "low" {
		t.Fatalf("after a restart the session's model is %+v (%v), want variant low", got.Model, err)
	}
	if b := turn(s.ID, "five"); b["reasoning_effort"] != "low" {
		t.Fatalf("after a restart: reasoning_effort %v, want low", b["reasoning_effort"])
	}
}

// An agent's configuration shapes the provider request: its prompt is in
// the system text (and is retracted when the session switches to an agent
// without one), its temperature, top_p and options are sent over the
// model's defaults, and its model is the one a session created with it, or
// switched to it, runs on. Before, only its turn limit and permissions were
// used.
func TestAgentConfigurationShapesTheProviderRequest(t *testing.T) {
	fake := &fakeChat{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cf := newConfigured(t)
	cf.global(t, `{
		"provider": {"local": {"npm": "@ai-sdk/openai-compatible",
			"options": {"baseURL": "`+srv.URL+`/v1"},
			"models": {"general": {"options": {"temperature": 0.7}}, "reviewing": {"reasoning": true, "options": {"temperature": 0.5, "seed": 1}}}}},
		"model": "local/general",
		"agent": {"reviewer": {"mode": "primary", "model": "local/reviewing",
			"prompt": "You review code. REVIEWER-PROMPT",
			"temperature": 0.2, "top_p": 0.9, "options": {"reasoningEffort": "low", "seed": 11}}},
	}`)
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true})
	c := newClient(t, rt)
	ctx := ctxT(t)
	turn := func(id, text string) fakeChatRequest {
		t.Helper()
		prompt(t, c, id, text)
		if out, err := c.WaitOutcome(ctx, id); err != nil || out.Error != "" {
			t.Fatalf("wait: %+v %v", out, err)
		}
		seen := fake.seen()
		return seen[len(seen)-1]
	}
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}, Agent: "reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Model.ID != "reviewing" {
		t.Fatalf("session created with the reviewer agent runs on %+v, want its model local/reviewing", s.Model)
	}
	r := turn(s.ID, "one")
	b := r.Body
	if r.Model != "reviewing" || b["temperature"] != 0.2 || b["top_p"] != 0.9 || b["reasoning_effort"] != "low" || b["seed"] != 11.0 {
		t.Fatalf("reviewer's request: model %q body %v, want reviewing, temperature 0.2, top_p 0.9, reasoning_effort low, seed 11", r.Model, b)
	}
	if !strings.Contains(r.Text, "You review code. REVIEWER-PROMPT") {
		t.Fatalf("reviewer's request lacks the agent's prompt: %.300q", r.Text)
	}

	if err := c.SwitchAgent(ctx, s.ID, "build"); err != nil {
		t.Fatal(err)
	}
	r = turn(s.ID, "two")
	b = r.Body
	if r.Model != "reviewing" || b["temperature"] != 0.5 || b["top_p"] != nil || b["seed"] != 1.0 {
		t.Fatalf("build's request on the same model: model %q body %v, want the model's own temperature 0.5 and seed 1", r.Model, b)
	}
	if !strings.Contains(r.Text, "The previous agent's instructions no longer apply.") {
		t.Fatalf("switching to build did not retract the reviewer's prompt: %.600q", r.Text)
	}

	if err := c.SwitchModel(ctx, s.ID, wire.ModelRef{ProviderID: "local", ID: "general"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SwitchAgent(ctx, s.ID, "reviewer"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Session(ctx, s.ID); err != nil || got.Model.ID != "reviewing" || got.Agent != "reviewer" {
		t.Fatalf("after switching back to reviewer: %+v %v, want its model reviewing", got, err)
	}
}
