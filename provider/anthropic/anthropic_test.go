package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
)

type server struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.headers = append(s.headers, r.Header.Clone())
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) body(t *testing.T, i int) map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(s.bodies[i], &m); err != nil {
		t.Fatalf("request body is not JSON: %v: %s", err, s.bodies[i])
	}
	return m
}

func replay(t *testing.T, name string) http.HandlerFunc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for _, ev := range strings.SplitAfter(string(b), "\n\n") {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}
}

func errorReply(t *testing.T, status int, name string, hdr map[string]string) http.HandlerFunc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(b)
	}
}

func newAdapter(t *testing.T, url string) *Adapter {
	t.Helper()
	a, err := New(Config{BaseURL: url, APIKey: "sk-ant-test"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func basicRequest() *provider.Request {
	return &provider.Request{
		Model:    provider.ModelRef{Provider: "anthropic", Model: "claude-sonnet-4-5"},
		System:   "BASELINE SYSTEM CONTEXT",
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "Hi"}},
	}
}

func collect(t *testing.T, a provider.Provider, req *provider.Request) ([]provider.Part, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := a.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var parts []provider.Part
	for {
		p, err := s.Next()
		if errors.Is(err, io.EOF) {
			return parts, nil
		}
		if err != nil {
			return parts, err
		}
		parts = append(parts, p)
	}
}

func kinds(parts []provider.Part) string {
	var b []string
	for _, p := range parts {
		b = append(b, p.Kind.String())
	}
	return strings.Join(b, ",")
}

func accumulate(parts []provider.Part) *provider.Accumulator {
	a := &provider.Accumulator{Provider: Kind}
	for _, p := range parts {
		a.Add(p)
	}
	return a
}

func TestTextStreamWithUsageAndCacheMarkedBaseline(t *testing.T) {
	srv := newServer(t, replay(t, "text.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(parts), "metadata,metadata,text,text,usage,finish"; got != want {
		t.Fatalf("parts = %s, want %s", got, want)
	}
	acc := accumulate(parts)
	if acc.Message().Text != "Hello! How can I help?" || acc.Finish != provider.FinishStop {
		t.Errorf("text %q finish %q", acc.Message().Text, acc.Finish)
	}
	if want := (provider.Usage{InputTokens: 12 + 2048, OutputTokens: 15, CacheReadTokens: 2048}); acc.Usage != want {
		t.Errorf("usage = %+v, want %+v", acc.Usage, want)
	}
	if srv.paths[0] != "/v1/messages" {
		t.Errorf("path = %s", srv.paths[0])
	}
	h := srv.headers[0]
	if h.Get("x-api-key") != "sk-ant-test" || h.Get("anthropic-version") != APIVersion {
		t.Errorf("headers = %v", h)
	}
	body := srv.body(t, 0)
	if body["model"] != "claude-sonnet-4-5" || body["stream"] != true || body["max_tokens"] != 8192.0 {
		t.Errorf("body = %v", body)
	}
	sys := body["system"].([]any)[0].(map[string]any)
	if sys["text"] != "BASELINE SYSTEM CONTEXT" || sys["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Errorf("system block = %v, want the baseline marked with cache_control", sys)
	}
	if _, ok := body["tools"]; ok {
		t.Errorf("tools sent without tools: %v", body["tools"])
	}
}

func TestThinkingAndParallelToolUse(t *testing.T) {
	srv := newServer(t, replay(t, "thinking_tools.sse"))
	req := basicRequest()
	req.Tools = []provider.Tool{{Name: "read", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}, {Name: "bash"}}
	req.Options.ReasoningEffort = "medium"
	req.Controls.MaxOutputTokens = 32000
	temp := 0.3
	req.Controls.Temperature = &temp
	parts, err := collect(t, newAdapter(t, srv.URL), req)
	if err != nil {
		t.Fatal(err)
	}
	want := "metadata,metadata,reasoning,reasoning,metadata,text,tool-input-start,tool-input-delta,tool-input-delta,tool-call,tool-input-start,tool-input-delta,tool-input-delta,tool-call,usage,finish"
	if got := kinds(parts); got != want {
		t.Fatalf("parts = %s\nwant    %s", got, want)
	}
	acc := accumulate(parts)
	m := acc.Message()
	if len(m.Reasoning) != 1 || m.Reasoning[0].Text != "I need to read both files before answering." ||
		m.Reasoning[0].Signature != "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" || m.Reasoning[0].Provider != Kind {
		t.Errorf("reasoning = %+v", m.Reasoning)
	}
	if m.Text != "Reading both files." || len(m.ToolCalls) != 2 {
		t.Fatalf("message = %+v", m)
	}
	if c := m.ToolCalls[0]; c.ID != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || c.Name != "read" || string(c.Args) != `{"path": "README.md"}` {
		t.Errorf("call 0 = %+v %s", c, c.Args)
	}
	if c := m.ToolCalls[1]; c.Name != "bash" || string(c.Args) != `{"command": "go test ./..."}` {
		t.Errorf("call 1 = %+v %s", c, c.Args)
	}
	if acc.Finish != provider.FinishToolCalls {
		t.Errorf("finish = %q", acc.Finish)
	}
	if want := (provider.Usage{InputTokens: 3472, OutputTokens: 182, CacheWriteTokens: 3000}); acc.Usage != want {
		t.Errorf("usage = %+v, want %+v", acc.Usage, want)
	}
	body := srv.body(t, 0)
	th := body["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != 16384.0 {
		t.Errorf("thinking = %v", th)
	}
	if _, ok := body["temperature"]; ok {
		t.Errorf("temperature sent with extended thinking")
	}
	if tc := body["tool_choice"].(map[string]any); tc["type"] != "auto" {
		t.Errorf("tool_choice = %v", tc)
	}
	tools := body["tools"].([]any)
	if tools[1].(map[string]any)["input_schema"].(map[string]any)["type"] != "object" {
		t.Errorf("default schema = %v", tools[1])
	}
}

func TestRedactedThinkingIsKeptForReplay(t *testing.T) {
	srv := newServer(t, replay(t, "redacted.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	m := accumulate(parts).Message()
	if len(m.Reasoning) != 1 || m.Reasoning[0].Redacted == "" || m.Text != "Done." {
		t.Fatalf("message = %+v", m)
	}
}

func TestRefusalIsAContentFilterFinish(t *testing.T) {
	srv := newServer(t, replay(t, "refusal.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	if acc := accumulate(parts); acc.Finish != provider.FinishContentFilter {
		t.Fatalf("finish = %q", acc.Finish)
	}
}

func TestHTTPErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		file       string
		hdr        map[string]string
		kind       provider.Kind
		retryAfter time.Duration
	}{
		{"prompt too long", 400, "error_prompt_too_long.json", nil, provider.KindContextOverflow, 0},
		{"request too large", 413, "error_413.json", nil, provider.KindContextOverflow, 0},
		{"invalid request", 400, "error_400.json", nil, provider.KindInvalidRequest, 0},
		{"bad key", 401, "error_401.json", nil, provider.KindAuth, 0},
		{"rate limit", 429, "error_429.json", map[string]string{"Retry-After": "17", "anthropic-ratelimit-input-tokens-remaining": "0"}, provider.KindRateLimited, 17 * time.Second},
		{"overloaded", 529, "error_529.json", nil, provider.KindOverloaded, 0},
		{"api error", 500, "error_500.json", nil, provider.KindServerError, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, errorReply(t, c.status, c.file, c.hdr))
			_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != c.kind || pe.Status != c.status || pe.RetryAfter != c.retryAfter {
				t.Fatalf("err = %v, want kind %s status %d retry-after %s", err, c.kind, c.status, c.retryAfter)
			}
			if pe.Message == "" || pe.Type == "" {
				t.Errorf("error lacks the provider's message or type: %+v", pe)
			}
		})
	}
}

func TestOverloadedErrorEventBeforeOutputIsRetried(t *testing.T) {
	var mu sync.Mutex
	n := 0
	over, text := replay(t, "overloaded.sse"), replay(t, "text.sse")
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			over(w, r)
		} else {
			text(w, r)
		}
	})
	// Without retry: the error event is classified.
	_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if !errors.Is(err, provider.ErrOverloaded) || !strings.Contains(err.Error(), "overloaded_error") {
		t.Fatalf("err = %v", err)
	}
	mu.Lock()
	n = 0
	mu.Unlock()
	var delays []time.Duration
	p := provider.Retry(newAdapter(t, srv.URL), provider.RetryConfig{Sleep: func(_ context.Context, d time.Duration) error {
		delays = append(delays, d)
		return nil
	}})
	parts, err := collect(t, p, basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	if accumulate(parts).Message().Text != "Hello! How can I help?" || len(delays) != 1 || delays[0] != 2*time.Second {
		t.Fatalf("parts %s delays %v", kinds(parts), delays)
	}
}

func TestStreamCutMidEventIsRetryableAndQuoted(t *testing.T) {
	srv := newServer(t, replay(t, "cut.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.KindRetryable || !strings.Contains(pe.Snippet, "text_del") {
		t.Fatalf("err = %v", err)
	}
	if accumulate(parts).Message().Text != "Half a sen" {
		t.Errorf("parts = %s", kinds(parts))
	}
}

func TestConnectionResetMidStreamIsRetryable(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		b, _ := os.ReadFile("testdata/text.sse")
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 100000\r\n\r\n")
		buf.Write(b[:len(b)/2])
		buf.Flush()
	})
	_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if provider.KindOf(err) != provider.KindRetryable {
		t.Fatalf("err = %v", err)
	}
}

func TestMalformedEventsQuoteTheOffendingBytes(t *testing.T) {
	cases := []struct{ file, msg, quoted string }{
		{"bad_json.sse", "not valid JSON", `\"text\":\"x\"}`},
		{"bad_input.sse", "input is not valid JSON", `tru`},
		{"unknown_stop.sse", "unknown stop_reason", `"teapot"`},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			srv := newServer(t, replay(t, c.file))
			_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != provider.KindMalformed || !strings.Contains(pe.Message, c.msg) || !strings.Contains(pe.Snippet, c.quoted) {
				t.Fatalf("err = %v, want malformed %q quoting %q", err, c.msg, c.quoted)
			}
		})
	}
}

func TestCancelClosesTheHTTPStreamAtOnce(t *testing.T) {
	serverSawClose := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(serverSawClose)
		case <-time.After(10 * time.Second):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := newAdapter(t, srv.URL).Stream(ctx, basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p, err := s.Next(); err != nil || p.Text != "Hi" {
		t.Fatalf("first part = %+v %v", p, err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, provider.ErrInterrupted) {
			t.Fatalf("Next after cancel = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next blocked 5s after cancel")
	}
	select {
	case <-serverSawClose:
	case <-time.After(5 * time.Second):
		t.Fatal("server did not see the connection close")
	}
}

func TestHistoryLoweringMergesUserSideAndReplaysSignedThinking(t *testing.T) {
	a, _ := New(Config{})
	req := &provider.Request{
		Model:  provider.ModelRef{Model: "claude-sonnet-4-5"},
		System: "BASE",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "fix it", Attachments: []provider.Attachment{{Name: "s.png", MediaType: "image/png", Data: []byte("png")}}},
			{Role: provider.RoleAssistant, Text: "looking",
				Reasoning: []provider.Reasoning{
					{Text: "plan", Signature: "sig1", Provider: Kind},
					{Text: "foreign", Provider: "openai"},
					{Redacted: "opaque", Provider: Kind},
				},
				ToolCalls: []provider.ToolCall{{ID: "toolu_1", Name: "read", Args: json.RawMessage(`{"path":"a"}`)}, {ID: "toolu_2", Name: "bash"}}},
			{Role: provider.RoleSystem, Text: "new date"},
			{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: "toolu_1", Output: "contents"}},
			{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: "toolu_2", IsError: true}},
			{Role: provider.RoleAssistant}, // empty turn: dropped
			{Role: provider.RoleUser, Text: "and then?"},
		},
		// Last allowed step: no tools offered.
		ToolChoice: provider.ToolChoiceNone,
	}
	b, err := a.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
		Tools      []map[string]any `json:"tools"`
		ToolChoice map[string]any   `json:"tool_choice"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 3 {
		t.Fatalf("messages = %d, want 3 (user, assistant, merged user): %s", len(body.Messages), b)
	}
	if c := body.Messages[0].Content; c[0]["text"] != "fix it" || c[1]["type"] != "image" || c[1]["source"].(map[string]any)["data"] != "cG5n" {
		t.Errorf("user 0 = %v", c)
	}
	asst := body.Messages[1].Content
	if len(asst) != 5 || asst[0]["type"] != "thinking" || asst[0]["signature"] != "sig1" || asst[1]["type"] != "redacted_thinking" ||
		asst[2]["text"] != "looking" || asst[3]["type"] != "tool_use" || asst[4]["input"].(map[string]any) == nil {
		t.Errorf("assistant = %v", asst)
	}
	u := body.Messages[2].Content
	if len(u) != 4 || u[0]["type"] != "tool_result" || u[0]["tool_use_id"] != "toolu_1" || u[1]["is_error"] != true || u[1]["content"] != "(no output)" {
		t.Fatalf("merged user = %v", u)
	}
	if u[2]["text"] != "<system-update>\nnew date\n</system-update>" || u[3]["text"] != "and then?" {
		t.Errorf("system update / text order = %v", u)
	}
	if u[3]["cache_control"] == nil {
		t.Errorf("last block lacks the conversation cache breakpoint: %v", u[3])
	}
	if len(body.Tools) != 2 || body.Tools[0]["name"] != "bash" || body.ToolChoice["type"] != "none" {
		t.Errorf("tools %v choice %v: history with tool blocks needs declared tools and choice none", body.Tools, body.ToolChoice)
	}
}

func TestBadRequestsAreRefusedBeforeSending(t *testing.T) {
	a, _ := New(Config{BaseURL: "http://127.0.0.1:1"})
	req := &provider.Request{Model: provider.ModelRef{Model: "m"}, Messages: []provider.Message{{Role: provider.RoleUser,
		Attachments: []provider.Attachment{{Name: "a.bin", MediaType: "application/octet-stream"}}}}}
	if _, err := a.Stream(context.Background(), req); !errors.Is(err, provider.ErrInvalidRequest) || !strings.Contains(err.Error(), "a.bin") {
		t.Fatalf("err = %v", err)
	}
	req = &provider.Request{Model: provider.ModelRef{Model: "m"}, Messages: []provider.Message{{Role: "robot"}}}
	if _, err := a.Stream(context.Background(), req); !errors.Is(err, provider.ErrInvalidRequest) || !strings.Contains(err.Error(), "robot") {
		t.Fatalf("err = %v", err)
	}
}

func TestUnreachableServerIsRetryable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := collect(t, newAdapter(t, url), basicRequest())
	if !errors.Is(err, provider.ErrRetryable) {
		t.Fatalf("err = %v", err)
	}
}

func TestThinkingIsOmittedWhenTheToolLoopInProgressHasNoSignedThinking(t *testing.T) {
	a, _ := New(Config{})
	req := &provider.Request{
		Model:    provider.ModelRef{Model: "claude-sonnet-4-5"},
		Options:  provider.Options{ReasoningEffort: "high"},
		Controls: provider.Controls{MaxOutputTokens: 64000},
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "go"},
			// Produced by another provider's model before a switch: no signature.
			{Role: provider.RoleAssistant, Reasoning: []provider.Reasoning{{Text: "x", Provider: "openai"}},
				ToolCalls: []provider.ToolCall{{ID: "c1", Name: "bash", Args: json.RawMessage(`{}`)}}},
			{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: "c1", Output: "ok"}},
		},
		Tools: []provider.Tool{{Name: "bash"}},
	}
	b, err := a.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"thinking"`) {
		t.Fatalf("thinking enabled over an unsigned tool turn: %s", b)
	}
	// With the signed block kept, thinking stays on.
	req.Messages[1].Reasoning = []provider.Reasoning{{Text: "x", Signature: "sig", Provider: Kind}}
	b, _ = a.Encode(req)
	if !strings.Contains(string(b), `"thinking":{"type":"enabled","budget_tokens":32768}`) {
		t.Fatalf("thinking missing: %s", b)
	}
}

func TestServerToolBlocksAndUnknownEventsAreSkipped(t *testing.T) {
	srv := newServer(t, replay(t, "server_tool.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	acc := accumulate(parts)
	if m := acc.Message(); m.Text != "Go 1.26 is out." || len(m.ToolCalls) != 0 || acc.Usage.OutputTokens != 40 {
		t.Fatalf("message %+v usage %+v (server tools are not client tool calls)", m, acc.Usage)
	}
}

// Programmatic tool calling gives a tool call's whole input at
// content_block_start, with no input_json_delta; a block whose input streams
// starts with {} (here with spaces) and takes the deltas.
func TestToolInputGivenWholeAtBlockStart(t *testing.T) {
	srv := newServer(t, replay(t, "tool_input_whole.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	acc := accumulate(parts)
	calls := acc.Message().ToolCalls
	if len(calls) != 2 || string(calls[0].Args) != `{"player":"one"}` || calls[0].ID != "toolu_A" ||
		string(calls[1].Args) != `{"player":"two"}` || acc.Finish != provider.FinishToolCalls {
		t.Fatalf("calls %+v finish %q (%s)", calls, acc.Finish, kinds(parts))
	}
	if k := kinds(parts); k != "metadata,metadata,tool-input-start,tool-input-delta,tool-call,tool-input-start,tool-input-delta,tool-input-delta,tool-call,usage,finish" {
		t.Fatalf("parts %s", k)
	}
}

// A message_start may already hold the tool call and the stop reason, with
// message_stop right after: the call and the finish are yielded.
func TestMessageStartHoldingTheWholeTurn(t *testing.T) {
	srv := newServer(t, replay(t, "message_start_whole.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	acc := accumulate(parts)
	calls := acc.Message().ToolCalls
	if acc.Message().Text != "Rolling." || len(calls) != 1 || calls[0].ID != "toolu_C" || calls[0].Name != "roll" || string(calls[0].Args) != `{"player":"two"}` || acc.Finish != provider.FinishToolCalls {
		t.Fatalf("calls %+v finish %q (%s)", calls, acc.Finish, kinds(parts))
	}
}

// TestNoIdleTimeoutUnlessConfigured: as for the OpenAI adapter, the default is none (spec
// 002: "The runner does not impose a universal provider-stream inactivity or absolute
// timeout").
func TestNoIdleTimeoutUnlessConfigured(t *testing.T) {
	if a := newAdapter(t, "http://127.0.0.1:1"); a.cfg.IdleTimeout != 0 {
		t.Fatalf("default idle timeout %v, want none", a.cfg.IdleTimeout)
	}
}
