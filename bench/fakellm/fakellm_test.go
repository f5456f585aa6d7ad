package fakellm

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
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
