package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/jsonw"
)

// The request encoder before appendBody, kept as the reference appendBody is
// compared with (TestAppendBodyMatchesReference, FuzzAppendBody).

// wire types of the request body.

type wireRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	System        []wireBlock     `json:"system,omitempty"`
	Messages      []wireMessage   `json:"messages"`
	Tools         []wireTool      `json:"tools,omitempty"`
	ToolChoice    *wireToolChoice `json:"tool_choice,omitempty"`
	Thinking      *wireThinking   `json:"thinking,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is any content block; unused fields are omitted.
type wireBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Thinking     string          `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      string          `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Source       *wireSource     `json:"source,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type wireSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireToolChoice struct {
	Type                   string `json:"type"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type wireThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// refObjectSchema is sent for a tool without a schema.
const refObjectSchema = `{"type":"object","properties":{}}`

// refMinThinkingBudget is the API's minimum budget_tokens.
const refMinThinkingBudget = 1024

func refThinkingBudget(o provider.Options) int {
	if o.ReasoningBudget > 0 {
		return o.ReasoningBudget
	}
	switch o.ReasoningEffort {
	case "low", "minimal":
		return 4096
	case "medium":
		return 16384
	case "high":
		return 32768
	}
	return 0
}

// referenceEncode is Encode as it was before appendBody: wire structs, then
// written with jsonw. appendBody must produce the same bytes.
func (a *Adapter) referenceEncode(req *provider.Request) ([]byte, error) {
	if err := req.Validate(); err != nil {
		if pe, ok := err.(*provider.Error); ok {
			pe.Provider = Kind
		}
		return nil, err
	}
	w := wireRequest{
		Model:         req.Model.Model,
		MaxTokens:     req.Controls.MaxOutputTokens,
		Stream:        true,
		Temperature:   req.Controls.Temperature,
		TopP:          req.Controls.TopP,
		StopSequences: req.Controls.Stop,
	}
	if w.MaxTokens <= 0 {
		w.MaxTokens = a.cfg.DefaultMaxTokens
	}
	if req.System != "" {
		w.System = []wireBlock{{Type: "text", Text: req.System, CacheControl: &cacheControl{Type: "ephemeral"}}}
	}
	msgs, usedTools, err := refEncodeMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	if b := refThinkingBudget(req.Options); b > 0 && !refUnsignedToolTurn(msgs) {
		// budget_tokens must be below max_tokens and at least 1024.
		if b > w.MaxTokens-refMinThinkingBudget {
			b = w.MaxTokens - refMinThinkingBudget
		}
		if b >= refMinThinkingBudget {
			w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: b}
			// Extended thinking refuses modified temperature and top_p < 0.95.
			w.Temperature = nil
			if w.TopP != nil && *w.TopP < 0.95 {
				w.TopP = nil
			}
		}
	}
	w.Messages = msgs
	if !a.cfg.NoConversationCache {
		refMarkLastBlock(w.Messages)
	}
	for _, t := range req.Tools {
		schema := t.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(refObjectSchema)
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
		delete(usedTools, t.Name)
	}
	if len(req.Tools) == 0 && len(usedTools) > 0 {
		// The API refuses tool_use/tool_result blocks without tool
		// definitions; on a turn sent without tools (the last allowed step),
		// declare the tools the history used and forbid calling them.
		for _, name := range sortedKeys(usedTools) {
			w.Tools = append(w.Tools, wireTool{Name: name, InputSchema: json.RawMessage(refObjectSchema)})
		}
		w.ToolChoice = &wireToolChoice{Type: "none"}
	} else if len(w.Tools) > 0 {
		if req.ToolChoice == provider.ToolChoiceNone {
			w.ToolChoice = &wireToolChoice{Type: "none"}
		} else {
			w.ToolChoice = &wireToolChoice{Type: "auto"}
			if p := req.Options.ParallelToolCalls; p != nil && !*p {
				w.ToolChoice.DisableParallelToolUse = true
			}
		}
	}
	return w.write(req.Wire), nil
}

// write renders the body with internal/jsonw (no reflection, raw schemas and
// inputs copied as they are — Validate checked them). Wire fields replace
// computed ones of the same name and come last, sorted.
func (r *wireRequest) write(wire map[string]json.RawMessage) []byte {
	size := 1024
	for _, b := range r.System {
		size += len(b.Text)
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			size += len(b.Text) + len(b.Content) + len(b.Thinking) + len(b.Input) + 64
			if b.Source != nil {
				size += len(b.Source.Data)
			}
		}
	}
	for _, t := range r.Tools {
		size += len(t.Description) + len(t.InputSchema) + 64
	}
	w := jsonw.Writer{B: make([]byte, 0, size)}
	own := func(k string) bool { _, over := wire[k]; return !over }
	w.Open('{')
	w.Key("model")
	w.Str(r.Model)
	if own("max_tokens") {
		w.Key("max_tokens")
		w.Int(r.MaxTokens)
	}
	w.Key("stream")
	w.Bool(true)
	if len(r.System) > 0 && own("system") {
		w.Key("system")
		w.Open('[')
		for i := range r.System {
			refWriteBlock(&w, &r.System[i])
		}
		w.Close(']')
	}
	w.Key("messages")
	w.Open('[')
	for _, m := range r.Messages {
		w.Open('{')
		w.Key("role")
		w.Str(m.Role)
		w.Key("content")
		w.Open('[')
		for i := range m.Content {
			refWriteBlock(&w, &m.Content[i])
		}
		w.Close(']')
		w.Close('}')
	}
	w.Close(']')
	if len(r.Tools) > 0 && own("tools") {
		w.Key("tools")
		w.Open('[')
		for _, t := range r.Tools {
			w.Open('{')
			w.Key("name")
			w.Str(t.Name)
			if t.Description != "" {
				w.Key("description")
				w.Str(t.Description)
			}
			w.Key("input_schema")
			w.Raw(t.InputSchema)
			w.Close('}')
		}
		w.Close(']')
	}
	if tc := r.ToolChoice; tc != nil && own("tool_choice") {
		w.Key("tool_choice")
		w.Open('{')
		w.Key("type")
		w.Str(tc.Type)
		if tc.DisableParallelToolUse {
			w.Key("disable_parallel_tool_use")
			w.Bool(true)
		}
		w.Close('}')
	}
	if th := r.Thinking; th != nil && own("thinking") {
		w.Key("thinking")
		w.Open('{')
		w.Key("type")
		w.Str(th.Type)
		w.Key("budget_tokens")
		w.Int(th.BudgetTokens)
		w.Close('}')
	}
	if r.Temperature != nil && own("temperature") {
		w.Key("temperature")
		w.Float(*r.Temperature)
	}
	if r.TopP != nil && own("top_p") {
		w.Key("top_p")
		w.Float(*r.TopP)
	}
	if len(r.StopSequences) > 0 && own("stop_sequences") {
		w.Key("stop_sequences")
		w.Open('[')
		for _, s := range r.StopSequences {
			w.Str(s)
		}
		w.Close(']')
	}
	for _, k := range sortedKeys(wire) {
		w.Key(k)
		w.Raw(wire[k])
	}
	w.Close('}')
	return w.B
}

func refWriteBlock(w *jsonw.Writer, b *wireBlock) {
	w.Open('{')
	w.Key("type")
	w.Str(b.Type)
	switch b.Type {
	case "text":
		w.Key("text")
		w.Str(b.Text)
	case "thinking":
		w.Key("thinking")
		w.Str(b.Thinking)
		w.Key("signature")
		w.Str(b.Signature)
	case "redacted_thinking":
		w.Key("data")
		w.Str(b.Data)
	case "tool_use":
		w.Key("id")
		w.Str(b.ID)
		w.Key("name")
		w.Str(b.Name)
		w.Key("input")
		w.Raw(b.Input)
	case "tool_result":
		w.Key("tool_use_id")
		w.Str(b.ToolUseID)
		w.Key("content")
		w.Str(b.Content)
		if b.IsError {
			w.Key("is_error")
			w.Bool(true)
		}
	case "image", "document":
		w.Key("source")
		w.Open('{')
		w.Key("type")
		w.Str(b.Source.Type)
		w.Key("media_type")
		w.Str(b.Source.MediaType)
		w.Key("data")
		w.Str(b.Source.Data)
		w.Close('}')
	}
	if b.CacheControl != nil {
		w.Key("cache_control")
		w.Open('{')
		w.Key("type")
		w.Str(b.CacheControl.Type)
		w.Close('}')
	}
	w.Close('}')
}

// refEncodeMessages lowers the history: consecutive user-side entries (user
// text, tool results, mid-conversation system messages, which have no native
// chronological role here and become <system-update> user text) merge into
// one user message with tool_result blocks first, as the API requires. It
// returns the tool names the history uses.
func refEncodeMessages(hist []provider.Message) ([]wireMessage, map[string]bool, error) {
	out := make([]wireMessage, 0, len(hist))
	used := map[string]bool{}
	callNames := map[string]string{}
	var results, rest []wireBlock
	flushUser := func() {
		if len(results)+len(rest) == 0 {
			return
		}
		content := make([]wireBlock, 0, len(results)+len(rest))
		content = append(append(content, results...), rest...)
		out = append(out, wireMessage{Role: "user", Content: content})
		results, rest = results[:0], rest[:0] // content holds copies
	}
	for i := range hist {
		m := &hist[i]
		switch m.Role {
		case provider.RoleUser:
			if m.Text != "" {
				rest = append(rest, wireBlock{Type: "text", Text: m.Text})
			}
			for _, at := range m.Attachments {
				b, err := refEncodeAttachment(at)
				if err != nil {
					return nil, nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: fmt.Sprintf("message %d: %v", i, err)}
				}
				rest = append(rest, b)
			}
		case provider.RoleSystem:
			rest = append(rest, wireBlock{Type: "text", Text: provider.WrapSystemUpdate(m.Text)})
		case provider.RoleTool:
			r := m.ToolResult
			text := r.Output
			if text == "" {
				// Empty content with is_error is refused; say what happened.
				text = "(no output)"
			}
			if name := callNames[r.CallID]; name != "" {
				used[name] = true
			}
			results = append(results, wireBlock{Type: "tool_result", ToolUseID: r.CallID, Content: text, IsError: r.IsError})
		case provider.RoleAssistant:
			content := make([]wireBlock, 0, len(m.Reasoning)+1+len(m.ToolCalls))
			for _, r := range m.Reasoning {
				// Signatures only verify with the provider that made them;
				// unsigned reasoning (e.g. from an OpenAI-compatible model
				// before a switch) is not replayable as a thinking block.
				switch {
				case r.Provider != Kind && r.Provider != "":
				case r.Redacted != "":
					content = append(content, wireBlock{Type: "redacted_thinking", Data: r.Redacted})
				case r.Signature != "":
					content = append(content, wireBlock{Type: "thinking", Thinking: r.Text, Signature: r.Signature})
				}
			}
			if m.Text != "" {
				content = append(content, wireBlock{Type: "text", Text: m.Text})
			}
			for _, c := range m.ToolCalls {
				args := c.Args
				if len(bytes.TrimSpace(args)) == 0 {
					args = json.RawMessage("{}")
				}
				callNames[c.ID] = c.Name
				used[c.Name] = true
				content = append(content, wireBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: args})
			}
			if len(content) == 0 {
				continue // an empty assistant turn is refused by the API
			}
			flushUser()
			out = append(out, wireMessage{Role: "assistant", Content: content})
		}
	}
	flushUser()
	return out, used, nil
}

// refUnsignedToolTurn reports whether the latest assistant message calls tools
// without starting with a thinking block. With thinking enabled the API
// refuses such a history (the tool loop in progress must keep its signed
// thinking), which happens after a switch from another provider's model;
// that turn is then sent without thinking, which the API allows.
func refUnsignedToolTurn(msgs []wireMessage) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "assistant" {
			continue
		}
		c := msgs[i].Content
		hasTool := false
		for _, b := range c {
			hasTool = hasTool || b.Type == "tool_use"
		}
		return hasTool && c[0].Type != "thinking" && c[0].Type != "redacted_thinking"
	}
	return false
}

// refMarkLastBlock sets the conversation cache breakpoint on the last block of
// the last message that can carry one.
func refMarkLastBlock(msgs []wireMessage) {
	if len(msgs) == 0 {
		return
	}
	c := msgs[len(msgs)-1].Content
	for i := len(c) - 1; i >= 0; i-- {
		if t := c[i].Type; t != "thinking" && t != "redacted_thinking" {
			c[i].CacheControl = &cacheControl{Type: "ephemeral"}
			return
		}
	}
}

func refEncodeAttachment(at provider.Attachment) (wireBlock, error) {
	mt := strings.ToLower(at.MediaType)
	switch {
	case mt == "image/png" || mt == "image/jpeg" || mt == "image/gif" || mt == "image/webp":
		return wireBlock{Type: "image", Source: &wireSource{Type: "base64", MediaType: mt, Data: base64.StdEncoding.EncodeToString(at.Data)}}, nil
	case mt == "application/pdf":
		return wireBlock{Type: "document", Source: &wireSource{Type: "base64", MediaType: mt, Data: base64.StdEncoding.EncodeToString(at.Data)}}, nil
	case strings.HasPrefix(mt, "text/"):
		text := string(at.Data)
		if at.Name != "" {
			text = "<file name=\"" + at.Name + "\">\n" + text + "\n</file>"
		}
		return wireBlock{Type: "text", Text: text}, nil
	}
	return wireBlock{}, fmt.Errorf("attachment %q: media type %q is not supported by the anthropic adapter", at.Name, at.MediaType)
}
