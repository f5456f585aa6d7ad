package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sessionrt/sessionrt/provider"
)

// Kind is the adapter kind stamped on errors and reasoning blocks.
const Kind = "scripted"

// Script is a JSON script: the turns to replay, in order.
type Script struct {
	Turns []Turn `json:"turns"`
	// WhenExhausted says what happens once every turn was played: "error"
	// (default: an invalid-request error naming the request number),
	// "repeat_last" or "cycle".
	WhenExhausted string `json:"when_exhausted,omitempty"`
}

// Turn is one scripted provider turn. Without Parts, the stream is built in
// this order: Reasoning, Text, ToolCalls, usage, finish.
type Turn struct {
	Reasoning string     `json:"reasoning,omitempty"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Chunk splits text, reasoning and tool arguments into deltas of at most
	// this many runes (0: one delta each).
	Chunk int `json:"chunk,omitempty"`
	// Delay is waited before each part ("25ms" or a number of milliseconds).
	Delay Duration `json:"delay,omitempty"`
	// FirstDelay is waited once before the first part (time to first
	// token), in addition to Delay.
	FirstDelay Duration `json:"first_delay,omitempty"`
	// Usage defaults to an estimate (4 bytes a token) of request and output.
	Usage *provider.Usage `json:"usage,omitempty"`
	// Finish defaults to tool_calls when there are tool calls, else stop.
	Finish provider.FinishReason `json:"finish,omitempty"`
	// Error ends the turn with a classified error (see ErrorSpec).
	Error *ErrorSpec `json:"error,omitempty"`
	// Hang, after the parts, blocks until the context is cancelled or the
	// stream closed (then KindInterrupted) — for interruption tests. No
	// usage or finish part is sent.
	Hang bool `json:"hang,omitempty"`
	// Parts, when set, are sent verbatim instead of the fields above (no
	// automatic usage or finish), to script broken streams too.
	Parts []Part `json:"parts,omitempty"`
}

// ToolCall is a scripted tool call. ID defaults to "call_<request>_<i>".
type ToolCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ErrorSpec is a scripted error. With AfterParts unset the error is returned
// by Stream itself, as an HTTP error would be; with AfterParts = n the
// stream yields its first n parts and then fails.
type ErrorSpec struct {
	// Kind is a provider.Kind name: context_overflow, rate_limited,
	// retryable, content_filter, invalid_request, auth, interrupted, malformed.
	Kind       string   `json:"kind"`
	Message    string   `json:"message,omitempty"`
	Status     int      `json:"status,omitempty"`
	RetryAfter Duration `json:"retry_after,omitempty"`
	AfterParts *int     `json:"after_parts,omitempty"`
}

// Part is a verbatim scripted part.
type Part struct {
	Kind   string                `json:"kind"` // text, reasoning, tool-input-start, tool-input-delta, tool-call, usage, finish, metadata
	Index  int                   `json:"index,omitempty"`
	Text   string                `json:"text,omitempty"`
	ID     string                `json:"id,omitempty"`
	Name   string                `json:"name,omitempty"`
	Args   json.RawMessage       `json:"args,omitempty"`
	Key    string                `json:"key,omitempty"`
	Usage  *provider.Usage       `json:"usage,omitempty"`
	Finish provider.FinishReason `json:"finish,omitempty"`
}

// Duration is a time.Duration that reads "25ms"-style strings or a number of
// milliseconds from JSON.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s: want \"25ms\" or milliseconds", b)
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Func decides the turn for request number n (counted from 0). Returning an
// error fails Stream with it (wrapped as invalid request unless it is
// already a *provider.Error).
type Func func(ctx context.Context, req *provider.Request, n int) (Turn, error)

// Config configures a Provider: exactly one of Script and Func.
type Config struct {
	Script *Script
	Func   Func
	// Keep bounds how many of the latest requests Requests returns; 0 keeps every
	// request, which tests that inspect them all want. A long-lived provider (the
	// offline demo) sets a bound so that it does not hold a copy of every request.
	Keep int
}

// Provider replays a script. It is safe for concurrent use; requests are
// numbered in arrival order.
type Provider struct {
	cfg Config

	mu    sync.Mutex
	count int                // requests received
	reqs  []provider.Request // the latest, at most cfg.Keep when set
}

// New returns a Provider, validating the script.
func New(cfg Config) (*Provider, error) {
	if (cfg.Script == nil) == (cfg.Func == nil) {
		return nil, fmt.Errorf("scripted: give exactly one of Script and Func")
	}
	if cfg.Script != nil {
		if err := cfg.Script.Validate(); err != nil {
			return nil, err
		}
	}
	if cfg.Keep < 0 {
		return nil, fmt.Errorf("scripted: keep %d: want 0 (all) or a positive bound", cfg.Keep)
	}
	return &Provider{cfg: cfg}, nil
}

// Load reads a JSON script file.
func Load(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: read script: %w", err)
	}
	return Parse(b)
}

// Parse decodes and validates a JSON script; unknown fields are refused so a
// typo does not silently change a test.
func Parse(b []byte) (*Script, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("scripted: parse script: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks every turn.
func (s *Script) Validate() error {
	switch s.WhenExhausted {
	case "", "error", "repeat_last", "cycle":
	default:
		return fmt.Errorf("scripted: when_exhausted %q: want error, repeat_last or cycle", s.WhenExhausted)
	}
	if len(s.Turns) == 0 && s.WhenExhausted != "" && s.WhenExhausted != "error" {
		return fmt.Errorf("scripted: when_exhausted %q needs at least one turn", s.WhenExhausted)
	}
	for i := range s.Turns {
		if err := s.Turns[i].Validate(); err != nil {
			return fmt.Errorf("scripted: turn %d: %w", i, err)
		}
	}
	return nil
}

// Validate checks one turn.
func (t *Turn) Validate() error {
	for j, c := range t.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("tool call %d has no name", j)
		}
		if a := strings.TrimSpace(string(c.Args)); a != "" && (!json.Valid(c.Args) || a[0] != '{') {
			return fmt.Errorf("tool call %d (%s) args are not a JSON object: %s", j, c.Name, provider.Quote(c.Args))
		}
	}
	if t.Finish != "" && !knownFinish(t.Finish) {
		return fmt.Errorf("unknown finish %q", t.Finish)
	}
	if t.Chunk < 0 || t.Delay < 0 || t.FirstDelay < 0 {
		return fmt.Errorf("negative chunk or delay")
	}
	if e := t.Error; e != nil {
		if _, ok := provider.ParseKind(e.Kind); !ok {
			return fmt.Errorf("unknown error kind %q", e.Kind)
		}
		if e.AfterParts != nil && *e.AfterParts < 0 {
			return fmt.Errorf("error after_parts is negative")
		}
	}
	for j, p := range t.Parts {
		if _, ok := partKind(p.Kind); !ok {
			return fmt.Errorf("part %d: unknown kind %q", j, p.Kind)
		}
	}
	return nil
}

func knownFinish(f provider.FinishReason) bool {
	switch f {
	case provider.FinishStop, provider.FinishLength, provider.FinishToolCalls, provider.FinishContentFilter, provider.FinishOther:
		return true
	}
	return false
}

func partKind(s string) (provider.PartKind, bool) {
	for k := provider.PartText; k <= provider.PartMetadata; k++ {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// Requests returns copies of the requests received (every one, or the latest
// Config.Keep), in arrival order.
func (p *Provider) Requests() []provider.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]provider.Request(nil), p.reqs...)
}

// Count is the number of requests received.
func (p *Provider) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

// Stream records req and plays the turn for it.
func (p *Provider) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	n := p.count
	p.count++
	if k := p.cfg.Keep; k > 0 && len(p.reqs) == k {
		// Shift in place: the backing array never grows past the bound.
		copy(p.reqs, p.reqs[1:])
		p.reqs[k-1] = copyRequest(req)
	} else {
		p.reqs = append(p.reqs, copyRequest(req))
	}
	p.mu.Unlock()

	var turn Turn
	if p.cfg.Func != nil {
		t, err := callFunc(p.cfg.Func, ctx, req, n)
		if err != nil {
			if _, ok := err.(*provider.Error); ok {
				return nil, err
			}
			return nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: fmt.Sprintf("script function for request %d", n), Err: err}
		}
		if err := t.Validate(); err != nil {
			return nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind, Message: fmt.Sprintf("script function turn for request %d", n), Err: err}
		}
		turn = t
	} else {
		t, ok := p.cfg.Script.pick(n)
		if !ok {
			return nil, &provider.Error{Kind: provider.KindInvalidRequest, Provider: Kind,
				Message: fmt.Sprintf("script exhausted: request %d but only %d turns", n, len(p.cfg.Script.Turns))}
		}
		turn = t
	}
	if e := turn.Error; e != nil && e.AfterParts == nil {
		return nil, turnError(e)
	}
	if err := ctx.Err(); err != nil {
		return nil, provider.TransportError(ctx, Kind, "stream", err)
	}
	return newStream(ctx, &turn, req, n), nil
}

// callFunc runs the script function, turning a panic into an error so a
// broken test script fails its turn instead of the caller's process.
func callFunc(f Func, ctx context.Context, req *provider.Request, n int) (t Turn, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("script function panicked: %v", r)
		}
	}()
	return f(ctx, req, n)
}

func (s *Script) pick(n int) (Turn, bool) {
	if n < len(s.Turns) {
		return s.Turns[n], true
	}
	switch s.WhenExhausted {
	case "repeat_last":
		return s.Turns[len(s.Turns)-1], true
	case "cycle":
		return s.Turns[n%len(s.Turns)], true
	}
	return Turn{}, false
}

func turnError(e *ErrorSpec) *provider.Error {
	k, _ := provider.ParseKind(e.Kind)
	msg := e.Message
	if msg == "" {
		msg = "scripted " + e.Kind
	}
	return &provider.Error{Kind: k, Provider: Kind, Status: e.Status, Message: msg, RetryAfter: time.Duration(e.RetryAfter)}
}

// copyRequest copies the slices a caller might reuse after Stream returns.
func copyRequest(r *provider.Request) provider.Request {
	c := *r
	c.Messages = append([]provider.Message(nil), r.Messages...)
	c.Tools = append([]provider.Tool(nil), r.Tools...)
	if r.Wire != nil {
		c.Wire = make(map[string]json.RawMessage, len(r.Wire))
		for k, v := range r.Wire {
			c.Wire[k] = v
		}
	}
	return c
}

// build turns a Turn into its parts.
func build(t *Turn, req *provider.Request, n int) []provider.Part {
	if len(t.Parts) > 0 {
		out := make([]provider.Part, 0, len(t.Parts))
		for _, sp := range t.Parts {
			k, _ := partKind(sp.Kind)
			p := provider.Part{Kind: k, Index: sp.Index, Text: sp.Text, ID: sp.ID, Name: sp.Name, Args: sp.Args, Key: sp.Key, Finish: sp.Finish}
			if sp.Usage != nil {
				p.Usage = *sp.Usage
			}
			out = append(out, p)
		}
		return out
	}
	var out []provider.Part
	for _, c := range chunks(t.Reasoning, t.Chunk) {
		out = append(out, provider.Part{Kind: provider.PartReasoning, Text: c})
	}
	for _, c := range chunks(t.Text, t.Chunk) {
		out = append(out, provider.Part{Kind: provider.PartText, Text: c})
	}
	outBytes := len(t.Reasoning) + len(t.Text)
	for i, tc := range t.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n, i)
		}
		args := tc.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		outBytes += len(args)
		out = append(out, provider.Part{Kind: provider.PartToolInputStart, Index: i, ID: id, Name: tc.Name})
		for _, c := range chunks(string(args), t.Chunk) {
			out = append(out, provider.Part{Kind: provider.PartToolInputDelta, Index: i, ID: id, Text: c})
		}
		out = append(out, provider.Part{Kind: provider.PartToolCall, Index: i, ID: id, Name: tc.Name, Args: args})
	}
	if t.Hang {
		return out
	}
	u := provider.Usage{InputTokens: requestBytes(req) / 4, OutputTokens: (outBytes + 3) / 4}
	if t.Usage != nil {
		u = *t.Usage
	}
	out = append(out, provider.Part{Kind: provider.PartUsage, Usage: u})
	f := t.Finish
	if f == "" {
		f = provider.FinishStop
		if len(t.ToolCalls) > 0 {
			f = provider.FinishToolCalls
		}
	}
	return append(out, provider.Part{Kind: provider.PartFinish, Finish: f})
}

func requestBytes(r *provider.Request) int {
	n := len(r.System)
	for _, m := range r.Messages {
		n += len(m.Text)
		for _, c := range m.ToolCalls {
			n += len(c.Args)
		}
		if m.ToolResult != nil {
			n += len(m.ToolResult.Output)
		}
	}
	return n
}

// chunks splits s into pieces of at most size runes (size 0: whole).
func chunks(s string, size int) []string {
	if s == "" {
		return nil
	}
	if size <= 0 || utf8.RuneCountInString(s) <= size {
		return []string{s}
	}
	var out []string
	for len(s) > 0 {
		i, n := 0, 0
		for i < len(s) && n < size {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			n++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

type stream struct {
	ctx    context.Context
	parts  []provider.Part
	i      int
	delay  time.Duration
	first  time.Duration
	hang   bool
	errAt  int // index before which the error fires, -1 for none
	err    *provider.Error
	closed chan struct{}
	once   sync.Once
	final  error
}

func newStream(ctx context.Context, t *Turn, req *provider.Request, n int) *stream {
	s := &stream{ctx: ctx, parts: build(t, req, n), delay: time.Duration(t.Delay), first: time.Duration(t.FirstDelay), hang: t.Hang, errAt: -1, closed: make(chan struct{})}
	if e := t.Error; e != nil && e.AfterParts != nil {
		s.errAt = *e.AfterParts
		if s.errAt > len(s.parts) {
			s.errAt = len(s.parts)
		}
		s.err = turnError(e)
	}
	return s
}

func (s *stream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func (s *stream) interrupted() error {
	if s.ctx.Err() != nil {
		return &provider.Error{Kind: provider.KindInterrupted, Provider: Kind, Message: "stream", Err: context.Cause(s.ctx)}
	}
	return &provider.Error{Kind: provider.KindInterrupted, Provider: Kind, Message: "stream closed"}
}

func (s *stream) Next() (provider.Part, error) {
	if s.final != nil {
		return provider.Part{}, s.final
	}
	select {
	case <-s.closed:
		s.final = s.interrupted()
		return provider.Part{}, s.final
	case <-s.ctx.Done():
		s.final = s.interrupted()
		return provider.Part{}, s.final
	default:
	}
	if s.errAt == s.i {
		s.final = s.err
		return provider.Part{}, s.final
	}
	if s.i >= len(s.parts) {
		if s.hang {
			select {
			case <-s.closed:
			case <-s.ctx.Done():
			}
			s.final = s.interrupted()
			return provider.Part{}, s.final
		}
		s.final = io.EOF
		return provider.Part{}, io.EOF
	}
	d := s.delay
	if s.i == 0 {
		d += s.first
	}
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-s.closed:
			t.Stop()
			s.final = s.interrupted()
			return provider.Part{}, s.final
		case <-s.ctx.Done():
			t.Stop()
			s.final = s.interrupted()
			return provider.Part{}, s.final
		}
	}
	p := s.parts[s.i]
	s.i++
	return p, nil
}
