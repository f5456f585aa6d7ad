package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/jsonscan"
	"github.com/sessionrt/sessionrt/provider/internal/sse"
)

// event is any Messages streaming event; fields not in a given type stay zero.
type event struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID    string     `json:"id"`
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
		// Thinking is usually empty at start; Data is a redacted block's payload.
		Thinking string `json:"thinking"`
		Data     string `json:"data"`
	} `json:"content_block"`
	Delta *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		Thinking    string  `json:"thinking"`
		Signature   string  `json:"signature"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
}

type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// block tracks one open content block by its wire index.
type block struct {
	kind  string // "text", "thinking", "redacted_thinking", "tool_use", other
	index int    // our reasoning or tool-call index
	id    string
	name  string
	args  []byte
	open  bool
}

// stream decodes one Messages SSE response body into parts (the sse.Stream
// shell does the reading, queueing and closing).
type stream struct {
	sse.Stream

	blocks     []block
	reasonings int
	calls      int
	in, out    int
	cacheRead  int
	cacheWrite int
	finish     provider.FinishReason

	sc jsonscan.Scanner
	e  event
}

func newStream(ctx context.Context, body io.ReadCloser) *stream {
	s := &stream{}
	s.Init(ctx, Kind, body, s)
	return s
}

// NewStreamForTest decodes body as a Messages SSE stream; it exists for
// benchmarks of the decoder alone.
func NewStreamForTest(ctx context.Context, body io.ReadCloser) provider.Stream {
	return newStream(ctx, body)
}

// EndOfBody finishes a turn whose message_delta carried the stop reason: only
// message_stop was lost.
func (s *stream) EndOfBody() bool {
	if s.finish == "" {
		return false
	}
	s.finalize()
	return true
}

// Event decodes one Messages event and queues its parts.
func (s *stream) Event(ev sse.Event) error {
	e := &s.e
	if string(ev.Name) == "error" {
		return streamError(ev.Data)
	}
	if !decodeEventFast(&s.sc, ev.Data, e) {
		*e = event{}
		if err := json.Unmarshal(ev.Data, e); err != nil {
			return provider.Malformed(Kind, "event is not valid JSON", ev.Data, err)
		}
	}
	switch e.Type {
	case "ping":
	case "message_start":
		if e.Message == nil {
			return provider.Malformed(Kind, "message_start without a message", ev.Data, nil)
		}
		if e.Message.ID != "" {
			s.Emit(provider.Part{Kind: provider.PartMetadata, Key: provider.MetaResponseID, Text: e.Message.ID})
		}
		if e.Message.Model != "" {
			s.Emit(provider.Part{Kind: provider.PartMetadata, Key: provider.MetaModel, Text: e.Message.Model})
		}
		s.usage(e.Message.Usage)
	case "content_block_start":
		return s.blockStart(e, ev.Data)
	case "content_block_delta":
		return s.blockDelta(e, ev.Data)
	case "content_block_stop":
		return s.blockStop(e, ev.Data)
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != nil {
			f, ok := mapStop(*e.Delta.StopReason)
			if !ok {
				return provider.Malformed(Kind, "unknown stop_reason", []byte(*e.Delta.StopReason), nil)
			}
			s.finish = f
		}
		s.usage(e.Usage)
	case "message_stop":
		if s.finish == "" {
			return provider.Malformed(Kind, "message_stop without a stop_reason", ev.Data, nil)
		}
		s.finalize()
	case "error":
		return streamError(ev.Data)
	default:
		// New event types may be added to the API; ignoring them is the
		// documented way to stay compatible.
	}
	return nil
}

// streamError classifies an error event ("event: error", or an "error" data
// event), whose data is the error body of an HTTP response.
func streamError(data []byte) *provider.Error {
	f := parseError(data)
	if f.Message == "" {
		f.Message = strings.TrimSpace(string(data))
		if len(f.Message) > provider.MaxSnippet {
			f.Message = provider.Quote(data)
		}
	}
	f.InStream = true
	e := provider.Classify(Kind, f, time.Time{})
	e.Snippet = provider.Quote(data)
	return e
}

func (s *stream) usage(u *wireUsage) {
	if u == nil {
		return
	}
	// message_delta usage is cumulative; take the latest value given.
	if u.InputTokens != nil {
		s.in = *u.InputTokens
	}
	if u.OutputTokens != nil {
		s.out = *u.OutputTokens
	}
	if u.CacheReadInputTokens != nil {
		s.cacheRead = *u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		s.cacheWrite = *u.CacheCreationInputTokens
	}
}

func (s *stream) blockAt(i int, data []byte) (*block, error) {
	if i < 0 || i >= len(s.blocks) || !s.blocks[i].open {
		return nil, provider.Malformed(Kind, fmt.Sprintf("event for content block %d that is not open", i), data, nil)
	}
	return &s.blocks[i], nil
}

func (s *stream) blockStart(e *event, data []byte) error {
	if e.ContentBlock == nil || e.Index < 0 || e.Index > 4096 {
		return provider.Malformed(Kind, "content_block_start without a block or with a bad index", data, nil)
	}
	for len(s.blocks) <= e.Index {
		s.blocks = append(s.blocks, block{})
	}
	cb := e.ContentBlock
	b := &s.blocks[e.Index]
	*b = block{kind: cb.Type, open: true}
	switch cb.Type {
	case "text":
		if cb.Text != "" {
			s.Emit(provider.Part{Kind: provider.PartText, Text: cb.Text})
		}
	case "thinking":
		b.index = s.reasonings
		s.reasonings++
		if cb.Thinking != "" {
			s.Emit(provider.Part{Kind: provider.PartReasoning, Index: b.index, Text: cb.Thinking})
		}
	case "redacted_thinking":
		b.index = s.reasonings
		s.reasonings++
		s.Emit(provider.Part{Kind: provider.PartMetadata, Key: provider.MetaReasoningRedacted, Index: b.index, Text: cb.Data})
	case "tool_use":
		if cb.ID == "" || cb.Name == "" {
			return provider.Malformed(Kind, "tool_use block without id or name", data, nil)
		}
		b.index, b.id, b.name = s.calls, cb.ID, cb.Name
		s.calls++
		s.Emit(provider.Part{Kind: provider.PartToolInputStart, Index: b.index, ID: b.id, Name: b.name})
	}
	return nil
}

func (s *stream) blockDelta(e *event, data []byte) error {
	b, err := s.blockAt(e.Index, data)
	if err != nil {
		return err
	}
	if e.Delta == nil {
		return provider.Malformed(Kind, "content_block_delta without a delta", data, nil)
	}
	d := e.Delta
	switch d.Type {
	case "text_delta":
		if d.Text != "" {
			s.Emit(provider.Part{Kind: provider.PartText, Text: d.Text})
		}
	case "thinking_delta":
		if d.Thinking != "" {
			s.Emit(provider.Part{Kind: provider.PartReasoning, Index: b.index, Text: d.Thinking})
		}
	case "signature_delta":
		if b.kind != "thinking" {
			return provider.Malformed(Kind, "signature_delta outside a thinking block", data, nil)
		}
		s.Emit(provider.Part{Kind: provider.PartMetadata, Key: provider.MetaReasoningSignature, Index: b.index, Text: d.Signature})
	case "input_json_delta":
		if b.kind != "tool_use" {
			// Server tools stream input too; only client tool calls matter here.
			return nil
		}
		if d.PartialJSON != "" {
			b.args = append(b.args, d.PartialJSON...)
			s.Emit(provider.Part{Kind: provider.PartToolInputDelta, Index: b.index, ID: b.id, Text: d.PartialJSON})
		}
	}
	return nil
}

func (s *stream) blockStop(e *event, data []byte) error {
	b, err := s.blockAt(e.Index, data)
	if err != nil {
		return err
	}
	b.open = false
	if b.kind != "tool_use" {
		return nil
	}
	args := b.args
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	if !jsonscan.Valid(args) {
		return provider.Malformed(Kind, fmt.Sprintf("tool call %s (%s) input is not valid JSON", b.id, b.name), args, nil)
	}
	s.Emit(provider.Part{Kind: provider.PartToolCall, Index: b.index, ID: b.id, Name: b.name, Args: json.RawMessage(bytes.Clone(args))})
	b.args = nil
	return nil
}

func (s *stream) finalize() {
	s.Emit(provider.Part{Kind: provider.PartUsage, Usage: provider.Usage{
		InputTokens:      s.in + s.cacheRead + s.cacheWrite,
		OutputTokens:     s.out,
		CacheReadTokens:  s.cacheRead,
		CacheWriteTokens: s.cacheWrite,
	}})
	s.Emit(provider.Part{Kind: provider.PartFinish, Finish: s.finish})
	s.Finish()
}

func mapStop(r string) (provider.FinishReason, bool) {
	switch r {
	case "end_turn", "stop_sequence":
		return provider.FinishStop, true
	case "max_tokens", "model_context_window_exceeded":
		return provider.FinishLength, true
	case "tool_use":
		return provider.FinishToolCalls, true
	case "refusal":
		return provider.FinishContentFilter, true
	case "pause_turn":
		return provider.FinishOther, true
	}
	return "", false
}
