package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/jsonscan"
	"github.com/sessionrt/sessionrt/provider/internal/sse"
)

// event is any Messages streaming event; fields not in a given type stay zero.
type event struct {
	Type         string        `json:"type"`
	Index        int           `json:"index"`
	Message      *message      `json:"message"`
	ContentBlock *contentBlock `json:"content_block"`
	Delta        *delta        `json:"delta"`
	Usage        *wireUsage    `json:"usage"`

	// store is where the fast decoder puts what the fields above point to,
	// so that an event allocates none of them (the event is reused).
	store struct {
		message      message
		block        contentBlock
		delta        delta
		usage, mUsag wireUsage
		stop         string
	}
}

// delta is content_block_delta's or message_delta's delta.
type delta struct {
	Type        string  `json:"type"`
	Text        string  `json:"text"`
	Thinking    string  `json:"thinking"`
	Signature   string  `json:"signature"`
	PartialJSON string  `json:"partial_json"`
	StopReason  *string `json:"stop_reason"`
}

// message is message_start's message. Its content is usually empty; with
// programmatic tool calling it may hold a whole tool call, and stop_reason
// be set already, message_stop following at once.
type message struct {
	ID         string         `json:"id"`
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason *string        `json:"stop_reason"`
	Usage      *wireUsage     `json:"usage"`
}

// contentBlock is content_block_start's block, or a whole block of
// message_start's content.
type contentBlock struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
	Text string `json:"text"`
	// Thinking is usually empty at start; Data is a redacted block's payload.
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	Data      string `json:"data"`
	Input     input  `json:"input"`
}

// input is a tool_use block's input as given at its start: nil for the "{}"
// of a block whose input then streams as input_json_delta events, the whole
// input when none follow (programmatic tool calling sends it this way).
type input []byte

func (in *input) UnmarshalJSON(b []byte) error {
	*in = nil
	if !emptyObject(b) && string(b) != "null" {
		*in = bytes.Clone(b)
	}
	return nil
}

// emptyObject reports whether b is {} (spaces allowed).
func emptyObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}' && len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}

// wireUsage is a usage object; message_delta's repeats only what changed.
type wireUsage struct {
	InputTokens              optInt `json:"input_tokens"`
	OutputTokens             optInt `json:"output_tokens"`
	CacheCreationInputTokens optInt `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     optInt `json:"cache_read_input_tokens"`
	// OutputTokensDetails.ThinkingTokens is the part of output_tokens spent
	// thinking (sent by newer models).
	OutputTokensDetails struct {
		ThinkingTokens optInt `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// optInt is a count that may be absent or null.
type optInt struct {
	V   int
	Set bool
}

func (o *optInt) UnmarshalJSON(b []byte) error {
	*o = optInt{}
	if string(b) == "null" {
		return nil
	}
	o.Set = true
	return json.Unmarshal(b, &o.V)
}

// block tracks one open content block by its wire index.
type block struct {
	kind  string // "text", "thinking", "redacted_thinking", "tool_use", other
	index int    // our reasoning or tool-call index
	id    string
	name  string
	args  []byte
	start input // a tool_use block's input given whole at its start
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
	thinking   int
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
		return s.startContent(e.Message, ev.Data)
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
	return provider.ClassifyInStream(Kind, parseError(data), data)
}

func (s *stream) usage(u *wireUsage) {
	if u == nil {
		return
	}
	// message_delta usage is cumulative; take the latest value given.
	if u.InputTokens.Set {
		s.in = u.InputTokens.V
	}
	if u.OutputTokens.Set {
		s.out = u.OutputTokens.V
	}
	if u.CacheReadInputTokens.Set {
		s.cacheRead = u.CacheReadInputTokens.V
	}
	if u.CacheCreationInputTokens.Set {
		s.cacheWrite = u.CacheCreationInputTokens.V
	}
	if t := u.OutputTokensDetails.ThinkingTokens; t.Set {
		s.thinking = t.V
	}
}

// startContent yields the blocks a message_start already holds, whole, and
// takes its stop reason (programmatic tool calling: the turn may end with
// message_stop right after).
func (s *stream) startContent(m *message, data []byte) error {
	for i := range m.Content {
		cb := &m.Content[i]
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				s.Emit(provider.Part{Kind: provider.PartText, Text: cb.Text})
			}
		case "thinking":
			idx := s.reasonings
			s.reasonings++
			if cb.Thinking != "" {
				s.Emit(provider.Part{Kind: provider.PartReasoning, Index: idx, Text: cb.Thinking})
			}
			if cb.Signature != "" {
				s.Emit(provider.Part{Kind: provider.PartMetadata, Key: provider.MetaReasoningSignature, Index: idx, Text: cb.Signature})
			}
		case "redacted_thinking":
			s.Emit(provider.Part{Kind: provider.PartMetadata, Key: provider.MetaReasoningRedacted, Index: s.reasonings, Text: cb.Data})
			s.reasonings++
		case "tool_use":
			if cb.ID == "" || cb.Name == "" {
				return provider.Malformed(Kind, "tool_use block without id or name", data, nil)
			}
			idx := s.calls
			s.calls++
			s.Emit(provider.Part{Kind: provider.PartToolInputStart, Index: idx, ID: cb.ID, Name: cb.Name})
			s.toolCall(idx, cb.ID, cb.Name, cb.Input)
		}
	}
	if m.StopReason != nil {
		f, ok := mapStop(*m.StopReason)
		if !ok {
			return provider.Malformed(Kind, "unknown stop_reason", []byte(*m.StopReason), nil)
		}
		s.finish = f
	}
	return nil
}

// toolCall yields a tool call whose input was given whole (nil: none), as
// one input delta and the call.
func (s *stream) toolCall(idx int, id, name string, in input) {
	args := json.RawMessage("{}")
	if len(in) > 0 {
		args = json.RawMessage(in)
		s.Emit(provider.Part{Kind: provider.PartToolInputDelta, Index: idx, ID: id, Text: string(in)})
	}
	s.Emit(provider.Part{Kind: provider.PartToolCall, Index: idx, ID: id, Name: name, Args: args})
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
		b.index, b.id, b.name, b.start = s.calls, cb.ID, cb.Name, cb.Input
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
		// No input_json_delta came: the input, if any, was given whole at
		// the start (programmatic tool calling).
		s.toolCall(b.index, b.id, b.name, b.start)
		b.start = nil
		return nil
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
		ReasoningTokens:  s.thinking,
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
