package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sessionrt/sessionrt/provider/internal/jsonscan"
)

// Provider streams one provider turn.
//
// Stream returns an error (always an *Error) when the request fails before a
// response stream exists: bad request, HTTP status error, network failure.
// Cancelling ctx aborts the request and closes the underlying connection at
// once; Next then returns an *Error of KindInterrupted.
type Provider interface {
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// Stream is a pull stream of the parts of one provider turn.
//
// Next returns parts in order; after the PartFinish part it returns io.EOF.
// Any other error is an *Error and ends the stream. Close releases the
// connection; it is safe to call at any time and more than once. Next and
// Close must not be called concurrently except that Close may be called from
// another goroutine to abort a blocked Next (cancelling ctx does the same).
type Stream interface {
	Next() (Part, error)
	Close() error
}

// ModelRef names a model: the catalog's provider ID and the provider's model ID.
type ModelRef struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

func (m ModelRef) String() string { return m.Provider + "/" + m.Model }

// Request is one provider turn, provider-neutral.
type Request struct {
	Model ModelRef

	// Variant names one of Model's option sets in the catalog ("high",
	// "max": OpenCode's model variants), selected by the session; the
	// catalog applies its settings over the request's own (Registry.Stream).
	// Adapters ignore it.
	Variant string

	// System is the baseline system text: the exact provider-cache prefix.
	// Adapters send it verbatim as the first instruction (the Anthropic
	// adapter marks it with cache_control).
	System string

	// Messages is the chronological history, oldest first.
	Messages []Message

	// Tools are the tool definitions offered to the model.
	Tools []Tool

	// ToolChoice is ToolChoiceAuto (the zero value) or ToolChoiceNone.
	ToolChoice ToolChoice

	// Options are the provider-semantic Model Request Options.
	Options Options

	// Controls are the provider-neutral Generation Controls.
	Controls Controls

	// Wire holds raw compatibility request body fields, merged last into the
	// top-level JSON body (they override what the adapter computed). For
	// OpenAI-compatible servers that want extra fields (e.g. "top_k",
	// "chat_template_kwargs"). Keys the adapter must own ("model", "messages",
	// "stream") are refused.
	Wire map[string]json.RawMessage
}

// Role says who speaks a Message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries one tool result (Message.ToolResult).
	RoleTool Role = "tool"
	// RoleSystem is a Mid-Conversation System Message (Message.Text). It is
	// lowered per adapter: the native chronological role where supported,
	// otherwise user text wrapped by WrapSystemUpdate.
	RoleSystem Role = "system"
)

// Message is one entry of the chronological history. Which fields are used
// depends on Role:
//   - user: Text and Attachments;
//   - assistant: Reasoning (in order), Text, ToolCalls (in order);
//   - tool: ToolResult;
//   - system: Text.
type Message struct {
	Role        Role         `json:"role"`
	Text        string       `json:"text,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	Reasoning   []Reasoning  `json:"reasoning,omitempty"`
	ToolCalls   []ToolCall   `json:"tool_calls,omitempty"`
	ToolResult  *ToolResult  `json:"tool_result,omitempty"`
}

// Attachment is a file attached to a user message. Adapters support images
// (image/png, image/jpeg, image/gif, image/webp) and text (text/*); the
// Anthropic adapter also application/pdf. Anything else is refused with
// KindInvalidRequest rather than silently dropped.
type Attachment struct {
	Name      string `json:"name,omitempty"`
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
}

// Reasoning is one reasoning (thinking) block of an assistant message, with
// the provider metadata needed to replay it.
type Reasoning struct {
	Text string `json:"text,omitempty"`
	// Signature is Anthropic's thinking signature; Redacted is the opaque data
	// of an Anthropic redacted_thinking block. Blocks are replayed only to the
	// provider kind that produced them (Provider), because a signature is
	// meaningless elsewhere.
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
	// Provider is the adapter kind that produced the block ("anthropic", "openai").
	Provider string `json:"provider,omitempty"`
}

// ToolCall is a complete tool call requested by the model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args is the raw JSON arguments object, validated as JSON.
	Args json.RawMessage `json:"args"`
}

// ToolResult is the outcome of one tool call, replayed to the model.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name,omitempty"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
}

// Tool is a tool definition offered to the model.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Schema is the JSON Schema of the arguments object; empty means
	// {"type":"object"}.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// ToolChoice says whether the model may call tools.
type ToolChoice uint8

const (
	// ToolChoiceAuto lets the model decide.
	ToolChoiceAuto ToolChoice = iota
	// ToolChoiceNone forbids tool calls. Adapters whose wire format needs
	// definitions for tool blocks already in the history keep or synthesize
	// them, with the provider's "none" choice.
	ToolChoiceNone
)

// Options are Model Request Options: provider-semantic model settings chosen
// from the catalog and the session's variant. Adapters alone own their wire
// encoding; a setting a provider does not understand is not sent.
type Options struct {
	// ReasoningEffort is "low", "medium" or "high" ("" = provider default).
	// OpenAI-compatible: reasoning_effort. Anthropic: a thinking budget of
	// 4096/16384/32768 tokens unless ReasoningBudget is set.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// ReasoningBudget is an explicit thinking budget in tokens (Anthropic).
	ReasoningBudget int `json:"reasoning_budget,omitempty"`
	// ParallelToolCalls, when set, allows or forbids several tool calls per turn.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// CacheKey is a prompt-cache routing key (OpenAI prompt_cache_key); the
	// Session passes its ID.
	CacheKey string `json:"cache_key,omitempty"`
}

// Controls are Generation Controls: provider-neutral sampling and output
// controls. Zero values mean "provider default".
type Controls struct {
	Temperature     *float64 `json:"temperature,omitempty"`
	TopP            *float64 `json:"top_p,omitempty"`
	MaxOutputTokens int      `json:"max_output_tokens,omitempty"`
	Stop            []string `json:"stop,omitempty"`
}

// reservedWire says whether a body field is one an adapter must own.
func reservedWire(k string) bool { return k == "model" || k == "messages" || k == "stream" }

// Validate checks the request for mistakes that would otherwise surface as a
// confusing provider error. It returns an *Error of KindInvalidRequest.
func (r *Request) Validate() error {
	if r.Model.Model == "" {
		return invalid("request has no model ID")
	}
	for k := range r.Wire {
		if reservedWire(k) {
			return invalid(fmt.Sprintf("wire field %q is owned by the adapter", k))
		}
		if !jsonscan.Valid(r.Wire[k]) {
			return invalid(fmt.Sprintf("wire field %q is not valid JSON: %s", k, Quote(r.Wire[k])))
		}
	}
	for i, t := range r.Tools {
		if t.Name == "" {
			return invalid(fmt.Sprintf("tool %d has no name", i))
		}
		if len(t.Schema) > 0 && !jsonscan.Valid(t.Schema) {
			return invalid(fmt.Sprintf("tool %q schema is not valid JSON: %s", t.Name, Quote(t.Schema)))
		}
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleUser, RoleSystem:
		case RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return invalid(fmt.Sprintf("message %d: tool call without ID or name", i))
				}
				if len(c.Args) > 0 && !jsonscan.Valid(c.Args) {
					return invalid(fmt.Sprintf("message %d: tool call %s args are not valid JSON: %s", i, c.ID, Quote(c.Args)))
				}
			}
		case RoleTool:
			if m.ToolResult == nil || m.ToolResult.CallID == "" {
				return invalid(fmt.Sprintf("message %d: tool message without a tool result call ID", i))
			}
		default:
			return invalid(fmt.Sprintf("message %d: unknown role %q", i, m.Role))
		}
	}
	return nil
}

func invalid(msg string) error {
	return &Error{Kind: KindInvalidRequest, Message: msg}
}

// SystemUpdateOpen and SystemUpdateClose wrap a Mid-Conversation System
// Message lowered to user text for providers without a native chronological
// system role.
const (
	SystemUpdateOpen  = "<system-update>\n"
	SystemUpdateClose = "\n</system-update>"
)

// WrapSystemUpdate lowers a Mid-Conversation System Message to wrapped user text, the
// spec's "wrapped chronological fallback" (glossary 000) for providers without a
// native chronological system role. The text is XML-escaped so that it can neither
// close the wrapper early nor open tags of its own.
func WrapSystemUpdate(text string) string {
	return SystemUpdateOpen + EscapeXML(text) + SystemUpdateClose
}

// EscapeXML escapes the three characters that matter in XML text content, leaving
// quotes and newlines readable for the model. It is the one escaper of system-update
// text (contextsources.Lower uses it through WrapSystemUpdate).
func EscapeXML(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
