package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/anthropic"
	"github.com/sessionrt/sessionrt/provider/openai"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

const chunks = 10000

// cpuTime is this process's user+system CPU time. The machine is shared, so
// wall time per op inflates with other people's load; CPU time per op is
// the cost of our code (GC included) and is reported next to it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ns/op and, when bytes > 0, cpu-MB/s.
func reportCPU(b *testing.B, start time.Duration, bytes int) {
	per := float64(cpuTime()-start) / float64(b.N)
	b.ReportMetric(per, "cpu-ns/op")
	if bytes > 0 {
		b.ReportMetric(float64(bytes)/per*1e9/1e6, "cpu-MB/s")
	}
}

// openAIStream is a Chat Completions transcript of n chunks: text deltas,
// then a tool call whose arguments arrive in fragments, the finish chunk,
// the usage chunk and [DONE] — the shape a real turn has.
func openAIStream(n int) []byte {
	var b bytes.Buffer
	head := `data: {"id":"chatcmpl-B1q9xyz","object":"chat.completion.chunk","created":1732000200,"model":"gpt-4.1-2025-04-14","system_fingerprint":"fp_b3f1157249","choices":[{"index":0,"delta":`
	tail := `,"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	text := n * 8 / 10
	fmt.Fprintf(&b, "%s{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}%s", head, tail)
	for i := 1; i < text; i++ {
		fmt.Fprintf(&b, "%s{\"content\":\" token%d with \\\"quotes\\\" and ünïcode\"}%s", head, i, tail)
	}
	fmt.Fprintf(&b, "%s{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"write\",\"arguments\":\"\"}}]}%s", head, tail)
	fmt.Fprintf(&b, "%s{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"content\\\": \\\"\"}}]}%s", head, tail)
	for i := text + 2; i < n-3; i++ {
		fmt.Fprintf(&b, "%s{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"line %d of the file\\\\n\"}}]}%s", head, i, tail)
	}
	fmt.Fprintf(&b, "%s{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"}\"}}]}%s", head, tail)
	b.WriteString(`data: {"id":"chatcmpl-B1q9xyz","object":"chat.completion.chunk","created":1732000200,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-B1q9xyz","object":"chat.completion.chunk","created":1732000200,"model":"gpt-4.1-2025-04-14","choices":[],"usage":{"prompt_tokens":2210,"completion_tokens":9000,"total_tokens":11210,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// anthropicStream is a Messages transcript of about n events: a thinking
// block, a text block and a tool_use block with input_json_delta fragments.
func anthropicStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5-20250929\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":472,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":2048,\"output_tokens\":1}}}\n\n")
	third := n / 3
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n")
	for i := 0; i < third; i++ {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" step %d of the plan\"}}\n\n", i)
	}
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := 0; i < third; i++ {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\" token%d with \\\"quotes\\\"\"}}\n\n", i)
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":\"write\",\"input\":{}}}\n\n")
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"content\\\": \\\"\"}}\n\n")
	for i := 2*third + 8; i < n; i++ {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"line %d\\\\n\"}}\n\n", i)
	}
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"}\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9000}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}

func drain(b *testing.B, s provider.Stream) *provider.Accumulator {
	a := &provider.Accumulator{}
	for {
		p, err := s.Next()
		if errors.Is(err, io.EOF) {
			return a
		}
		if err != nil {
			b.Fatal(err)
		}
		a.Add(p)
	}
}

func BenchmarkOpenAIParse10kChunks(b *testing.B) {
	data := openAIStream(chunks)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := cpuTime()
	defer func() { reportCPU(b, start, len(data)) }()
	for b.Loop() {
		a := drain(b, openai.NewStreamForTest(context.Background(), io.NopCloser(bytes.NewReader(data))))
		if a.Finish != provider.FinishToolCalls || len(a.Message().ToolCalls) != 1 || !json.Valid(a.Message().ToolCalls[0].Args) {
			b.Fatalf("bad parse: finish %q", a.Finish)
		}
	}
}

func BenchmarkAnthropicParse10kChunks(b *testing.B) {
	data := anthropicStream(chunks)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := cpuTime()
	defer func() { reportCPU(b, start, len(data)) }()
	for b.Loop() {
		a := drain(b, anthropic.NewStreamForTest(context.Background(), io.NopCloser(bytes.NewReader(data))))
		if a.Finish != provider.FinishToolCalls || len(a.Message().ToolCalls) != 1 || a.Message().Reasoning[0].Signature == "" {
			b.Fatalf("bad parse: finish %q", a.Finish)
		}
	}
}

// memTransport answers every request from memory: no sockets, so a turn
// through it costs exactly the adapter (encode, net/http client, decode).
type memTransport struct{ body []byte }

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(m.body)), Request: r}, nil
}

// typicalRequest is a mid-session turn: a 6 KB baseline, 20 history
// messages with tool calls and results, 10 tools.
func typicalRequest() *provider.Request {
	r := &provider.Request{
		Model:  provider.ModelRef{Provider: "p", Model: "m"},
		System: strings.Repeat("You are a coding agent. Follow the repository's conventions. ", 100),
	}
	for i := 0; i < 10; i++ {
		r.Tools = append(r.Tools, provider.Tool{Name: fmt.Sprintf("tool%d", i), Description: "Does a thing with a path and options.",
			Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}`)})
	}
	for i := 0; i < 5; i++ {
		r.Messages = append(r.Messages,
			provider.Message{Role: provider.RoleUser, Text: "Please look at the failing test and fix it."},
			provider.Message{Role: provider.RoleAssistant, Text: "Reading the file.", ToolCalls: []provider.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "tool1", Args: json.RawMessage(`{"path":"internal/x.go"}`)}}},
			provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: fmt.Sprintf("call_%d", i), Output: strings.Repeat("func x() {}\n", 40)}},
			provider.Message{Role: provider.RoleAssistant, Text: "The test expects a nil error; fixing."},
		)
	}
	return r
}

func benchTurn(b *testing.B, p provider.Provider, respBytes int) {
	req := typicalRequest()
	b.SetBytes(int64(respBytes))
	b.ReportAllocs()
	start := cpuTime()
	defer func() { reportCPU(b, start, 0) }()
	for b.Loop() {
		s, err := p.Stream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		a := drain(b, s)
		s.Close()
		if a.Finish == "" {
			b.Fatal("no finish")
		}
	}
}

// The per-turn overhead is the fixed cost of a turn through an adapter —
// encoding a mid-session request, net/http's client, opening and closing the
// stream — measured with a short answer (text, usage, finish) over an
// in-memory transport. Streaming longer answers adds the per-chunk cost the
// Parse benchmarks measure (bytes / throughput).

const openAIShort = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":"Done."},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":5000,"completion_tokens":2,"total_tokens":5002}}

data: [DONE]

`

const anthropicShort = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5000,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Done."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}

event: message_stop
data: {"type":"message_stop"}

`

func BenchmarkOpenAITurnOverhead(b *testing.B) {
	a, err := openai.New(openai.Config{BaseURL: "http://mem/v1", APIKey: "k", HTTPClient: &http.Client{Transport: memTransport{[]byte(openAIShort)}}})
	if err != nil {
		b.Fatal(err)
	}
	benchTurn(b, a, 0)
}

func BenchmarkAnthropicTurnOverhead(b *testing.B) {
	a, err := anthropic.New(anthropic.Config{BaseURL: "http://mem", APIKey: "k", HTTPClient: &http.Client{Transport: memTransport{[]byte(anthropicShort)}}})
	if err != nil {
		b.Fatal(err)
	}
	benchTurn(b, a, 0)
}

// BenchmarkOpenAITurn60Chunks: a whole turn with a 60-chunk answer (text and
// a streamed tool call) over the in-memory transport.
func BenchmarkOpenAITurn60Chunks(b *testing.B) {
	body := openAIStream(60)
	a, err := openai.New(openai.Config{BaseURL: "http://mem/v1", APIKey: "k", HTTPClient: &http.Client{Transport: memTransport{body}}})
	if err != nil {
		b.Fatal(err)
	}
	benchTurn(b, a, len(body))
}

// BenchmarkAnthropicTurn60Chunks: the same for the Anthropic adapter.
func BenchmarkAnthropicTurn60Chunks(b *testing.B) {
	body := anthropicStream(60)
	a, err := anthropic.New(anthropic.Config{BaseURL: "http://mem", APIKey: "k", HTTPClient: &http.Client{Transport: memTransport{body}}})
	if err != nil {
		b.Fatal(err)
	}
	benchTurn(b, a, len(body))
}

// BenchmarkOpenAITurnLoopback: the same turn over a real loopback HTTP
// server, for comparison (includes the kernel's TCP and the server).
func BenchmarkOpenAITurnLoopback(b *testing.B) {
	body := openAIStream(60)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
	defer srv.Close()
	a, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	benchTurn(b, a, len(body))
}

// BenchmarkOpenAIEncode: request encoding alone for the typical turn.
func BenchmarkOpenAIEncode(b *testing.B) {
	a, _ := openai.New(openai.Config{})
	req := typicalRequest()
	b.ReportAllocs()
	start := cpuTime()
	defer func() { reportCPU(b, start, 0) }()
	for b.Loop() {
		if _, err := a.Encode(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnthropicEncode: request encoding alone for the typical turn.
func BenchmarkAnthropicEncode(b *testing.B) {
	a, _ := anthropic.New(anthropic.Config{})
	req := typicalRequest()
	b.ReportAllocs()
	start := cpuTime()
	defer func() { reportCPU(b, start, 0) }()
	for b.Loop() {
		if _, err := a.Encode(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScriptedTurn: a scripted turn (text chunked in 8 runes plus a tool
// call), the cost the Session's own benchmarks pay per provider turn.
func BenchmarkScriptedTurn(b *testing.B) {
	p, _ := scripted.New(scripted.Config{Script: &scripted.Script{WhenExhausted: "cycle", Turns: []scripted.Turn{{
		Text: strings.Repeat("word ", 40), Chunk: 8,
		ToolCalls: []scripted.ToolCall{{Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}},
	}}}})
	benchTurn(b, p, 0)
}

// Peers measured in the same run, so the figures above can be read as
// ratios on a loaded, shared machine.

// peerChunk mirrors the fields the OpenAI decoder reads.
type peerChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func dataLines(stream []byte) [][]byte {
	var out [][]byte
	for _, line := range bytes.Split(stream, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && !bytes.Equal(d, []byte("[DONE]")) {
			out = append(out, d)
		}
	}
	return out
}

// BenchmarkPeerJSONUnmarshal10kChunks: encoding/json decoding the same 10,000
// chunk payloads into an equivalent struct (no SSE framing, no parts) — what
// a reflection-based decoder costs.
func BenchmarkPeerJSONUnmarshal10kChunks(b *testing.B) {
	data := openAIStream(chunks)
	lines := dataLines(data)
	b.SetBytes(int64(len(data)))
	start := cpuTime()
	defer func() { reportCPU(b, start, len(data)) }()
	for b.Loop() {
		for _, l := range lines {
			var c peerChunk
			if err := json.Unmarshal(l, &c); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPeerJSONValid10kChunks: encoding/json merely validating the same
// payloads — a floor no JSON decoder built on it can beat.
func BenchmarkPeerJSONValid10kChunks(b *testing.B) {
	data := openAIStream(chunks)
	lines := dataLines(data)
	b.SetBytes(int64(len(data)))
	start := cpuTime()
	defer func() { reportCPU(b, start, len(data)) }()
	for b.Loop() {
		for _, l := range lines {
			if !json.Valid(l) {
				b.Fatal("invalid")
			}
		}
	}
}

// BenchmarkPeerHTTPClientOnly: net/http alone posting the typical request's
// pre-encoded body and reading the short answer over the in-memory
// transport — the part of TurnOverhead that is not our code.
func BenchmarkPeerHTTPClientOnly(b *testing.B) {
	a, _ := openai.New(openai.Config{})
	body, err := a.Encode(typicalRequest())
	if err != nil {
		b.Fatal(err)
	}
	c := &http.Client{Transport: memTransport{[]byte(openAIShort)}}
	b.ReportAllocs()
	start := cpuTime()
	defer func() { reportCPU(b, start, 0) }()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://mem/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
