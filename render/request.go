package render

import (
	"encoding/json"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/session"
)

// Turn is everything one provider request is built from.
type Turn struct {
	Model    messages.ModelRef
	Baseline string
	History  []messages.Message
	Tools    []provider.Tool
	LastTurn bool // no tools, and the maximum-steps instruction
	// Settings are the agent's request settings.
	Settings Settings
}

// Settings are request settings in the provider request's three domains.
type Settings struct {
	Controls provider.Controls
	Options  provider.Options
	Wire     map[string]json.RawMessage
}

// Request lowers projected history into a provider request.
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
func Request(r Turn) *provider.Request {
	req := &provider.Request{
		Model:    provider.ModelRef{Provider: r.Model.Provider, Model: r.Model.ID},
		Variant:  r.Model.Variant,
		System:   r.Baseline,
		Controls: r.Settings.Controls,
		Options:  r.Settings.Options,
		Wire:     r.Settings.Wire,
	}
	if r.LastTurn {
		req.ToolChoice = provider.ToolChoiceNone
	} else {
		req.Tools = r.Tools
	}
	// One allocation for the messages: every history message gives one,
	// an assistant message one more per tool call, the last turn one more.
	n := len(r.History)
	for i := range r.History {
		for _, p := range r.History[i].Parts {
			if p.Kind == messages.PartTool {
				n++
			}
		}
	}
	if r.LastTurn {
		n++
	}
	if n > 0 {
		req.Messages = make([]provider.Message, 0, n)
	}
	for i := range r.History {
		m := &r.History[i]
		switch m.Role {
		case messages.RoleUser:
			req.Messages = append(req.Messages, userMessage(m))
		case messages.RoleSystem:
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleSystem, Text: m.Text})
		case messages.RoleCompaction:
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Text: compactionText(m)})
		case messages.RoleAssistant:
			req.Messages = appendAssistant(req.Messages, m, r.Model)
		}
	}
	if r.LastTurn {
		req.Messages = append(req.Messages, provider.Message{Role: provider.RoleSystem, Text: session.MaxStepsInstruction})
	}
	if len(req.Messages) == 0 {
		req.Messages = nil // as when nothing was ever appended
	}
	return req
}

func userMessage(m *messages.Message) provider.Message {
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
func compactionText(m *messages.Message) string {
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

// appendAssistant appends an assistant message and then one tool message
// per call to dst.
func appendAssistant(dst []provider.Message, m *messages.Message, current messages.ModelRef) []provider.Message {
	sameModel := m.Model.SameModel(current)
	msg := provider.Message{Role: provider.RoleAssistant}
	// The common assistant message has one text part: its text is used as
	// is; only several pieces are joined.
	var text strings.Builder
	pieces, first := 0, ""
	add := func(s string) {
		if pieces == 1 {
			text.WriteString(first)
		}
		if pieces == 0 {
			first = s
		} else {
			text.WriteString(s)
		}
		pieces++
	}
	calls := 0
	for _, p := range m.Parts {
		switch p.Kind {
		case messages.PartText:
			add(p.Text)
		case messages.PartReasoning:
			if sameModel {
				msg.Reasoning = append(msg.Reasoning, provider.Reasoning{Text: p.Text, Signature: reasoningSignature(p.ProviderMetadata)})
			} else if p.Text != "" {
				add(p.Text)
				add("\n")
			}
		case messages.PartTool:
			calls++
		}
	}
	switch pieces {
	case 0:
	case 1:
		msg.Text = first
	default:
		msg.Text = text.String()
	}
	if calls > 0 {
		msg.ToolCalls = make([]provider.ToolCall, 0, calls)
		for _, p := range m.Parts {
			if t := p.Tool; p.Kind == messages.PartTool {
				args := json.RawMessage(t.Input)
				if len(args) == 0 || !json.Valid(args) {
					args = json.RawMessage("{}")
				}
				msg.ToolCalls = append(msg.ToolCalls, provider.ToolCall{ID: t.CallID, Name: t.Tool, Args: args})
			}
		}
	}
	if msg.Text == "" && len(msg.Reasoning) == 0 && len(msg.ToolCalls) == 0 {
		return dst // a turn that failed before producing anything
	}
	dst = append(dst, msg)
	for _, p := range m.Parts {
		if p.Kind == messages.PartTool {
			dst = append(dst, provider.Message{Role: provider.RoleTool, ToolResult: toolResult(p.Tool)})
		}
	}
	return dst
}

func toolResult(t *messages.ToolPart) *provider.ToolResult {
	r := &provider.ToolResult{CallID: t.CallID, Name: t.Tool}
	switch t.State {
	case messages.ToolStateCompleted:
		r.Output = t.Output
	case messages.ToolStateFailed:
		r.Output, r.IsError = t.Error, true
	default:
		// Unsettled calls are failed durably before any request is built;
		// reaching here means a bug, and the model must not see a hole.
		r.Output, r.IsError = session.InterruptedToolError, true
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
