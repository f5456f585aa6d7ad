package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/httpx"
	"github.com/sessionrt/sessionrt/provider/internal/idle"
	"github.com/sessionrt/sessionrt/provider/internal/jsonw"
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
	// IdleTimeout, when positive, ends a stream on which no byte arrived for
	// this long with a retryable error (a guard against a half-dead connection
	// that stays open). Default none, as the spec's runner imposes no idle
	// timeout (a reasoning model may think silently for many minutes; the
	// caller's interrupt ends a stream); a catalog provider sets it with
	// idle_timeout.
	IdleTimeout time.Duration
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
	return httpx.NewClient()
}

// Stream sends req and returns its stream of parts.
func (a *Adapter) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	body, err := encodePooled(a, req)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint, nil)
	if err != nil {
		body.release()
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: "build HTTP request", Err: err}
	}
	body.attach(hreq)
	defer body.release() // the request's bodies hold the buffer until the transport closes them
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
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// A 200 with a JSON body: an error some gateways send with status
		// 200, or a server that ignored "stream": true. Never a stream.
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if f, ok := parseErrorBody(b); ok && f.Message != "" {
			f.Header = resp.Header
			e := provider.Classify(Kind, f, a.cfg.Now())
			if e.Kind == provider.KindServerError && f.Status == 0 && f.Type == "" && f.Code == "" {
				// Nothing says the server failed: it answered, with an error
				// about the request.
				e.Kind = provider.KindInvalidRequest
			}
			return nil, e
		}
		return nil, provider.Malformed(Kind, "server answered with JSON, not an event stream (does it support streaming?)", b, nil)
	}
	return newStream(ctx, idle.Wrap(resp.Body, a.cfg.IdleTimeout)), nil
}

// httpError classifies a non-2xx response from its body and headers.
func (a *Adapter) httpError(ctx context.Context, resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil && ctx.Err() != nil {
		return provider.TransportError(ctx, Kind, "read error response", err)
	}
	f, _ := parseErrorBody(b)
	if f.Message == "" {
		f.Message = provider.BodyMessage(b, resp.StatusCode)
	}
	f.Status, f.Header = resp.StatusCode, resp.Header
	return provider.Classify(Kind, f, a.cfg.Now())
}

// streamError classifies an error that arrived inside a 200 stream: a chunk
// with an "error" member, an "error" event, or llama.cpp's "error:" line.
func streamError(data []byte) *provider.Error {
	f, _ := parseErrorBody(data)
	return provider.ClassifyInStream(Kind, f, data)
}

// errorObject is the error of OpenAI and the compatible servers, which all
// vary it: {"error":{"message","type","code"}} (OpenAI, Groq, Ollama, vLLM
// from 0.10), "code" a number (llama.cpp, OpenRouter) or a numeric string
// (Azure), {"error":"text"} (LM Studio, vLLM's 401), the members at the top
// level (vLLM before 0.10, llama.cpp's "error:" line), or both (LM Studio's
// error event).
type errorObject struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// parseErrorBody reads a failure from an error payload; ok is false when b is
// not a JSON object.
func parseErrorBody(b []byte) (f provider.Failure, ok bool) {
	var top errorObject
	if json.Unmarshal(b, &top) != nil {
		return f, false
	}
	obj := top
	if len(top.Error) > 0 {
		switch top.Error[0] {
		case '"':
			json.Unmarshal(top.Error, &obj.Message)
		case '{':
			var inner errorObject
			if json.Unmarshal(top.Error, &inner) == nil {
				obj = inner
				if obj.Message == "" {
					obj.Message = top.Message
				}
			}
		}
	}
	f.Message, f.Type = obj.Message, obj.Type
	code := rawString(obj.Code)
	if n, err := strconv.Atoi(code); err == nil && n >= 100 && n <= 599 {
		f.Status = n // a status, not a code (llama.cpp, OpenRouter, Azure)
	} else {
		f.Code = code
	}
	return f, true
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

// Encode returns the JSON request body for req (exported for tests and
// benchmarks of the encoding alone). It writes the body directly (see
// internal/jsonw); raw JSON inside the request was validated by Validate.
func (a *Adapter) Encode(req *provider.Request) ([]byte, error) {
	return a.appendBody(make([]byte, 0, bodySize(req)), req)
}

// bodySize estimates the encoded size of req, so that the body is written without
// growing its buffer.
func bodySize(req *provider.Request) int {
	size := len(req.System) + 1024
	for i := range req.Messages {
		m := &req.Messages[i]
		size += len(m.Text) + 64
		if m.ToolResult != nil {
			size += len(m.ToolResult.Output)
		}
		for _, at := range m.Attachments {
			size += len(at.Data)*4/3 + 64
		}
	}
	for _, t := range req.Tools {
		size += len(t.Description) + len(t.Schema) + 64
	}
	return size
}

// appendBody appends the JSON request body for req to dst.
func (a *Adapter) appendBody(dst []byte, req *provider.Request) ([]byte, error) {
	if err := req.Validate(); err != nil {
		return nil, withProvider(err)
	}
	w := jsonw.Writer{B: dst}
	own := func(k string) bool { _, over := req.Wire[k]; return !over }

	w.Open('{')
	w.Key("model")
	w.Str(req.Model.Model)
	w.Key("messages")
	w.Open('[')
	if req.System != "" {
		w.Open('{')
		w.Key("role")
		w.Str("system")
		w.Key("content")
		w.Str(req.System)
		w.Close('}')
	}
	for i := range req.Messages {
		if err := a.encodeMessage(&w, &req.Messages[i], i); err != nil {
			return nil, err
		}
	}
	w.Close(']')
	w.Key("stream")
	w.Bool(true)
	if own("stream_options") {
		w.Key("stream_options")
		w.Open('{')
		w.Key("include_usage")
		w.Bool(true)
		w.Close('}')
	}
	if len(req.Tools) > 0 {
		if own("tools") {
			w.Key("tools")
			w.Open('[')
			for _, t := range req.Tools {
				w.Open('{')
				w.Key("type")
				w.Str("function")
				w.Key("function")
				w.Open('{')
				w.Key("name")
				w.Str(t.Name)
				if t.Description != "" {
					w.Key("description")
					w.Str(t.Description)
				}
				w.Key("parameters")
				if len(t.Schema) > 0 {
					w.Raw(t.Schema)
				} else {
					w.RawString(emptyObjectSchema)
				}
				w.Close('}')
				w.Close('}')
			}
			w.Close(']')
		}
		if own("tool_choice") {
			w.Key("tool_choice")
			if req.ToolChoice == provider.ToolChoiceNone {
				w.Str("none")
			} else {
				w.Str("auto")
			}
		}
		if p := req.Options.ParallelToolCalls; p != nil && req.ToolChoice != provider.ToolChoiceNone && own("parallel_tool_calls") {
			w.Key("parallel_tool_calls")
			w.Bool(*p)
		}
	}
	c := &req.Controls
	if c.Temperature != nil && own("temperature") {
		w.Key("temperature")
		w.Float(*c.Temperature)
	}
	if c.TopP != nil && own("top_p") {
		w.Key("top_p")
		w.Float(*c.TopP)
	}
	if c.MaxOutputTokens > 0 && own(a.maxTokens) {
		w.Key(a.maxTokens)
		w.Int(c.MaxOutputTokens)
	}
	if len(c.Stop) > 0 && own("stop") {
		w.Key("stop")
		w.Open('[')
		for _, s := range c.Stop {
			w.Str(s)
		}
		w.Close(']')
	}
	if e := req.Options.ReasoningEffort; e != "" && own("reasoning_effort") {
		w.Key("reasoning_effort")
		w.Str(e)
	}
	if k := req.Options.CacheKey; k != "" && own("prompt_cache_key") {
		w.Key("prompt_cache_key")
		w.Str(k)
	}
	// Raw compatibility fields last, in a stable order.
	keys := make([]string, 0, len(req.Wire))
	for k := range req.Wire {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.Key(k)
		w.Raw(req.Wire[k])
	}
	w.Close('}')
	return w.B, nil
}

// emptyObjectSchema is sent for a tool without a schema.
const emptyObjectSchema = `{"type":"object","properties":{}}`

func withProvider(err error) error {
	if pe, ok := err.(*provider.Error); ok && pe.Provider == "" {
		pe.Provider = Kind
	}
	return err
}

func (a *Adapter) encodeMessage(w *jsonw.Writer, m *provider.Message, i int) error {
	switch m.Role {
	case provider.RoleSystem:
		w.Open('{')
		w.Key("role")
		if a.native {
			w.Str("system")
			w.Key("content")
			w.Str(m.Text)
		} else {
			w.Str("user")
			w.Key("content")
			w.Str(provider.WrapSystemUpdate(m.Text))
		}
		w.Close('}')
	case provider.RoleUser:
		w.Open('{')
		w.Key("role")
		w.Str("user")
		w.Key("content")
		if len(m.Attachments) == 0 {
			w.Str(m.Text)
		} else {
			w.Open('[')
			if m.Text != "" {
				w.Open('{')
				w.Key("type")
				w.Str("text")
				w.Key("text")
				w.Str(m.Text)
				w.Close('}')
			}
			for _, at := range m.Attachments {
				if err := encodeAttachment(w, at); err != nil {
					return &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: fmt.Sprintf("message %d: %v", i, err)}
				}
			}
			w.Close(']')
		}
		w.Close('}')
	case provider.RoleAssistant:
		// Reasoning is not replayed: Chat Completions has no input field for
		// it and some servers (DeepSeek) reject reasoning_content in input.
		if m.Text == "" && len(m.ToolCalls) == 0 {
			return nil // an empty turn (e.g. reasoning only) says nothing
		}
		w.Open('{')
		w.Key("role")
		w.Str("assistant")
		w.Key("content")
		if m.Text != "" {
			w.Str(m.Text)
		} else {
			w.Null()
		}
		if len(m.ToolCalls) > 0 {
			w.Key("tool_calls")
			w.Open('[')
			for _, c := range m.ToolCalls {
				args := string(c.Args)
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				w.Open('{')
				w.Key("id")
				w.Str(c.ID)
				w.Key("type")
				w.Str("function")
				w.Key("function")
				w.Open('{')
				w.Key("name")
				w.Str(c.Name)
				w.Key("arguments")
				w.Str(args)
				w.Close('}')
				w.Close('}')
			}
			w.Close(']')
		}
		w.Close('}')
	case provider.RoleTool:
		r := m.ToolResult
		out := r.Output
		if r.IsError && out == "" {
			out = "error"
		}
		w.Open('{')
		w.Key("role")
		w.Str("tool")
		w.Key("tool_call_id")
		w.Str(r.CallID)
		w.Key("content")
		w.Str(out)
		w.Close('}')
	}
	return nil
}

func encodeAttachment(w *jsonw.Writer, at provider.Attachment) error {
	mt := strings.ToLower(at.MediaType)
	switch {
	case mt == "image/png" || mt == "image/jpeg" || mt == "image/gif" || mt == "image/webp":
		w.Open('{')
		w.Key("type")
		w.Str("image_url")
		w.Key("image_url")
		w.Open('{')
		w.Key("url")
		w.Raw(dataURL(mt, at.Data))
		w.Close('}')
		w.Close('}')
	case strings.HasPrefix(mt, "text/"):
		text := string(at.Data)
		if at.Name != "" {
			text = "<file name=\"" + at.Name + "\">\n" + text + "\n</file>"
		}
		w.Open('{')
		w.Key("type")
		w.Str("text")
		w.Key("text")
		w.Str(text)
		w.Close('}')
	case mt == "application/pdf":
		w.Open('{')
		w.Key("type")
		w.Str("file")
		w.Key("file")
		w.Open('{')
		if at.Name != "" {
			w.Key("filename")
			w.Str(at.Name)
		}
		w.Key("file_data")
		w.Raw(dataURL(mt, at.Data))
		w.Close('}')
		w.Close('}')
	default:
		return fmt.Errorf("attachment %q: media type %q is not supported by the openai adapter", at.Name, at.MediaType)
	}
	return nil
}

// dataURL is the quoted JSON string "data:<mt>;base64,<data>" (base64 and
// the media types accepted above need no escaping).
func dataURL(mt string, data []byte) []byte {
	b := make([]byte, 0, len(mt)+base64.StdEncoding.EncodedLen(len(data))+16)
	b = append(b, `"data:`...)
	b = append(b, mt...)
	b = append(b, ";base64,"...)
	b = base64.StdEncoding.AppendEncode(b, data)
	return append(b, '"')
}
