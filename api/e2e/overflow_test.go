package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
)

// overflowFamily is a provider family's context overflow exactly as its server
// sends it (the messages and sources are those of provider.Rules).
type overflowFamily struct {
	name      string
	anthropic bool   // the Messages API, else Chat Completions
	status    int    // 200: the failure comes inside the event stream
	body      string // the response body
	message   string // the provider's own message, which the log must show
}

var overflowFamilies = []overflowFamily{
	{name: "openai", status: 400,
		body:    `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 129870 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 129870 tokens. Please reduce the length of the messages."},
	{name: "azure", status: 400,
		body:    `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded","status":400}}`,
		message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages."},
	{name: "openrouter", status: 400,
		body:    `{"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (139000 of text input, 1000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}`,
		message: `This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (139000 of text input, 1000 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.`},
	{name: "groq", status: 400,
		body:    `{"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		message: "Please reduce the length of the messages or completion."},
	{name: "vllm", status: 200,
		body:    "data: {\"error\": {\"object\": \"error\", \"message\": \"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens in the messages, Please reduce the length of the messages.\", \"type\": \"BadRequestError\", \"param\": null, \"code\": 400}}\n\ndata: [DONE]\n\n",
		message: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens in the messages, Please reduce the length of the messages."},
	{name: "llamacpp", status: 500,
		body:    `{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}`,
		message: "Context size has been exceeded."},
	{name: "llamacpp2025", status: 200,
		body:    "error: {\"code\":400,\"message\":\"the request exceeds the available context size. try increasing the context size or enable context shift\",\"type\":\"invalid_request_error\"}\n\ndata: [DONE]\n\n",
		message: "the request exceeds the available context size. try increasing the context size or enable context shift"},
	{name: "lmstudio", status: 200,
		body:    "event: error\ndata: {\"error\":{\"message\":\"Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens.\"},\"message\":\"Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens.\"}\n\n",
		message: "Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens."},
	{name: "ollama", status: 400,
		body:    `{"error":{"message":"the input length exceeds the context length","type":"invalid_request_error","param":null,"code":null}}`,
		message: "the input length exceeds the context length"},
	{name: "anthropic", anthropic: true, status: 400,
		body:    `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`,
		message: "prompt is too long: 208310 tokens > 200000 maximum"},
}

// familyServer answers, under /<family>/, as that family's server would: a
// long answer (the history outgrows what compaction keeps), the family's own
// overflow for the first request of the prompt that says "big", a summary to
// a compaction's summary request, and "fits now" to the rebuilt attempt.
type familyServer struct {
	mu                            sync.Mutex
	overflows, summaries, rebuilt map[string]int
}

func (f *familyServer) count(m map[string]int, fam string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	m[fam]++
	return m[fam]
}

func (f *familyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	var fam *overflowFamily
	for i := range overflowFamilies {
		if overflowFamilies[i].name == name {
			fam = &overflowFamilies[i]
		}
	}
	var body any
	if fam == nil || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, "unknown family or bad body", http.StatusBadRequest)
		return
	}
	text := strings.Join(texts(body, nil), "\n")
	answer := ""
	switch {
	case strings.Contains(text, "You write the working summary of an AI coding session"):
		f.count(f.summaries, name)
		answer = "## Goal\nSUMMARY of " + name
	case strings.Contains(text, "<conversation-summary>"):
		f.count(f.rebuilt, name)
		answer = "fits now"
	case strings.Contains(text, "big one"):
		if f.count(f.overflows, name) == 1 {
			if fam.status == 200 {
				w.Header().Set("Content-Type", "text/event-stream")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(fam.status)
			io.WriteString(w, fam.body)
			return
		}
		answer = "a second attempt without a compaction"
	default:
		answer = strings.Repeat("A long answer that fills the history. ", 1300) // ~12k tokens
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if fam.anthropic {
		writeAnthropic(w, answer)
	} else {
		writeOpenAI(w, answer)
	}
}

// texts collects every string of a decoded JSON request.
func texts(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = texts(e, out)
		}
	case map[string]any:
		for _, e := range v {
			out = texts(e, out)
		}
	}
	return out
}

func writeOpenAI(w io.Writer, answer string) {
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	for len(answer) > 0 {
		n := min(len(answer), 2048)
		chunk(map[string]any{"content": answer[:n]}, nil)
		answer = answer[n:]
	}
	chunk(map[string]any{}, "stop")
	io.WriteString(w, "data: [DONE]\n\n")
}

func writeAnthropic(w io.Writer, answer string) {
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": "msg_1", "model": "m", "content": []any{},
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	for len(answer) > 0 {
		n := min(len(answer), 2048)
		ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": answer[:n]}})
		answer = answer[n:]
	}
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]any{"output_tokens": 5}})
	ev("message_stop", map[string]any{})
}

// syncBuffer is the server's stderr, read while it writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// S48 (the overflow scenario, which issue #20 calls S47) per provider family: a session whose provider reports a context
// overflow in that family's own words, before any output, compacts exactly
// once and answers from one rebuilt attempt; sessionrt serve logs the class
// and the provider's message.
func TestEveryFamilysOverflowCompactsOnceAndRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fake := &familyServer{overflows: map[string]int{}, summaries: map[string]int{}, rebuilt: map[string]int{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	providers := map[string]any{}
	for _, f := range overflowFamilies {
		kind, base := "openai", srv.URL+"/"+f.name+"/v1"
		if f.anthropic {
			kind, base = "anthropic", srv.URL+"/"+f.name
		}
		// A window the local estimate never reaches: the overflow, not the
		// pre-emptive check, must be what compacts here.
		providers["f-"+f.name] = map[string]any{"kind": kind, "base_url": base,
			"models": map[string]any{"m": map[string]any{"context_window": 1_000_000, "output_limit": 4096, "tools": true}}}
	}
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	b, _ := json.Marshal(map[string]any{"providers": providers})
	if err := os.WriteFile(catalog, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	s := serveWith(t, build(t), t.TempDir(), []string{"SESSIONRT_CATALOG=" + catalog, "SESSIONRT_MODEL=f-openai/m"}, &log)
	c, err := client.New(client.Config{BaseURL: s.url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Run("families", func(t *testing.T) {
		for _, f := range overflowFamilies {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				sess, err := c.CreateSession(ctx, wire.CreateSessionRequest{Model: &wire.ModelRef{ProviderID: "f-" + f.name, ID: "m"},
					Location: &wire.LocationRef{Directory: t.TempDir()}})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range []string{"warm up", "big one"} {
					if _, err := c.Prompt(ctx, sess.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: p}}); err != nil {
						t.Fatal(err)
					}
					if err := c.Wait(ctx, sess.ID); err != nil {
						t.Fatal(err)
					}
				}
				msgs, err := c.Messages(ctx, sess.ID, client.MessagesOptions{})
				if err != nil {
					t.Fatal(err)
				}
				compactions, last := 0, ""
				for _, m := range msgs.Data {
					switch m.Type {
					case "compaction":
						compactions++
					case "assistant":
						last = ""
						for _, part := range m.Content {
							last += part.Text
						}
					}
				}
				fake.mu.Lock()
				o, sum, re := fake.overflows[f.name], fake.summaries[f.name], fake.rebuilt[f.name]
				fake.mu.Unlock()
				if o != 1 || sum != 1 || re != 1 || compactions != 1 || last != "fits now" {
					t.Fatalf("%d overflows, %d summary requests, %d rebuilt attempts, %d compactions, last answer %.80q: want one each and \"fits now\"",
						o, sum, re, compactions, last)
				}
			})
		}
	})
	out := log.String()
	for _, f := range overflowFamilies {
		want := "provider=f-" + f.name + " model=m class=context_overflow message=" + strconv.Quote(f.message)
		if !strings.Contains(out, want) {
			t.Errorf("the server's log lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("server log:\n%s", out)
	}
}
