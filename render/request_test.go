package render

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/session"
)

// TestRequestIsUnchangedByItsAllocationCuts compares Request with
// the straightforward lowering it replaced (kept below as the reference) on
// histories covering every message and part kind: the requests must be the
// same value, so providers see byte-identical requests.
func TestRequestIsUnchangedByItsAllocationCuts(t *testing.T) {
	cur := messages.ModelRef{Provider: "p", ID: "m"}
	other := messages.ModelRef{Provider: "p", ID: "old"}
	sig := []byte(`{"` + provider.MetaReasoningSignature + `":"sig"}`)
	tool := func(id, in string, st messages.ToolState, out, errText string) messages.Part {
		return messages.Part{Kind: messages.PartTool, Tool: &messages.ToolPart{CallID: id, Tool: "bash", Input: []byte(in), State: st, Output: out, Error: errText}}
	}
	text := func(s string) messages.Part { return messages.Part{Kind: messages.PartText, Text: s} }
	reason := func(s string) messages.Part {
		return messages.Part{Kind: messages.PartReasoning, Text: s, ProviderMetadata: sig}
	}
	history := []messages.Message{
		{Role: messages.RoleCompaction, Text: "summary", RecentContext: "recent"},
		{Role: messages.RoleCompaction, Text: "summary only"},
		{Role: messages.RoleUser, Prompt: &messages.Prompt{Text: "hello", Attachments: []messages.Attachment{
			{Kind: "file", Name: "a.txt", URI: "file:///a.txt"},
			{Kind: "image", Name: "b.png", MediaType: "image/png", Data: []byte{1, 2}},
		}}},
		{Role: messages.RoleUser},
		{Role: messages.RoleSystem, Text: "context changed"},
		{Role: messages.RoleAssistant, Model: cur, Parts: []messages.Part{text("one part")}},
		{Role: messages.RoleAssistant, Model: cur, Parts: []messages.Part{reason("think"), text("a"), text("b"), reason("more")}},
		{Role: messages.RoleAssistant, Model: other, Parts: []messages.Part{reason("old thoughts"), reason(""), text("answer")}},
		{Role: messages.RoleAssistant, Model: other, Parts: []messages.Part{reason("only thoughts")}},
		{Role: messages.RoleAssistant, Model: cur, Parts: []messages.Part{
			text("calling"),
			tool("c1", `{"command":"echo"}`, messages.ToolStateCompleted, "out", ""),
			tool("c2", `not json`, messages.ToolStateFailed, "", "boom"),
			tool("c3", ``, messages.ToolStateRunning, "", ""),
		}},
		{Role: messages.RoleAssistant, Model: cur, Parts: []messages.Part{tool("c4", `{}`, messages.ToolStateCompleted, "x", "")}},
		{Role: messages.RoleAssistant, Model: cur}, // failed before producing anything
		{Role: messages.RoleAssistant, Model: cur, Parts: []messages.Part{text("")}},
	}
	tools := []provider.Tool{{Name: "bash", Schema: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []Turn{
		{Model: cur, Baseline: "base", History: history, Tools: tools},
		{Model: cur, Baseline: "base", History: history, Tools: tools, LastTurn: true},
		{Model: other, History: history},
		{Model: cur, History: nil},
		{Model: cur, History: nil, LastTurn: true},
		{Model: cur, History: history[len(history)-2:]},
	} {
		got, want := Request(tc), referenceRequest(tc)
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Fatalf("request differs from the reference lowering:\n%s\n%s", g, w)
		}
	}
}

// referenceRequest is Request as it was before its allocations were cut.
func referenceRequest(r Turn) *provider.Request {
	req := &provider.Request{
		Model:  provider.ModelRef{Provider: r.Model.Provider, Model: r.Model.ID},
		System: r.Baseline,
	}
	if r.LastTurn {
		req.ToolChoice = provider.ToolChoiceNone
	} else {
		req.Tools = r.Tools
	}
	for _, m := range r.History {
		switch m.Role {
		case messages.RoleUser:
			req.Messages = append(req.Messages, userMessage(&m))
		case messages.RoleSystem:
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleSystem, Text: m.Text})
		case messages.RoleCompaction:
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Text: compactionText(&m)})
		case messages.RoleAssistant:
			req.Messages = append(req.Messages, referenceAssistant(m, r.Model)...)
		}
	}
	if r.LastTurn {
		req.Messages = append(req.Messages, provider.Message{Role: provider.RoleSystem, Text: session.MaxStepsInstruction})
	}
	return req
}

func referenceAssistant(m messages.Message, current messages.ModelRef) []provider.Message {
	sameModel := m.Model == current
	msg := provider.Message{Role: provider.RoleAssistant}
	var text strings.Builder
	var results []provider.Message
	for _, p := range m.Parts {
		switch p.Kind {
		case messages.PartText:
			text.WriteString(p.Text)
		case messages.PartReasoning:
			if sameModel {
				msg.Reasoning = append(msg.Reasoning, provider.Reasoning{Text: p.Text, Signature: reasoningSignature(p.ProviderMetadata)})
			} else if p.Text != "" {
				text.WriteString(p.Text)
				text.WriteString("\n")
			}
		case messages.PartTool:
			t := p.Tool
			args := json.RawMessage(t.Input)
			if len(args) == 0 || !json.Valid(args) {
				args = json.RawMessage("{}")
			}
			msg.ToolCalls = append(msg.ToolCalls, provider.ToolCall{ID: t.CallID, Name: t.Tool, Args: args})
			results = append(results, provider.Message{Role: provider.RoleTool, ToolResult: toolResult(t)})
		}
	}
	msg.Text = text.String()
	if msg.Text == "" && len(msg.Reasoning) == 0 && len(msg.ToolCalls) == 0 {
		return nil
	}
	return append([]provider.Message{msg}, results...)
}
