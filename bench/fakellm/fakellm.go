package fakellm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures the server. Zero fields take the documented defaults.
type Config struct {
	// Addr to listen on; default "127.0.0.1:0" (a free port).
	Addr string
	// Model is the model name echoed in chunks; default "bench".
	Model string
	// ChunkDelay is waited before every streamed chunk (slow streams).
	ChunkDelay time.Duration
	// TextChunks splits the final text into this many deltas; default 1.
	TextChunks int
	// ToolSleep makes the tool command `sleep <s>; echo hi` (slow tools).
	ToolSleep time.Duration
	// ToolGate is a directory for crash tests: a tool call answering a
	// prompt marked HoldToolPrefix runs `until [ -e 'GATE' ]; do sleep
	// 0.05; done; echo hi`, GATE being GatePath(ToolGate, marker), so the
	// tool stays running until that file exists.
	ToolGate string
	// Log, when set, gets one line per request: what was answered and the
	// prompt's run marker (the evidence that a system under test called
	// this server and ran the tool). Writes are serialized.
	Log io.Writer
}

// Stats counts what the server answered.
type Stats struct {
	Requests, ToolCalls, Finals, Plain, Errors int64
}

// Server is a running fake model server.
type Server struct {
	// URL is the API root to configure as the OpenAI base URL (ends in /v1).
	URL string

	cfg                                          Config
	srv                                          *http.Server
	ln                                           net.Listener
	requests, toolCalls, finals, plain, badInput atomic.Int64
	logMu                                        sync.Mutex

	holdMu   sync.Mutex
	held     map[string]int  // open held streams by marker
	released map[string]bool // markers Release was called for
	wake     chan struct{}   // closed and replaced when either changes
}

// Start listens and serves until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Model == "" {
		cfg.Model = "bench"
	}
	if cfg.TextChunks <= 0 {
		cfg.TextChunks = 1
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("fake llm: listen %s: %w", cfg.Addr, err)
	}
	s := &Server{URL: "http://" + ln.Addr().String() + "/v1", cfg: cfg, ln: ln,
		held: map[string]int{}, released: map[string]bool{}, wake: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", s.models)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server and its open streams.
func (s *Server) Close() error { return s.srv.Close() }

// WaitHeld returns once a stream answering marker is being held open
// (HoldStreamPrefix), or when ctx ends.
func (s *Server) WaitHeld(ctx context.Context, marker string) error {
	for {
		s.holdMu.Lock()
		n, wake := s.held[marker], s.wake
		s.holdMu.Unlock()
		if n > 0 {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("fake llm: no held stream for %s: %w", marker, ctx.Err())
		}
	}
}

// Release lets the streams held for marker finish, and holds no later one
// for it.
func (s *Server) Release(marker string) {
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	s.released[marker] = true
	s.broadcast()
}

// broadcast wakes every waiter; holdMu is held.
func (s *Server) broadcast() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// hold keeps the stream open until Release(marker) or the client goes
// away; it reports whether the stream may go on.
func (s *Server) hold(ctx context.Context, marker string) bool {
	s.holdMu.Lock()
	s.held[marker]++
	s.broadcast()
	s.holdMu.Unlock()
	defer func() {
		s.holdMu.Lock()
		s.held[marker]--
		s.broadcast()
		s.holdMu.Unlock()
	}()
	for {
		s.holdMu.Lock()
		done, wake := s.released[marker], s.wake
		s.holdMu.Unlock()
		if done {
			return true
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
	}
}

// GatePath is the file a held tool for marker waits on under dir.
func GatePath(dir, marker string) string {
	name := strings.TrimSuffix(strings.TrimPrefix(marker, "[run:"), "]")
	return filepath.Join(dir, name)
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), ToolCalls: s.toolCalls.Load(), Finals: s.finals.Load(), Plain: s.plain.Load(), Errors: s.badInput.Load()}
}

// Request is the part of a Chat Completions request the fake reads.
type Request struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Kind is what Reply decided to answer.
type Kind int

const (
	KindToolCall Kind = iota // call bash `echo hi`
	KindFinal                // the tool result came back: final text
	KindPlain                // no tools offered: a short text
)

func (k Kind) String() string {
	switch k {
	case KindToolCall:
		return "tool-call"
	case KindFinal:
		return "final"
	case KindPlain:
		return "plain"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Answer is one decided reply.
type Answer struct {
	Kind Kind
	Text string
	// Marker is the latest user message's run marker, "" when none.
	Marker string
}

// Markers that script crash tests (see Server.WaitHeld and Config.ToolGate).
const (
	// HoldStreamPrefix: the tool-call stream answering such a prompt sends
	// its first chunk and then stays open until Release.
	HoldStreamPrefix = "[run:hold-stream"
	// HoldToolPrefix: the tool call answering such a prompt waits on
	// Config.ToolGate.
	HoldToolPrefix = "[run:hold-tool"
)

var marker = regexp.MustCompile(`\[run:[^\]\s]+\]`)

// Reply decides the answer to req: a final text when the latest message is
// a tool result, a tool call when tools are offered, else a plain text.
func Reply(req *Request) (Answer, error) {
	if len(req.Messages) == 0 {
		return Answer{}, errors.New("messages: empty")
	}
	msgs := make([]message, len(req.Messages))
	for i, raw := range req.Messages {
		if err := json.Unmarshal(raw, &msgs[i]); err != nil {
			return Answer{}, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	mark := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			if m := marker.Find(msgs[i].Content); m != nil {
				mark = string(m)
			}
			break
		}
	}
	if len(req.Tools) == 0 {
		return Answer{Kind: KindPlain, Text: "Benchmark session", Marker: mark}, nil
	}
	if msgs[len(msgs)-1].Role == "tool" {
		text := "done"
		if mark != "" {
			text += " " + mark
		}
		return Answer{Kind: KindFinal, Text: text, Marker: mark}, nil
	}
	return Answer{Kind: KindToolCall, Marker: mark}, nil
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"bench"}]}`, s.cfg.Model)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	var req Request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
		s.fail(w, http.StatusBadRequest, "decode request: "+err.Error())
		return
	}
	ans, err := Reply(&req)
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if !req.Stream {
		s.fail(w, http.StatusBadRequest, "stream: only streaming requests are served")
		return
	}
	s.logf("%s %s %s model=%s messages=%d tools=%d", time.Now().UTC().Format("15:04:05.000"), ans.Kind, orDash(ans.Marker), req.Model, len(req.Messages), len(req.Tools))
	switch ans.Kind {
	case KindToolCall:
		s.toolCalls.Add(1)
	case KindFinal:
		s.finals.Add(1)
	default:
		s.plain.Add(1)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	st := &stream{w: w, ctx: r.Context(), delay: s.cfg.ChunkDelay, model: s.cfg.Model, id: fmt.Sprintf("chatcmpl-%d", s.requests.Load())}
	if f, ok := w.(http.Flusher); ok {
		st.flush = f.Flush
	}
	st.send(delta{Role: "assistant"}, nil)
	if ans.Kind == KindToolCall && strings.HasPrefix(ans.Marker, HoldStreamPrefix) {
		if !s.hold(r.Context(), ans.Marker) {
			s.logf("%s held %s: the client went away", time.Now().UTC().Format("15:04:05.000"), ans.Marker)
			return
		}
	}
	finish := "stop"
	if ans.Kind == KindToolCall {
		cmd := "echo hi"
		switch {
		case s.cfg.ToolGate != "" && strings.HasPrefix(ans.Marker, HoldToolPrefix):
			cmd = fmt.Sprintf("until [ -e '%s' ]; do sleep 0.05; done; echo hi", GatePath(s.cfg.ToolGate, ans.Marker))
		case s.cfg.ToolSleep > 0:
			cmd = fmt.Sprintf("sleep %g; echo hi", s.cfg.ToolSleep.Seconds())
		}
		args, _ := json.Marshal(map[string]string{"command": cmd, "description": "Print hi"})
		id := fmt.Sprintf("call_%d", s.requests.Load())
		st.send(delta{ToolCalls: []toolCall{{Index: 0, ID: id, Type: "function", Function: function{Name: "bash"}}}}, nil)
		st.send(delta{ToolCalls: []toolCall{{Index: 0, Function: function{Arguments: string(args)}}}}, nil)
		finish = "tool_calls"
	} else {
		for _, part := range split(ans.Text, s.cfg.TextChunks) {
			st.send(delta{Content: part}, nil)
		}
	}
	st.send(delta{}, &finish)
	st.usage()
	st.raw("[DONE]")
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.cfg.Log, format+"\n", args...)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (s *Server) fail(w http.ResponseWriter, code int, msg string) {
	s.badInput.Add(1)
	s.logf("%s refused: %s", time.Now().UTC().Format("15:04:05.000"), msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": "fakellm: " + msg, "type": "invalid_request_error"}})
	_, _ = w.Write(b)
}

// split cuts s into at most n pieces of similar length, on rune boundaries.
func split(s string, n int) []string {
	r := []rune(s)
	if n <= 1 || len(r) <= 1 {
		return []string{s}
	}
	n = min(n, len(r))
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}

type function struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type toolCall struct {
	Index    int      `json:"index"`
	ID       string   `json:"id,omitempty"`
	Type     string   `json:"type,omitempty"`
	Function function `json:"function"`
}

type delta struct {
	Role      string     `json:"role,omitempty"`
	Content   string     `json:"content,omitempty"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

type stream struct {
	w     http.ResponseWriter
	ctx   context.Context
	flush func()
	delay time.Duration
	model string
	id    string
	dead  bool
}

func (st *stream) wait() {
	if st.delay <= 0 || st.dead {
		return
	}
	t := time.NewTimer(st.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-st.ctx.Done():
		st.dead = true
	}
}

func (st *stream) send(d delta, finish *string) {
	st.wait()
	chunk := map[string]any{
		"id": st.id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": st.model,
		"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}},
	}
	b, _ := json.Marshal(chunk)
	st.raw(string(b))
}

func (st *stream) usage() {
	b, _ := json.Marshal(map[string]any{
		"id": st.id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": st.model, "choices": []any{},
		"usage": map[string]int{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
	})
	st.raw(string(b))
}

func (st *stream) raw(data string) {
	if st.dead {
		return
	}
	if _, err := fmt.Fprintf(st.w, "data: %s\n\n", data); err != nil {
		st.dead = true
		return
	}
	if st.flush != nil {
		st.flush()
	}
}
