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
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/httpx"
	"github.com/sessionrt/sessionrt/provider/internal/idle"
	"github.com/sessionrt/sessionrt/provider/internal/jsonw"
	"github.com/sessionrt/sessionrt/provider/internal/reqbody"
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
	base := strings.TrimRight(cfg.BaseURL, "/")
	base = strings.TrimSuffix(base, "/v1")
	return &Adapter{endpoint: base + "/v1/messages", cfg: cfg}, nil
}

// Stream sends req and returns its stream of parts.
func (a *Adapter) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	// The body is written into a pooled buffer (internal/reqbody says when it
	// is returned): it is the whole history and every tool schema, re-sent on
	// each turn.
	body, err := reqbody.Encode(bodySize(req), func(dst []byte) ([]byte, error) { return a.appendBody(dst, req) })
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint, nil)
	if err != nil {
		body.Release()
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: "build HTTP request", Err: err}
	}
	body.Attach(hreq)
	defer body.Release() // the request's bodies hold the buffer until the transport closes them
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
		f := parseError(b)
		if f.Message == "" {
			f.Message = provider.BodyMessage(b, resp.StatusCode)
		}
		f.Status, f.Header = resp.StatusCode, resp.Header
		return nil, provider.Classify(Kind, f, a.cfg.Now())
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// A 200 with a JSON body: an error some gateways send with status
		// 200, or a server that ignored "stream": true. Never a stream.
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if f := parseError(b); f.Message != "" {
			f.Header = resp.Header
			e := provider.Classify(Kind, f, a.cfg.Now())
			if e.Kind == provider.KindServerError && f.Type == "" {
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

// parseError reads {"type":"error","error":{"type":..,"message":..}}, the
// error of an HTTP response and of an error event.
func parseError(b []byte) provider.Failure {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil {
		return provider.Failure{}
	}
	return provider.Failure{Type: e.Error.Type, Message: e.Error.Message}
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
	return a.appendBody(make([]byte, 0, bodySize(req)), req)
}

// bodySize estimates the encoded size of req, so that the body is written
// without growing its buffer.
func bodySize(req *provider.Request) int {
	size := len(req.System) + 1024
	for i := range req.Messages {
		m := &req.Messages[i]
		size += len(m.Text) + 64
		for _, r := range m.Reasoning {
			size += len(r.Text) + len(r.Signature) + len(r.Redacted) + 64
		}
		for _, c := range m.ToolCalls {
			size += len(c.ID) + len(c.Name) + len(c.Args) + 64
		}
		if r := m.ToolResult; r != nil {
			size += len(r.CallID) + len(r.Output) + 64
		}
		for _, at := range m.Attachments {
			size += len(at.Name) + (len(at.Data)+2)/3*4 + 64
		}
	}
	for _, t := range req.Tools {
		size += len(t.Name) + len(t.Description) + len(t.Schema) + 64
	}
	return size
}

// appendBody appends the JSON request body for req to dst, written from req
// directly with internal/jsonw (no reflection and no intermediate wire
// structs; raw schemas and inputs copied as they are — Validate checked
// them). Wire fields replace computed ones of the same name and come last,
// sorted.
func (a *Adapter) appendBody(dst []byte, req *provider.Request) ([]byte, error) {
	if err := req.Validate(); err != nil {
		if pe, ok := err.(*provider.Error); ok {
			pe.Provider = Kind
		}
		return nil, err
	}
	c := &req.Controls
	maxTokens := c.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = a.cfg.DefaultMaxTokens
	}
	temperature, topP := c.Temperature, c.TopP
	budget := thinkingBudget(req.Options)
	if budget > 0 && unsignedToolTurn(req.Messages) {
		budget = 0
	}
	// budget_tokens must be below max_tokens and at least 1024.
	budget = min(budget, maxTokens-minThinkingBudget)
	if budget >= minThinkingBudget {
		// Extended thinking refuses modified temperature and top_p < 0.95.
		temperature = nil
		if topP != nil && *topP < 0.95 {
			topP = nil
		}
	}

	w := jsonw.Writer{B: dst}
	own := func(k string) bool { _, over := req.Wire[k]; return !over }
	w.Open('{')
	w.Key("model")
	w.Str(req.Model.Model)
	if own("max_tokens") {
		w.Key("max_tokens")
		w.Int(maxTokens)
	}
	w.Key("stream")
	w.Bool(true)
	if req.System != "" && own("system") {
		w.Key("system")
		w.Open('[')
		w.Open('{')
		w.Key("type")
		w.Str("text")
		w.Key("text")
		w.Str(req.System)
		writeCacheControl(&w)
		w.Close('}')
		w.Close(']')
	}
	w.Key("messages")
	if err := a.writeMessages(&w, req.Messages); err != nil {
		return nil, err
	}
	writeTools(&w, req, own)
	if budget >= minThinkingBudget && own("thinking") {
		w.Key("thinking")
		w.Open('{')
		w.Key("type")
		w.Str("enabled")
		w.Key("budget_tokens")
		w.Int(budget)
		w.Close('}')
	}
	if temperature != nil && own("temperature") {
		w.Key("temperature")
		w.Float(*temperature)
	}
	if topP != nil && own("top_p") {
		w.Key("top_p")
		w.Float(*topP)
	}
	if len(c.Stop) > 0 && own("stop_sequences") {
		w.Key("stop_sequences")
		w.Open('[')
		for _, s := range c.Stop {
			w.Str(s)
		}
		w.Close(']')
	}
	if len(req.Wire) > 0 {
		for _, k := range sortedKeys(req.Wire) {
			w.Key(k)
			w.Raw(req.Wire[k])
		}
	}
	w.Close('}')
	return w.B, nil
}

func writeCacheControl(w *jsonw.Writer) {
	w.Key("cache_control")
	w.RawString(`{"type":"ephemeral"}`)
}

// writeTools writes the tool definitions and tool_choice.
func writeTools(w *jsonw.Writer, req *provider.Request, own func(string) bool) {
	if len(req.Tools) == 0 {
		// The API refuses tool_use/tool_result blocks without tool
		// definitions; on a turn sent without tools (the last allowed step),
		// declare the tools the history used and forbid calling them.
		used := usedTools(req.Messages)
		if len(used) == 0 {
			return
		}
		if own("tools") {
			w.Key("tools")
			w.Open('[')
			for _, name := range used {
				writeTool(w, name, "", nil)
			}
			w.Close(']')
		}
		if own("tool_choice") {
			w.Key("tool_choice")
			w.RawString(`{"type":"none"}`)
		}
		return
	}
	if own("tools") {
		w.Key("tools")
		w.Open('[')
		for i := range req.Tools {
			t := &req.Tools[i]
			writeTool(w, t.Name, t.Description, t.Schema)
		}
		w.Close(']')
	}
	if !own("tool_choice") {
		return
	}
	w.Key("tool_choice")
	switch {
	case req.ToolChoice == provider.ToolChoiceNone:
		w.RawString(`{"type":"none"}`)
	case req.Options.ParallelToolCalls != nil && !*req.Options.ParallelToolCalls:
		w.RawString(`{"type":"auto","disable_parallel_tool_use":true}`)
	default:
		w.RawString(`{"type":"auto"}`)
	}
}

func writeTool(w *jsonw.Writer, name, description string, schema []byte) {
	w.Open('{')
	w.Key("name")
	w.Str(name)
	if description != "" {
		w.Key("description")
		w.Str(description)
	}
	w.Key("input_schema")
	if len(schema) == 0 {
		w.RawString(objectSchema)
	} else {
		w.Raw(schema)
	}
	w.Close('}')
}

// usedTools returns the sorted names of the tools the history calls (every
// call's name: a tool result only ever names a call made before it).
func usedTools(hist []provider.Message) []string {
	var names []string
	for i := range hist {
		if hist[i].Role != provider.RoleAssistant {
			continue
		}
		for _, c := range hist[i].ToolCalls {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// replayed is the block type a reasoning entry is sent back as, or "" when it
// is not. Signatures only verify with the provider that made them; unsigned
// reasoning (e.g. from an OpenAI-compatible model before a switch) is not
// replayable as a thinking block.
func replayed(r *provider.Reasoning) string {
	switch {
	case r.Provider != Kind && r.Provider != "":
	case r.Redacted != "":
		return "redacted_thinking"
	case r.Signature != "":
		return "thinking"
	}
	return ""
}

// startsWithThinking reports whether assistant message m is sent with a
// thinking block first.
func startsWithThinking(m *provider.Message) bool {
	for i := range m.Reasoning {
		if replayed(&m.Reasoning[i]) != "" {
			return true
		}
	}
	return false
}

// emptyAssistant reports whether assistant message m has no block to send (an
// empty assistant turn is refused by the API, so it is skipped).
func emptyAssistant(m *provider.Message) bool {
	return m.Text == "" && len(m.ToolCalls) == 0 && !startsWithThinking(m)
}

// unsignedToolTurn reports whether the latest assistant message calls tools
// without starting with a thinking block. With thinking enabled the API
// refuses such a history (the tool loop in progress must keep its signed
// thinking), which happens after a switch from another provider's model;
// that turn is then sent without thinking, which the API allows.
func unsignedToolTurn(hist []provider.Message) bool {
	for i := len(hist) - 1; i >= 0; i-- {
		m := &hist[i]
		if m.Role != provider.RoleAssistant || emptyAssistant(m) {
			continue
		}
		return len(m.ToolCalls) > 0 && !startsWithThinking(m)
	}
	return false
}

// blockWriter writes content blocks and remembers where the last one ends,
// for the conversation cache breakpoint.
type blockWriter struct {
	w        *jsonw.Writer
	lastEnd  int  // offset of the closing brace of the last block written
	markable bool // the last block may carry cache_control (not thinking)
}

func (bw *blockWriter) open(typ string) {
	bw.w.Open('{')
	bw.w.Key("type")
	bw.w.Str(typ)
}

func (bw *blockWriter) close(markable bool) {
	bw.w.Close('}')
	bw.lastEnd, bw.markable = len(bw.w.B)-1, markable
}

func (bw *blockWriter) text(s string) {
	bw.open("text")
	bw.w.Key("text")
	bw.w.Str(s)
	bw.close(true)
}

// writeMessages lowers the history: consecutive user-side entries (user
// text, tool results, mid-conversation system messages, which have no native
// chronological role here and become <system-update> user text) merge into
// one user message with tool_result blocks first, as the API requires. The
// last block of the last message that can carry one gets the conversation
// cache breakpoint, unless the config disables it.
func (a *Adapter) writeMessages(w *jsonw.Writer, hist []provider.Message) error {
	bw := blockWriter{w: w, lastEnd: -1}
	w.Open('[')
	for i := 0; i < len(hist); {
		m := &hist[i]
		if m.Role == provider.RoleAssistant {
			if !emptyAssistant(m) {
				writeAssistant(&bw, m)
			}
			i++
			continue
		}
		j := i + 1
		for j < len(hist) && (hist[j].Role != provider.RoleAssistant || emptyAssistant(&hist[j])) {
			j++
		}
		if err := writeUser(&bw, hist, i, j); err != nil {
			return err
		}
		i = j
	}
	if bw.markable && !a.cfg.NoConversationCache {
		insertCacheControl(w, bw.lastEnd)
	}
	w.Close(']')
	return nil
}

// cacheMark is the cache breakpoint set in a block written already.
const cacheMark = `,"cache_control":{"type":"ephemeral"}`

// insertCacheControl inserts cacheMark before the brace at end, which closes
// the last block: only the message's closing "]}" follows it, so the move is
// a few bytes.
func insertCacheControl(w *jsonw.Writer, end int) {
	n := len(w.B)
	w.B = append(w.B, cacheMark...)
	copy(w.B[end+len(cacheMark):], w.B[end:n])
	copy(w.B[end:], cacheMark)
}

func writeAssistant(bw *blockWriter, m *provider.Message) {
	w := bw.w
	w.Open('{')
	w.Key("role")
	w.Str("assistant")
	w.Key("content")
	w.Open('[')
	for i := range m.Reasoning {
		r := &m.Reasoning[i]
		switch typ := replayed(r); typ {
		case "redacted_thinking":
			bw.open(typ)
			w.Key("data")
			w.Str(r.Redacted)
			bw.close(false)
		case "thinking":
			bw.open(typ)
			w.Key("thinking")
			w.Str(r.Text)
			w.Key("signature")
			w.Str(r.Signature)
			bw.close(false)
		}
	}
	if m.Text != "" {
		bw.text(m.Text)
	}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		bw.open("tool_use")
		w.Key("id")
		w.Str(c.ID)
		w.Key("name")
		w.Str(c.Name)
		w.Key("input")
		if len(bytes.TrimSpace(c.Args)) == 0 {
			w.RawString("{}")
		} else {
			w.Raw(c.Args)
		}
		bw.close(true)
	}
	w.Close(']')
	w.Close('}')
}

// writeUser writes the user-side entries hist[i:j] as one user message, tool
// results first; it writes nothing when they have no block.
func writeUser(bw *blockWriter, hist []provider.Message, i, j int) error {
	if !userBlocks(hist[i:j]) {
		return nil
	}
	w := bw.w
	w.Open('{')
	w.Key("role")
	w.Str("user")
	w.Key("content")
	w.Open('[')
	for k := i; k < j; k++ {
		if hist[k].Role != provider.RoleTool {
			continue
		}
		r := hist[k].ToolResult
		text := r.Output
		if text == "" {
			// Empty content with is_error is refused; say what happened.
			text = "(no output)"
		}
		bw.open("tool_result")
		w.Key("tool_use_id")
		w.Str(r.CallID)
		w.Key("content")
		w.Str(text)
		if r.IsError {
			w.Key("is_error")
			w.Bool(true)
		}
		bw.close(true)
	}
	for k := i; k < j; k++ {
		m := &hist[k]
		switch m.Role {
		case provider.RoleUser:
			if m.Text != "" {
				bw.text(m.Text)
			}
			for _, at := range m.Attachments {
				if err := writeAttachment(bw, at); err != nil {
					return &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: fmt.Sprintf("message %d: %v", k, err)}
				}
			}
		case provider.RoleSystem:
			bw.text(provider.WrapSystemUpdate(m.Text))
		}
	}
	w.Close(']')
	w.Close('}')
	return nil
}

// userBlocks reports whether user-side entries have any block to send.
func userBlocks(hist []provider.Message) bool {
	for i := range hist {
		m := &hist[i]
		switch m.Role {
		case provider.RoleUser:
			if m.Text != "" || len(m.Attachments) > 0 {
				return true
			}
		case provider.RoleSystem, provider.RoleTool:
			return true
		}
	}
	return false
}

func writeAttachment(bw *blockWriter, at provider.Attachment) error {
	mt := strings.ToLower(at.MediaType)
	switch {
	case mt == "image/png" || mt == "image/jpeg" || mt == "image/gif" || mt == "image/webp":
		writeSource(bw, "image", mt, at.Data)
	case mt == "application/pdf":
		writeSource(bw, "document", mt, at.Data)
	case strings.HasPrefix(mt, "text/"):
		text := string(at.Data)
		if at.Name != "" {
			text = "<file name=\"" + at.Name + "\">\n" + text + "\n</file>"
		}
		bw.text(text)
	default:
		return fmt.Errorf("attachment %q: media type %q is not supported by the anthropic adapter", at.Name, at.MediaType)
	}
	return nil
}

// writeSource writes a base64 image or document block.
func writeSource(bw *blockWriter, typ, mediaType string, data []byte) {
	w := bw.w
	bw.open(typ)
	w.Key("source")
	w.Open('{')
	w.Key("type")
	w.Str("base64")
	w.Key("media_type")
	w.Str(mediaType)
	w.Key("data")
	// Base64 needs no escaping: encode straight into the body, then close
	// the string with RawString (no comma follows a key).
	w.B = append(w.B, '"')
	w.B = base64.StdEncoding.AppendEncode(w.B, data)
	w.RawString(`"`)
	w.Close('}')
	bw.close(true)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
