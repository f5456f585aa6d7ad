package fakellm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/openai"
)

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func collect(t *testing.T, s *Server, req *provider.Request) provider.Message {
	t.Helper()
	a, err := openai.New(openai.Config{BaseURL: s.URL, APIKey: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := a.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := provider.Collect(st, "openai")
	if err != nil {
		t.Fatal(err)
	}
	return acc.Message()
}

// The real OpenAI adapter sees a bash `echo hi` call for a prompt, then the
// final text naming the prompt's run marker once the tool result is sent.
func TestPromptGetsEchoCallThenFinalTextWithMarker(t *testing.T) {
	s := start(t, Config{TextChunks: 3})
	bash := provider.Tool{Name: "bash", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}
	req := &provider.Request{Model: provider.ModelRef{Provider: "openai", Model: "bench"}, Tools: []provider.Tool{bash},
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "please [run:abc-1] now"}}}
	m := collect(t, s, req)
	if len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != "bash" {
		t.Fatalf("want one bash call, got %+v", m)
	}
	var args struct{ Command string }
	if err := json.Unmarshal(m.ToolCalls[0].Args, &args); err != nil || args.Command != "echo hi" {
		t.Fatalf("args %s (%v), want command echo hi", m.ToolCalls[0].Args, err)
	}
	req.Messages = append(req.Messages, m, provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: m.ToolCalls[0].ID, Name: "bash", Output: "hi\n"}})
	final := collect(t, s, req)
	if final.Text != "done [run:abc-1]" || len(final.ToolCalls) != 0 {
		t.Fatalf("final %+v, want text %q", final, "done [run:abc-1]")
	}
	if st := s.Stats(); st.ToolCalls != 1 || st.Finals != 1 || st.Requests != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSlowToolSleepsBeforeEcho(t *testing.T) {
	s := start(t, Config{ToolSleep: 250 * time.Millisecond})
	req := &provider.Request{Model: provider.ModelRef{Provider: "openai", Model: "bench"}, Tools: []provider.Tool{{Name: "bash"}},
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "go"}}}
	m := collect(t, s, req)
	if len(m.ToolCalls) != 1 || !strings.Contains(string(m.ToolCalls[0].Args), `sleep 0.25; echo hi`) {
		t.Fatalf("want a sleeping echo, got %+v", m.ToolCalls)
	}
}

func TestNoToolsGetsPlainText(t *testing.T) {
	ans, err := Reply(&Request{Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":"title this"}`)}})
	if err != nil || ans.Kind != KindPlain {
		t.Fatalf("got %+v %v, want plain text", ans, err)
	}
}

func TestBadRequestsAreRefusedWithAReason(t *testing.T) {
	s := start(t, Config{})
	for _, body := range []string{`{`, `{"messages":[]}`, `{"messages":[{"role":"user","content":"x"}],"tools":[{}],"stream":false}`} {
		resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error struct{ Message string } }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(e.Error.Message, "fakellm: ") {
			t.Errorf("%s: status %d message %q, want 400 with a reason", body, resp.StatusCode, e.Error.Message)
		}
	}
}

// The request log names what was answered and the prompt's marker, one
// line per request, so a run shows which system called the fake model and
// that the tool result came back.
func TestLogNamesEachAnswerAndItsMarker(t *testing.T) {
	var log syncBuffer
	s := start(t, Config{Log: &log})
	bash := provider.Tool{Name: "bash", Schema: json.RawMessage(`{"type":"object"}`)}
	req := &provider.Request{Model: provider.ModelRef{Provider: "openai", Model: "bench"}, Tools: []provider.Tool{bash},
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "go [run:log-1]"}}}
	m := collect(t, s, req)
	req.Messages = append(req.Messages, m, provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: m.ToolCalls[0].ID, Name: "bash", Output: "hi\n"}})
	collect(t, s, req)
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], " tool-call [run:log-1] model=bench messages=1 tools=1") ||
		!strings.Contains(lines[1], " final [run:log-1] model=bench messages=3 tools=1") {
		t.Fatalf("log %q", lines)
	}
}

// The wire format: every SSE event is a `data:` line; the tool call's ID
// and name come in the first tool delta, its arguments in the next, the
// finish reason is tool_calls, usage follows and [DONE] ends the stream.
func TestToolCallStreamWireFormat(t *testing.T) {
	s := start(t, Config{})
	body := `{"model":"bench","stream":true,"messages":[{"role":"user","content":"x [run:w]"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`
	resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	raw, _ := io.ReadAll(resp.Body)
	var events []string
	for _, ev := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("event %q is not a data line", ev)
		}
		events = append(events, data)
	}
	if len(events) != 6 || events[5] != "[DONE]" {
		t.Fatalf("%d events %q", len(events), events)
	}
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta struct {
				Role      string `json:"role"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	var c [5]chunk
	for i := range c {
		if err := json.Unmarshal([]byte(events[i]), &c[i]); err != nil || c[i].Object != "chat.completion.chunk" {
			t.Fatalf("event %d %q: %v", i, events[i], err)
		}
	}
	if c[0].Choices[0].Delta.Role != "assistant" {
		t.Errorf("first delta %q, want the assistant role", events[0])
	}
	head, args := c[1].Choices[0].Delta.ToolCalls, c[2].Choices[0].Delta.ToolCalls
	if len(head) != 1 || head[0].ID == "" || head[0].Type != "function" || head[0].Function.Name != "bash" || head[0].Function.Arguments != "" {
		t.Errorf("tool call head %q", events[1])
	}
	if len(args) != 1 || args[0].ID != "" || args[0].Function.Arguments != `{"command":"echo hi","description":"Print hi"}` {
		t.Errorf("tool call arguments %q", events[2])
	}
	if f := c[3].Choices[0].FinishReason; f == nil || *f != "tool_calls" {
		t.Errorf("finish %q, want tool_calls", events[3])
	}
	if len(c[4].Choices) != 0 || c[4].Usage == nil || c[4].Usage.TotalTokens == 0 {
		t.Errorf("usage chunk %q", events[4])
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A prompt marked hold-stream gets a stream that stays open after its
// first chunk until its marker is released; then the tool call arrives as
// usual.
func TestHoldStreamWaitsForRelease(t *testing.T) {
	s := start(t, Config{})
	done := make(chan provider.Message, 1)
	req := &provider.Request{Model: provider.ModelRef{Provider: "openai", Model: "bench"}, Tools: []provider.Tool{{Name: "bash"}},
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "go [run:hold-stream-1]"}}}
	go func() { done <- collect(t, s, req) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitHeld(ctx, "[run:hold-stream-1]"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-done:
		t.Fatalf("the held stream ended before Release: %+v", m)
	default:
	}
	s.Release("[run:hold-stream-1]")
	if m := <-done; len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != "bash" {
		t.Fatalf("after release: %+v, want the bash call", m)
	}
	// Released: a later held-marker stream is not held.
	if m := collect(t, s, req); len(m.ToolCalls) != 1 {
		t.Fatalf("second request %+v", m)
	}
}

// A prompt marked hold-tool gets a command that waits for the gate file.
func TestHoldToolWaitsOnTheGateFile(t *testing.T) {
	s := start(t, Config{ToolGate: "/tmp/x"})
	req := &provider.Request{Model: provider.ModelRef{Provider: "openai", Model: "bench"}, Tools: []provider.Tool{{Name: "bash"}},
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "go [run:hold-tool-1]"}}}
	m := collect(t, s, req)
	var args struct{ Command string }
	if len(m.ToolCalls) != 1 || json.Unmarshal(m.ToolCalls[0].Args, &args) != nil ||
		args.Command != "until [ -e '/tmp/x/hold-tool-1' ]; do sleep 0.05; done; echo hi" {
		t.Fatalf("tool call %+v", m.ToolCalls)
	}
}
