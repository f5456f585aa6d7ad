package compaction

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
)

// request200k is a realistic agent request of about 200k tokens: a 20 KB
// baseline, 12 tools, and alternating prompts, assistant text with tool calls
// and tool results of code-like text, a little of it non-ASCII.
func request200k() *provider.Request {
	req := &provider.Request{
		Model:  provider.ModelRef{Provider: "anthropic", Model: "claude-sonnet-4-5"},
		System: strings.Repeat("You are a coding agent. Follow the project rules exactly. ", 350),
	}
	for i := range 12 {
		req.Tools = append(req.Tools, provider.Tool{Name: fmt.Sprintf("tool_%d", i), Description: strings.Repeat("Does a thing. ", 20),
			Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path"]}`)})
	}
	code := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { // überprüfen 日本\n\tif err := r.ParseForm(); err != nil { return }\n}\n", 40)
	for i := 0; compaction.Estimate(req) < 200_000; i++ {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			provider.Message{Role: provider.RoleUser, Text: fmt.Sprintf("step %d: please fix the handler and run the tests", i)},
			provider.Message{Role: provider.RoleAssistant, Text: "Reading the file.", Reasoning: []provider.Reasoning{{Text: strings.Repeat("think ", 50)}},
				ToolCalls: []provider.ToolCall{{ID: id, Name: "read", Args: json.RawMessage(`{"path":"server/handler.go"}`)}}},
			provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: id, Name: "read", Output: code}})
	}
	return req
}

func requestBytes(r *provider.Request) int {
	b, _ := json.Marshal(r)
	return len(b)
}

func BenchmarkEstimate200kTokens(b *testing.B) {
	req := request200k()
	n := compaction.Estimate(req)
	b.SetBytes(int64(requestBytes(req)))
	b.ReportAllocs()
	for b.Loop() {
		compaction.Estimate(req)
	}
	b.ReportMetric(float64(n), "tokens")
}

// BenchmarkPlan200kTokens plans the compaction of a history of about 200k
// tokens (the serialization and estimate of everything it summarizes).
func BenchmarkPlan200kTokens(b *testing.B) {
	code := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { return }\n", 60)
	var hist []messages.Message
	for i := 0; len(hist) < 270; i++ {
		hist = append(hist,
			messages.Message{Role: messages.RoleUser, Prompt: &messages.Prompt{Text: fmt.Sprintf("step %d: fix it", i)}},
			messages.Message{Role: messages.RoleAssistant, Parts: []messages.Part{
				{Kind: messages.PartText, Text: "Reading."},
				{Kind: messages.PartTool, Tool: &messages.ToolPart{CallID: fmt.Sprint(i), Tool: "read", Input: []byte(`{"path":"a.go"}`), State: messages.ToolStateCompleted, Output: code}},
			}})
	}
	in := compaction.Input{History: hist, Model: provider.ModelRef{Provider: "p", Model: "m"}, Window: 400_000, OutputAllowance: 8000, Config: compaction.DefaultConfig()}
	plan, err := compaction.NewPlan(in)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compaction.NewPlan(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(plan.Estimate), "summary-tokens")
}
