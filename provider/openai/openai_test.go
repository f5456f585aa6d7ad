package openai

import (
	"bufio"
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

// server is a local stand-in for an OpenAI-compatible endpoint: it records
// every request and answers with the handler under test.
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
	if i >= len(s.bodies) {
		t.Fatalf("server saw %d requests, want at least %d", len(s.bodies), i+1)
	}
	var m map[string]any
	if err := json.Unmarshal(s.bodies[i], &m); err != nil {
		t.Fatalf("request body is not JSON: %v: %s", err, s.bodies[i])
	}
	return m
}

// replay streams a testdata transcript event by event, flushing each.
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

func newAdapter(t *testing.T, url string, mut ...func(*Config)) *Adapter {
	t.Helper()
	cfg := Config{BaseURL: url + "/v1", APIKey: "sk-test"}
	for _, f := range mut {
		f(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func basicRequest() *provider.Request {
	return &provider.Request{
		Model:  provider.ModelRef{Provider: "openai", Model: "gpt-4o-mini"},
		System: "You are terse.",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "Say hello"},
		},
	}
}

// collect drains a stream, returning its parts and terminal error (nil at EOF).
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

func TestTextStreamYieldsDeltasUsageAndFinish(t *testing.T) {
	srv := newServer(t, replay(t, "text.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(parts), "metadata,metadata,text,text,text,usage,finish"; got != want {
		t.Fatalf("parts = %s, want %s", got, want)
	}
	acc := accumulate(parts)
	if got := acc.Message().Text; got != "Hello, world! ✓" {
		t.Errorf("text = %q", got)
	}
	if acc.Finish != provider.FinishStop {
		t.Errorf("finish = %q", acc.Finish)
	}
	want := provider.Usage{InputTokens: 1187, OutputTokens: 6, CacheReadTokens: 1024}
	if acc.Usage != want {
		t.Errorf("usage = %+v, want %+v", acc.Usage, want)
	}
	if acc.Meta[provider.MetaResponseID] != "chatcmpl-AZx1" || acc.Meta[provider.MetaModel] != "gpt-4o-mini-2024-07-18" {
		t.Errorf("meta = %v", acc.Meta)
	}
	// The request on the wire.
	if srv.paths[0] != "/v1/chat/completions" {
		t.Errorf("path = %s", srv.paths[0])
	}
	if h := srv.headers[0].Get("Authorization"); h != "Bearer sk-test" {
		t.Errorf("Authorization = %q", h)
	}
	body := srv.body(t, 0)
	if body["model"] != "gpt-4o-mini" || body["stream"] != true {
		t.Errorf("model/stream = %v/%v", body["model"], body["stream"])
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v", body["stream_options"])
	}
	msgs := body["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" || msgs[0].(map[string]any)["content"] != "You are terse." {
		t.Errorf("messages = %v", msgs)
	}
	if _, ok := body["tools"]; ok {
		t.Errorf("tools sent although none were given: %v", body["tools"])
	}
	if _, ok := body["tool_choice"]; ok {
		t.Errorf("tool_choice sent without tools")
	}
}

func TestReasoningContentBecomesReasoningParts(t *testing.T) {
	srv := newServer(t, replay(t, "reasoning.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	acc := accumulate(parts)
	m := acc.Message()
	if len(m.Reasoning) != 1 || m.Reasoning[0].Text != "The user asks 2+2. That is 4." {
		t.Fatalf("reasoning = %+v", m.Reasoning)
	}
	if m.Text != "4" || acc.Usage.ReasoningTokens != 20 || acc.Usage.OutputTokens != 25 {
		t.Errorf("text %q usage %+v", m.Text, acc.Usage)
	}
}

func TestParallelToolCallsAssembleFragmentsAndCompleteEarly(t *testing.T) {
	srv := newServer(t, replay(t, "parallel_tools.sse"))
	req := basicRequest()
	req.Tools = []provider.Tool{
		{Name: "read", Description: "Read a file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "bash", Description: "Run a command"},
	}
	f := false
	req.Options.ParallelToolCalls = &f
	parts, err := collect(t, newAdapter(t, srv.URL), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(parts), "metadata,metadata,tool-input-start,tool-input-delta,tool-input-delta,tool-input-delta,tool-call,tool-input-start,tool-input-delta,tool-input-delta,tool-call,usage,finish"; got != want {
		t.Fatalf("parts = %s\nwant    %s", got, want)
	}
	acc := accumulate(parts)
	calls := acc.Message().ToolCalls
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	if calls[0].ID != "call_Qx1aa" || calls[0].Name != "read" || string(calls[0].Args) != `{"path": "go.mod"}` {
		t.Errorf("call 0 = %+v (%s)", calls[0], calls[0].Args)
	}
	if calls[1].ID != "call_Zr2bb" || calls[1].Name != "bash" || string(calls[1].Args) != `{"command": "ls -la"}` {
		t.Errorf("call 1 = %+v (%s)", calls[1], calls[1].Args)
	}
	// The first call is complete as soon as the second starts, so the
	// Session can run it while the model still writes the second.
	if parts[6].Kind != provider.PartToolCall || parts[6].ID != "call_Qx1aa" || parts[7].Index != 1 || parts[7].Name != "bash" {
		t.Errorf("parts 6, 7 = %+v, %+v", parts[6], parts[7])
	}
	if acc.Finish != provider.FinishToolCalls || acc.Usage.InputTokens != 2210 {
		t.Errorf("finish %q usage %+v", acc.Finish, acc.Usage)
	}
	body := srv.body(t, 0)
	tools := body["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools = %v", tools)
	}
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if tools[0].(map[string]any)["type"] != "function" || fn["name"] != "read" || fn["parameters"].(map[string]any)["required"] == nil {
		t.Errorf("tool 0 = %v", tools[0])
	}
	fn1 := tools[1].(map[string]any)["function"].(map[string]any)
	if fn1["parameters"].(map[string]any)["type"] != "object" {
		t.Errorf("empty schema not defaulted to an object schema: %v", fn1)
	}
	if body["tool_choice"] != "auto" || body["parallel_tool_calls"] != false {
		t.Errorf("tool_choice %v parallel %v", body["tool_choice"], body["parallel_tool_calls"])
	}
}

func TestOllamaParallelCallsSharingIndexZeroStaySeparate(t *testing.T) {
	srv := newServer(t, replay(t, "ollama_parallel.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	acc := accumulate(parts)
	m := acc.Message()
	if len(m.ToolCalls) != 2 || string(m.ToolCalls[0].Args) != `{"path":"a.txt"}` || string(m.ToolCalls[1].Args) != `{"path":"b.txt"}` || m.ToolCalls[1].ID != "call_b2" {
		t.Fatalf("calls = %+v", m.ToolCalls)
	}
	if len(m.Reasoning) != 1 || m.Reasoning[0].Text != "Two files to read." {
		t.Errorf("reasoning (Ollama's delta.reasoning) = %+v", m.Reasoning)
	}
	if acc.Usage.InputTokens != 320 {
		t.Errorf("usage = %+v", acc.Usage)
	}
}

func TestContentFilterFinishIsReported(t *testing.T) {
	srv := newServer(t, replay(t, "content_filter.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	if acc := accumulate(parts); acc.Finish != provider.FinishContentFilter || acc.Message().Text != "I can" {
		t.Fatalf("finish %q text %q", acc.Finish, acc.Message().Text)
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
		msgHas     string
	}{
		{"openai context length", 400, "error_context_length.json", nil, provider.KindContextOverflow, 0, "maximum context length is 128000"},
		{"llama.cpp context size", 400, "error_context_llamacpp.json", nil, provider.KindContextOverflow, 0, "available context size"},
		{"bad key", 401, "error_401.json", nil, provider.KindAuth, 0, "Incorrect API key"},
		{"rate limit seconds", 429, "error_429.json", map[string]string{"Retry-After": "3"}, provider.KindRateLimited, 3 * time.Second, "Rate limit reached"},
		{"rate limit ms", 429, "error_429.json", map[string]string{"Retry-After-Ms": "2400", "Retry-After": "3"}, provider.KindRateLimited, 2400 * time.Millisecond, "TPM"},
		{"quota is not retryable", 429, "error_quota.json", nil, provider.KindQuotaExhausted, 0, "quota"},
		{"server error", 500, "error_500.json", nil, provider.KindServerError, 0, "server had an error"},
		{"azure content filter", 400, "error_content_filter.json", nil, provider.KindContentFilter, 0, "content management policy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, errorReply(t, c.status, c.file, c.hdr))
			_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *provider.Error", err)
			}
			if pe.Kind != c.kind || pe.Status != c.status || pe.RetryAfter != c.retryAfter {
				t.Fatalf("got kind %s status %d retry-after %s, want %s %d %s (%v)", pe.Kind, pe.Status, pe.RetryAfter, c.kind, c.status, c.retryAfter, err)
			}
			if !strings.Contains(pe.Message, c.msgHas) {
				t.Errorf("message %q lacks %q", pe.Message, c.msgHas)
			}
		})
	}
}

func TestGatewayErrorWithHTMLBodyIsRetryable(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(502)
		io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
	})
	_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if !errors.Is(err, provider.ErrServerError) || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Fatalf("err = %v", err)
	}
}

func TestErrorEventInsideStreamIsClassified(t *testing.T) {
	srv := newServer(t, replay(t, "stream_error.sse"))
	_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if provider.KindOf(err) != provider.KindServerError || !strings.Contains(err.Error(), "server had an error") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamEndingMidEventIsACutNotATruncatedTurn(t *testing.T) {
	srv := newServer(t, replay(t, "cut.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.KindRetryable || !strings.Contains(pe.Message, "cut before its finish") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(pe.Snippet, `{\"conte`) {
		t.Errorf("snippet %s does not quote the partial line", pe.Snippet)
	}
	if accumulate(parts).Message().Text != "Partial an" {
		t.Errorf("parts before the cut = %v", parts)
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
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 100000\r\n\r\n")
		buf.WriteString(`data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}` + "\n\n")
		buf.Flush()
	})
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if provider.KindOf(err) != provider.KindRetryable {
		t.Fatalf("err = %v (%T)", err, err)
	}
	if accumulate(parts).Message().Text != "Hi" {
		t.Errorf("parts = %v", parts)
	}
}

func TestMalformedInputQuotesTheOffendingBytes(t *testing.T) {
	cases := []struct{ file, msg, quoted string }{
		{"malformed.sse", "not valid JSON", `bro}ken`},
		{"bad_args.sse", "arguments are not valid JSON", `{\"command\": \"ls`},
		{"unknown_finish.sse", "unknown finish_reason", `"banana"`},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			srv := newServer(t, replay(t, c.file))
			_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != provider.KindMalformed {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(pe.Message, c.msg) || !strings.Contains(pe.Snippet, c.quoted) {
				t.Errorf("error %q does not say %q quoting %q", err, c.msg, c.quoted)
			}
		})
	}
}

func TestCancelClosesTheHTTPStreamAtOnce(t *testing.T) {
	serverSawClose := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"x","choices":[{"index":0,"delta":{"content":"thinking..."},"finish_reason":null}]}`+"\n\n")
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
	if p, err := s.Next(); err != nil || p.Kind != provider.PartMetadata {
		t.Fatalf("first part = %+v, %v", p, err)
	}
	if p, err := s.Next(); err != nil || p.Text != "thinking..." {
		t.Fatalf("second part = %+v, %v", p, err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, provider.ErrInterrupted) {
			t.Fatalf("Next after cancel = %v, want interrupted", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next still blocked 5s after cancel")
	}
	select {
	case <-serverSawClose:
	case <-time.After(5 * time.Second):
		t.Fatal("server did not see the connection close")
	}
}

func TestCloseFromAnotherGoroutineUnblocksNext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	s, err := newAdapter(t, srv.URL).Stream(context.Background(), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, provider.ErrInterrupted) {
			t.Fatalf("Next after Close = %v, want interrupted", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next still blocked 5s after Close")
	}
}

func TestRequestEncodingOfHistoryAndOptions(t *testing.T) {
	temp, topP := 0.2, 0.9
	req := &provider.Request{
		Model:  provider.ModelRef{Provider: "local", Model: "qwen3"},
		System: "BASE",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "look", Attachments: []provider.Attachment{
				{Name: "a.png", MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
				{Name: "notes.txt", MediaType: "text/plain", Data: []byte("n1")},
			}},
			{Role: provider.RoleAssistant, Text: "reading", Reasoning: []provider.Reasoning{{Text: "secret thoughts"}},
				ToolCalls: []provider.ToolCall{{ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"x"}`)}, {ID: "c2", Name: "bash"}}},
			{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: "c1", Output: "file body"}},
			{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: "c2", Output: "exit 1", IsError: true}},
			{Role: provider.RoleSystem, Text: "date is now 2026-11-26"},
			{Role: provider.RoleAssistant, Reasoning: []provider.Reasoning{{Text: "only thoughts"}}}, // dropped
		},
		Tools:      []provider.Tool{{Name: "read"}},
		ToolChoice: provider.ToolChoiceNone,
		Options:    provider.Options{ReasoningEffort: "high", CacheKey: "ses_1"},
		Controls:   provider.Controls{Temperature: &temp, TopP: &topP, MaxOutputTokens: 4096, Stop: []string{"END"}},
		Wire:       map[string]json.RawMessage{"top_k": json.RawMessage(`40`), "temperature": json.RawMessage(`0.7`)},
	}
	dec := func(a *Adapter) map[string]any {
		b, err := a.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	local, _ := New(Config{BaseURL: "http://127.0.0.1:11434/v1"})
	m := dec(local)
	msgs := m["messages"].([]any)
	if len(msgs) != 6 {
		t.Fatalf("messages = %d: %v", len(msgs), msgs)
	}
	user := msgs[1].(map[string]any)["content"].([]any)
	if user[0].(map[string]any)["text"] != "look" || user[1].(map[string]any)["image_url"].(map[string]any)["url"] != "data:image/png;base64,iVBORw==" ||
		!strings.Contains(user[2].(map[string]any)["text"].(string), "n1") {
		t.Errorf("user content = %v", user)
	}
	asst := msgs[2].(map[string]any)
	if asst["content"] != "reading" || strings.Contains(string(mustJSON(asst)), "secret thoughts") {
		t.Errorf("assistant = %v (reasoning must not be replayed)", asst)
	}
	tcs := asst["tool_calls"].([]any)
	if tcs[1].(map[string]any)["function"].(map[string]any)["arguments"] != "{}" {
		t.Errorf("empty args not sent as {}: %v", tcs[1])
	}
	if tm := msgs[4].(map[string]any); tm["role"] != "tool" || tm["tool_call_id"] != "c2" || tm["content"] != "exit 1" {
		t.Errorf("tool message = %v", tm)
	}
	if sm := msgs[5].(map[string]any); sm["role"] != "user" || sm["content"] != "<system-update>\ndate is now 2026-11-26\n</system-update>" {
		t.Errorf("mid-conversation system for a local server = %v, want wrapped user text", sm)
	}
	if m["tool_choice"] != "none" || m["max_tokens"] != 4096.0 || m["top_p"] != 0.9 || m["reasoning_effort"] != "high" || m["prompt_cache_key"] != "ses_1" {
		t.Errorf("options/controls = %v", m)
	}
	if m["temperature"] != 0.7 || m["top_k"] != 40.0 {
		t.Errorf("wire fields not merged last: temperature %v top_k %v", m["temperature"], m["top_k"])
	}
	official, _ := New(Config{})
	m = dec(official)
	if sm := m["messages"].([]any)[5].(map[string]any); sm["role"] != "system" {
		t.Errorf("mid-conversation system for OpenAI = %v, want native system role", sm)
	}
	if m["max_completion_tokens"] != 4096.0 || m["max_tokens"] != nil {
		t.Errorf("OpenAI output limit field: %v / %v", m["max_completion_tokens"], m["max_tokens"])
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func TestBadRequestsAreRefusedBeforeSending(t *testing.T) {
	a, _ := New(Config{BaseURL: "http://127.0.0.1:1/v1"})
	cases := map[string]*provider.Request{
		"reserved wire field": {Model: provider.ModelRef{Model: "m"}, Wire: map[string]json.RawMessage{"messages": json.RawMessage(`[]`)}},
		"invalid wire json":   {Model: provider.ModelRef{Model: "m"}, Wire: map[string]json.RawMessage{"x": json.RawMessage(`{`)}},
		"no model":            {},
		"unsupported attachment": {Model: provider.ModelRef{Model: "m"}, Messages: []provider.Message{{Role: provider.RoleUser,
			Attachments: []provider.Attachment{{Name: "a.zip", MediaType: "application/zip"}}}}},
		"tool result without call": {Model: provider.ModelRef{Model: "m"}, Messages: []provider.Message{{Role: provider.RoleTool}}},
	}
	for name, req := range cases {
		_, err := a.Stream(context.Background(), req)
		if !errors.Is(err, provider.ErrInvalidRequest) {
			t.Errorf("%s: err = %v, want invalid request", name, err)
		}
	}
	if _, err := New(Config{BaseURL: "ftp://x"}); err == nil {
		t.Error("New accepted an ftp base URL")
	}
}

func TestRetryRecoversFromRateLimitBeforeOutput(t *testing.T) {
	var n int
	var mu sync.Mutex
	text := replay(t, "text.sse")
	limit := errorReply(t, 429, "error_429.json", map[string]string{"Retry-After": "1"})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			limit(w, r)
			return
		}
		text(w, r)
	})
	var slept []time.Duration
	p := provider.Retry(newAdapter(t, srv.URL), provider.RetryConfig{Sleep: func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}})
	parts, err := collect(t, p, basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	if accumulate(parts).Message().Text != "Hello, world! ✓" || len(slept) != 1 || slept[0] != time.Second {
		t.Fatalf("text %q slept %v", accumulate(parts).Message().Text, slept)
	}
}

func TestCRLFLineEndingsAreAccepted(t *testing.T) {
	b, _ := os.ReadFile("testdata/text.sse")
	crlf := strings.ReplaceAll(string(b), "\n", "\r\n")
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		bw := bufio.NewWriter(w)
		bw.WriteString(crlf)
		bw.Flush()
	})
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil || accumulate(parts).Message().Text != "Hello, world! ✓" {
		t.Fatalf("parts %v err %v", parts, err)
	}
}

func TestNonStreamingJSONAnswerIsAClearError(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	})
	_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if !errors.Is(err, provider.ErrMalformed) || !strings.Contains(err.Error(), "not an event stream") || !strings.Contains(err.Error(), "chat.completion") {
		t.Fatalf("err = %v", err)
	}
}

func TestSilentConnectionEndsWithARetryableError(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select { // silent until the client gives up
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	a := newAdapter(t, srv.URL, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	parts, err := collect(t, a, basicRequest())
	if !errors.Is(err, provider.ErrRetryable) || !strings.Contains(err.Error(), "no data from the provider") {
		t.Fatalf("err = %v", err)
	}
	if accumulate(parts).Message().Text != "Hi" {
		t.Errorf("parts = %v", parts)
	}
}

// Mistral's Magistral sends delta.content as typed parts: text parts are the
// answer, thinking parts (a string or text parts) reasoning; others are skipped.
func TestTypedContentPartsAreTextAndReasoning(t *testing.T) {
	srv := newServer(t, replay(t, "typed_content.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	m := accumulate(parts).Message()
	if m.Text != "4!" || len(m.Reasoning) != 1 || m.Reasoning[0].Text != "Two plus two is four." {
		t.Fatalf("text %q reasoning %+v", m.Text, m.Reasoning)
	}
}

// Usage means the same whatever the server: output counts reasoning, which
// xAI leaves out of completion_tokens (its total says so).
func TestOutputTokensIncludeReasoningWhateverTheServerCounts(t *testing.T) {
	for file, want := range map[string]provider.Usage{
		"reasoning_excluded.sse":    {InputTokens: 12, OutputTokens: 342, CacheReadTokens: 11, ReasoningTokens: 340},
		"reasoning_both_fields.sse": {InputTokens: 5, OutputTokens: 3, ReasoningTokens: 1},
	} {
		srv := newServer(t, replay(t, file))
		parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
		if err != nil {
			t.Fatal(err)
		}
		if got := accumulate(parts).Usage; got != want {
			t.Errorf("%s: usage %+v, want %+v", file, got, want)
		}
	}
}

// vLLM and others may send the same reasoning text in reasoning_content and
// reasoning: it is reasoning once.
func TestReasoningSentInBothFieldsIsSaidOnce(t *testing.T) {
	srv := newServer(t, replay(t, "reasoning_both_fields.sse"))
	parts, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if err != nil {
		t.Fatal(err)
	}
	if m := accumulate(parts).Message(); len(m.Reasoning) != 1 || m.Reasoning[0].Text != "Hmm" || m.Text != "ok" {
		t.Fatalf("%+v", m)
	}
}

// OpenRouter ends a failed turn with finish_reason "error"; without an error
// member it is still a server error, not an unknown finish reason.
func TestFinishReasonErrorIsAServerError(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"g\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"error\"}]}\n\n")
	})
	_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
	if provider.KindOf(err) != provider.KindServerError {
		t.Fatalf("err = %v", err)
	}
}

// TestNoIdleTimeoutUnlessConfigured: the spec (002) says "The runner does not impose a
// universal provider-stream inactivity or absolute timeout", so the adapter's default is
// none (it was 10 minutes); a positive IdleTimeout (catalog idle_timeout, or
// opencode.json's provider.<id>.options.chunkTimeout) is the operator's opt-in guard.
func TestNoIdleTimeoutUnlessConfigured(t *testing.T) {
	if a := newAdapter(t, "http://127.0.0.1:1"); a.cfg.IdleTimeout != 0 {
		t.Fatalf("default idle timeout %v, want none", a.cfg.IdleTimeout)
	}
	if a := newAdapter(t, "http://127.0.0.1:1", func(c *Config) { c.IdleTimeout = time.Minute }); a.cfg.IdleTimeout != time.Minute {
		t.Fatalf("configured idle timeout %v, want 1m", a.cfg.IdleTimeout)
	}
}
