package actors

import (
	"encoding/json"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/provider"
)

// InterruptedToolError is what a tool left running by an interruption or a
// dead process settles with (OpenCode's wording, kept for parity).
const InterruptedToolError = "Tool execution interrupted"

// turnRequest is everything one provider request is built from.
type turnRequest struct {
	Model    messages.ModelRef
	Baseline string
	History  []persistence.Message
	Tools    []provider.Tool
	LastTurn bool // no tools, and the maximum-steps instruction
}

// buildRequest lowers projected history into a provider request. It is pure:
// the same history and selection always give the same request, which is what
// keeps the provider's prompt-cache prefix stable across restarts.
//
//   - user prompts become user messages; mid-conversation system messages stay
//     system messages (each adapter lowers them natively or as <system-update>);
//   - an assistant message becomes one assistant message with its text,
//     reasoning and tool calls, followed by one tool message per call with its
//     settled output or error;
//   - reasoning and provider metadata are replayed only to the model that
//     produced them: after a model switch reasoning becomes plain text and
//     metadata is dropped (providers reject foreign signatures);
//   - a completed compaction replaces everything before it (the journal's
//     history already starts at it) with its summary and recent context.
func buildRequest(r turnRequest) *provider.Request {
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
		case persistence.RoleUser:
			req.Messages = append(req.Messages, userMessage(m))
		case persistence.RoleSystem:
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleSystem, Text: m.Text})
		case persistence.RoleCompaction:
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Text: compactionText(m)})
		case persistence.RoleAssistant:
			req.Messages = append(req.Messages, assistantMessages(m, r.Model)...)
		}
	}
	if r.LastTurn {
		req.Messages = append(req.Messages, provider.Message{Role: provider.RoleSystem, Text: MaxStepsInstruction})
	}
	return req
}

func userMessage(m persistence.Message) provider.Message {
	out := provider.Message{Role: provider.RoleUser}
	if m.Prompt == nil {
		return out
	}
	out.Text = m.Prompt.Text
	for _, a := range m.Prompt.Attachments {
		if len(a.Data) == 0 {
			// An unresolved reference: tell the model what was attached
			// rather than silently dropping it.
			out.Text += "\n[attachment " + a.Kind + " " + a.Name + " " + a.URI + "]"
			continue
		}
		out.Attachments = append(out.Attachments, provider.Attachment{Name: a.Name, MediaType: a.MediaType, Data: a.Data})
	}
	return out
}

// compactionText is the model-visible checkpoint of a completed compaction.
func compactionText(m persistence.Message) string {
	var b strings.Builder
	b.WriteString("<conversation-summary>\n")
	b.WriteString(m.Text)
	b.WriteString("\n</conversation-summary>")
	if m.RecentContext != "" {
		b.WriteString("\n<recent-context>\n")
		b.WriteString(m.RecentContext)
		b.WriteString("\n</recent-context>")
	}
	return b.String()
}

func assistantMessages(m persistence.Message, current messages.ModelRef) []provider.Message {
	sameModel := m.Model == current
	msg := provider.Message{Role: provider.RoleAssistant}
	var text strings.Builder
	var results []provider.Message
	for _, p := range m.Parts {
		switch p.Kind {
		case persistence.PartText:
			text.WriteString(p.Text)
		case persistence.PartReasoning:
			if sameModel {
				msg.Reasoning = append(msg.Reasoning, provider.Reasoning{Text: p.Text, Signature: reasoningSignature(p.ProviderMetadata)})
			} else if p.Text != "" {
				text.WriteString(p.Text)
				text.WriteString("\n")
			}
		case persistence.PartTool:
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
		return nil // a turn that failed before producing anything
	}
	return append([]provider.Message{msg}, results...)
}

func toolResult(t *persistence.ToolPart) *provider.ToolResult {
	r := &provider.ToolResult{CallID: t.CallID, Name: t.Tool}
	switch t.State {
	case persistence.ToolCompleted:
		r.Output = t.Output
	case persistence.ToolFailed:
		r.Output, r.IsError = t.Error, true
	default:
		// Unsettled calls are failed durably before any request is built;
		// reaching here means a bug, and the model must not see a hole.
		r.Output, r.IsError = InterruptedToolError, true
	}
	return r
}

// reasoningSignature extracts the signature the provider attached to a
// reasoning part (stored as the part's provider metadata).
func reasoningSignature(meta []byte) string {
	if len(meta) == 0 {
		return ""
	}
	var m map[string]string
	if json.Unmarshal(meta, &m) != nil {
		return ""
	}
	return m[provider.MetaReasoningSignature]
}
