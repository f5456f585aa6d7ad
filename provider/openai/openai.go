// Package openai is the provider adapter for the OpenAI Chat Completions wire
// format with SSE streaming, as spoken by OpenAI and by OpenAI-compatible
// servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, …).
//
// It owns the wire encoding of a provider.Request and the decoding of
// chat.completion.chunk events into provider parts; it must not decide
// anything about sessions (retries live in provider.Retry, catalog lookups in
// provider/catalog).
package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/provider"
)

// Kind is the adapter kind stamped on errors and reasoning blocks.
const Kind = "openai"

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// MidSystem says how Mid-Conversation System Messages are lowered.
type MidSystem uint8

const (
	// MidSystemAuto: native for api.openai.com, wrapped for other servers
	// (many local chat templates reject a system message after the first).
	MidSystemAuto MidSystem = iota
	// MidSystemNative sends them as chronological "system" messages.
	MidSystemNative
	// MidSystemWrapped sends them as user text in <system-update> tags.
	MidSystemWrapped
)

// Config configures the adapter. Zero fields take the documented defaults.
type Config struct {
	// BaseURL is the API root; "/chat/completions" is appended. Default
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer"; empty sends none (local servers).
	APIKey string
	// Headers are extra request headers (e.g. OpenRouter's HTTP-Referer).
	Headers map[string]string
	// HTTPClient defaults to a client with connect, TLS and response-header
	// timeouts but no overall timeout (a stream may run for minutes).
	HTTPClient *http.Client
	// MidSystem defaults to MidSystemAuto.
	MidSystem MidSystem
	// MaxTokensField names the output-limit field: "max_tokens" (default for
	// compatible servers) or "max_completion_tokens" (default for api.openai.com).
	MaxTokensField string
	// Now is the clock for Retry-After dates. Default time.Now.
	Now func() time.Time
}

// Adapter is a provider.Provider for one OpenAI-compatible endpoint. It is
// safe for concurrent use.
type Adapter struct {
	endpoint  string
	cfg       Config
	native    bool
	maxTokens string
}

// New returns an Adapter for cfg.
func New(cfg Config) (*Adapter, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	official := u.Hostname() == "api.openai.com"
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = DefaultHTTPClient()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &Adapter{endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions", cfg: cfg}
	switch cfg.MidSystem {
	case MidSystemNative:
		a.native = true
	case MidSystemWrapped:
	default:
		a.native = official
	}
	a.maxTokens = cfg.MaxTokensField
	if a.maxTokens == "" {
		a.maxTokens = "max_tokens"
		if official {
			a.maxTokens = "max_completion_tokens"
		}
	}
	return a, nil
}

// DefaultHTTPClient is the client adapters use when none is configured.
func DefaultHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 10 * time.Minute, // a large prompt can take long to first byte
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}}
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
	if a.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+a.cfg.APIKey)
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
		return nil, a.httpError(ctx, resp)
	}
	return newStream(ctx, resp.Body), nil
}

// httpError classifies a non-2xx response from its body and headers.
func (a *Adapter) httpError(ctx context.Context, resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil && ctx.Err() != nil {
		return provider.TransportError(ctx, Kind, "read error response", err)
	}
	code, msg := parseErrorBody(b)
	if msg == "" {
		msg = strings.TrimSpace(string(b))
		if len(msg) > provider.MaxSnippet {
			msg = provider.Quote(b)
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
	}
	return provider.ClassifyHTTP(Kind, resp.StatusCode, code, msg, resp.Header, a.cfg.Now())
}

// errorBody covers OpenAI's {"error":{...}} and the flat {"error":"..."}
// of some compatible servers.
type errorBody struct {
	Error json.RawMessage `json:"error"`
	// Some servers put message/type/code at the top level.
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

type errorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// parseErrorBody extracts (code, message) from an error payload; code is the
// error's code when it has one, else its type.
func parseErrorBody(b []byte) (code, msg string) {
	var eb errorBody
	if json.Unmarshal(b, &eb) != nil {
		return "", ""
	}
	obj := errorObject{Message: eb.Message, Type: eb.Type, Code: eb.Code}
	if len(eb.Error) > 0 {
		if eb.Error[0] == '"' {
			json.Unmarshal(eb.Error, &obj.Message)
		} else {
			json.Unmarshal(eb.Error, &obj)
		}
	}
	code = rawString(obj.Code)
	if code == "" {
		code = obj.Type
	}
	return code, obj.Message
}

// rawString renders a JSON string or number code as text ("" for null).
func rawString(r json.RawMessage) string {
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	return string(r)
}

// wire types of the request body.

type wireRequest struct {
	Model               string         `json:"model"`
	Messages            []wireMessage  `json:"messages"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	Tools               []wireTool     `json:"tools,omitempty"`
	ToolChoice          string         `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	TopP                *float64       `json:"top_p,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	Stop                []string       `json:"stop,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	PromptCacheKey      string         `json:"prompt_cache_key,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is a string, an array of content parts, or null (assistant
	// with only tool calls).
	Content    any            `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireContentPart struct {
	Type     string        `json:"type"`
	Text     string        `json:"text,omitempty"`
	ImageURL *wireImageURL `json:"image_url,omitempty"`
	File     *wireFile     `json:"file,omitempty"`
}

type wireImageURL struct {
	URL string `json:"url"`
}

type wireFile struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string      `json:"type"`
	Function wireToolDef `json:"function"`
}

type wireToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// Encode returns the JSON request body for req (exported for tests and
// benchmarks of the encoding alone).
func (a *Adapter) Encode(req *provider.Request) ([]byte, error) {
	if err := req.Validate(); err != nil {
		return nil, withProvider(err)
	}
	w := wireRequest{
		Model:           req.Model.Model,
		Stream:          true,
		StreamOptions:   &streamOptions{IncludeUsage: true},
		Temperature:     req.Controls.Temperature,
		TopP:            req.Controls.TopP,
		Stop:            req.Controls.Stop,
		ReasoningEffort: req.Options.ReasoningEffort,
		PromptCacheKey:  req.Options.CacheKey,
	}
	if n := req.Controls.MaxOutputTokens; n > 0 {
		if a.maxTokens == "max_completion_tokens" {
			w.MaxCompletionTokens = n
		} else {
			w.MaxTokens = n
		}
	}
	w.Messages = make([]wireMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: req.System})
	}
	for i := range req.Messages {
		m, err := a.encodeMessage(&req.Messages[i], i)
		if err != nil {
			return nil, err
		}
		if m.Role != "" {
			w.Messages = append(w.Messages, m)
		}
	}
	if len(req.Tools) > 0 {
		w.Tools = make([]wireTool, len(req.Tools))
		for i, t := range req.Tools {
			schema := t.Schema
			if len(schema) == 0 {
				schema = emptyObjectSchema
			}
			w.Tools[i] = wireTool{Type: "function", Function: wireToolDef{Name: t.Name, Description: t.Description, Parameters: schema}}
		}
		w.ToolChoice = "auto"
		if req.ToolChoice == provider.ToolChoiceNone {
			w.ToolChoice = "none"
		} else {
			w.ParallelToolCalls = req.Options.ParallelToolCalls
		}
	}
	body, err := json.Marshal(&w)
	if err != nil {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: "encode request", Err: err}
	}
	if len(req.Wire) > 0 {
		return mergeWire(body, req.Wire)
	}
	return body, nil
}

func withProvider(err error) error {
	if pe, ok := err.(*provider.Error); ok && pe.Provider == "" {
		pe.Provider = Kind
	}
	return err
}

// mergeWire overlays raw compatibility fields on the top-level body.
func mergeWire(body []byte, wire map[string]json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: "merge wire fields", Err: err}
	}
	for k, v := range wire {
		m[k] = v
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: "merge wire fields", Err: err}
	}
	return out, nil
}

func (a *Adapter) encodeMessage(m *provider.Message, i int) (wireMessage, error) {
	switch m.Role {
	case provider.RoleSystem:
		if a.native {
			return wireMessage{Role: "system", Content: m.Text}, nil
		}
		return wireMessage{Role: "user", Content: provider.WrapSystemUpdate(m.Text)}, nil
	case provider.RoleUser:
		if len(m.Attachments) == 0 {
			return wireMessage{Role: "user", Content: m.Text}, nil
		}
		parts := make([]wireContentPart, 0, len(m.Attachments)+1)
		if m.Text != "" {
			parts = append(parts, wireContentPart{Type: "text", Text: m.Text})
		}
		for _, at := range m.Attachments {
			p, err := encodeAttachment(at)
			if err != nil {
				return wireMessage{}, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: fmt.Sprintf("message %d: %v", i, err)}
			}
			parts = append(parts, p)
		}
		return wireMessage{Role: "user", Content: parts}, nil
	case provider.RoleAssistant:
		// Reasoning is not replayed: Chat Completions has no input field for
		// it and some servers (DeepSeek) reject reasoning_content in input.
		w := wireMessage{Role: "assistant"}
		if m.Text != "" {
			w.Content = m.Text
		}
		for _, c := range m.ToolCalls {
			args := string(c.Args)
			if args == "" {
				args = "{}"
			}
			w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{Name: c.Name, Arguments: args}})
		}
		if w.Content == nil && len(w.ToolCalls) == 0 {
			w.Content = ""
		}
		return w, nil
	case provider.RoleTool:
		r := m.ToolResult
		out := r.Output
		if r.IsError && out == "" {
			out = "error"
		}
		return wireMessage{Role: "tool", ToolCallID: r.CallID, Content: out}, nil
	}
	return wireMessage{}, nil
}

func encodeAttachment(at provider.Attachment) (wireContentPart, error) {
	mt := strings.ToLower(at.MediaType)
	switch {
	case mt == "image/png" || mt == "image/jpeg" || mt == "image/gif" || mt == "image/webp":
		return wireContentPart{Type: "image_url", ImageURL: &wireImageURL{URL: "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(at.Data)}}, nil
	case strings.HasPrefix(mt, "text/"):
		text := string(at.Data)
		if at.Name != "" {
			text = "<file name=\"" + at.Name + "\">\n" + text + "\n</file>"
		}
		return wireContentPart{Type: "text", Text: text}, nil
	case mt == "application/pdf":
		return wireContentPart{Type: "file", File: &wireFile{Filename: at.Name, FileData: "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(at.Data)}}, nil
	}
	return wireContentPart{}, fmt.Errorf("attachment %q: media type %q is not supported by the openai adapter", at.Name, at.MediaType)
}
