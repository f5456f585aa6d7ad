package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/httpx"
	"github.com/sessionrt/sessionrt/provider/internal/idle"
	"github.com/sessionrt/sessionrt/provider/internal/jsonw"
)

// Kind is the adapter kind stamped on errors and reasoning blocks.
const Kind = "anthropic"

// DefaultBaseURL is Anthropic's API root; "/v1/messages" is appended.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header sent.
const APIVersion = "2023-06-01"

// Config configures the adapter. Zero fields take the documented defaults.
type Config struct {
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey string
	// Headers are extra request headers (e.g. "anthropic-beta").
	Headers map[string]string
	// HTTPClient defaults to a client with connect, TLS and response-header
	// timeouts but no overall timeout.
	HTTPClient *http.Client
	// DefaultMaxTokens is max_tokens when the request's Controls give none
	// (the Messages API requires it). Default 8192.
	DefaultMaxTokens int
	// NoConversationCache disables the second cache breakpoint on the last
	// message (the first, on the baseline system text, is always set).
	NoConversationCache bool
	// IdleTimeout ends a stream on which no byte arrived for this long, with
	// a retryable error (a silent, half-dead connection must not hang a
	// session). Default 10 minutes — a reasoning model may think silently
	// for minutes; negative disables it.
	IdleTimeout time.Duration
	// Now is the clock for Retry-After dates. Default time.Now.
	Now func() time.Time
}

// Adapter is a provider.Provider for the Anthropic Messages API. It is safe
// for concurrent use.
type Adapter struct {
	endpoint string
	cfg      Config
}

// New returns an Adapter for cfg.
func New(cfg Config) (*Adapter, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = httpx.NewClient()
	}
	if cfg.DefaultMaxTokens <= 0 {
		cfg.DefaultMaxTokens = 8192
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	base = strings.TrimSuffix(base, "/v1")
	return &Adapter{endpoint: base + "/v1/messages", cfg: cfg}, nil
}

// Stream sends req and returns its stream of parts.
func (a *Adapter) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	body, err := a.Encode(req)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: "build HTTP request", Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	hreq.Header.Set("anthropic-version", APIVersion)
	if a.cfg.APIKey != "" {
		hreq.Header.Set("x-api-key", a.cfg.APIKey)
	}
	for k, v := range a.cfg.Headers {
		hreq.Header.Set(k, v)
	}
	resp, err := a.cfg.HTTPClient.Do(hreq)
	if err != nil {
		return nil, provider.TransportError(ctx, Kind, "POST "+a.endpoint, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if rerr != nil && ctx.Err() != nil {
			return nil, provider.TransportError(ctx, Kind, "read error response", rerr)
		}
		typ, msg := parseError(b)
		if msg == "" {
			msg = strings.TrimSpace(string(b))
			if len(msg) > provider.MaxSnippet {
				msg = provider.Quote(b)
			}
			if msg == "" {
				msg = http.StatusText(resp.StatusCode)
			}
		}
		return nil, provider.ClassifyHTTP(Kind, resp.StatusCode, typ, msg, resp.Header, a.cfg.Now())
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// A 200 with a JSON body: an error some gateways send with status
		// 200, or a server that ignored "stream": true. Never a stream.
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if code, msg := parseError(b); msg != "" {
			e := provider.ClassifyHTTP(Kind, resp.StatusCode, code, msg, resp.Header, a.cfg.Now())
			if e.Kind == provider.KindRetryable && code == "" {
				e.Kind = provider.KindInvalidRequest
			}
			return nil, e
		}
		return nil, provider.Malformed(Kind, "server answered with JSON, not an event stream (does it support streaming?)", b, nil)
	}
	return newStream(ctx, idle.Wrap(resp.Body, a.cfg.IdleTimeout)), nil
}

// parseError reads {"type":"error","error":{"type":..,"message":..}}.
func parseError(b []byte) (typ, msg string) {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil {
		return "", ""
	}
	return e.Error.Type, e.Error.Message
}

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

// objectSchema is sent for a tool without a schema.
const objectSchema = `{"type":"object","properties":{}}`

// minThinkingBudget is the API's minimum budget_tokens.
const minThinkingBudget = 1024

func thinkingBudget(o provider.Options) int {
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

// Encode returns the JSON request body for req (exported for tests and
// benchmarks of the encoding alone).
func (a *Adapter) Encode(req *provider.Request) ([]byte, error) {
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
	msgs, usedTools, err := encodeMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	if b := thinkingBudget(req.Options); b > 0 && !unsignedToolTurn(msgs) {
		// budget_tokens must be below max_tokens and at least 1024.
		if b > w.MaxTokens-minThinkingBudget {
			b = w.MaxTokens - minThinkingBudget
		}
		if b >= minThinkingBudget {
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
		markLastBlock(w.Messages)
	}
	for _, t := range req.Tools {
		schema := t.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(objectSchema)
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
		delete(usedTools, t.Name)
	}
	if len(req.Tools) == 0 && len(usedTools) > 0 {
		// The API refuses tool_use/tool_result blocks without tool
		// definitions; on a turn sent without tools (the last allowed step),
		// declare the tools the history used and forbid calling them.
		for _, name := range sortedKeys(usedTools) {
			w.Tools = append(w.Tools, wireTool{Name: name, InputSchema: json.RawMessage(objectSchema)})
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
			writeBlock(&w, &r.System[i])
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
			writeBlock(&w, &m.Content[i])
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

func writeBlock(w *jsonw.Writer, b *wireBlock) {
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

// encodeMessages lowers the history: consecutive user-side entries (user
// text, tool results, mid-conversation system messages, which have no native
// chronological role here and become <system-update> user text) merge into
// one user message with tool_result blocks first, as the API requires. It
// returns the tool names the history uses.
func encodeMessages(hist []provider.Message) ([]wireMessage, map[string]bool, error) {
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
				b, err := encodeAttachment(at)
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

// unsignedToolTurn reports whether the latest assistant message calls tools
// without starting with a thinking block. With thinking enabled the API
// refuses such a history (the tool loop in progress must keep its signed
// thinking), which happens after a switch from another provider's model;
// that turn is then sent without thinking, which the API allows.
func unsignedToolTurn(msgs []wireMessage) bool {
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

// markLastBlock sets the conversation cache breakpoint on the last block of
// the last message that can carry one.
func markLastBlock(msgs []wireMessage) {
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

func encodeAttachment(at provider.Attachment) (wireBlock, error) {
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
