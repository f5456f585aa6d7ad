package openai

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

// chunk is one chat.completion.chunk (or an in-stream error).
type chunk struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []choice        `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type choice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Content string `json:"content"`
	// ReasoningContent is DeepSeek/vLLM/llama.cpp's field; Reasoning is
	// OpenRouter/Ollama's.
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	Refusal          string          `json:"refusal"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type callState struct {
	wireIndex int
	id, name  string
	args      []byte
	// complete: the PartToolCall was emitted (when the next call started
	// with valid arguments, or at finish_reason).
	complete bool
}

// stream decodes one Chat Completions SSE response body into parts (the
// sse.Stream shell does the reading, queueing and closing).
type stream struct {
	sse.Stream

	calls    []callState
	finish   provider.FinishReason
	usage    *provider.Usage
	metaSent bool

	sc jsonscan.Scanner
	c  chunk
}

func newStream(ctx context.Context, body io.ReadCloser) *stream {
	s := &stream{}
	s.Init(ctx, Kind, body, s)
	return s
}

// NewStreamForTest decodes body as a Chat Completions SSE stream; it exists
// for benchmarks of the decoder alone.
func NewStreamForTest(ctx context.Context, body io.ReadCloser) provider.Stream {
	return newStream(ctx, body)
}

// EndOfBody finishes a turn whose finish_reason arrived: some compatible
// servers end the body without "data: [DONE]".
func (s *stream) EndOfBody() bool {
	if s.finish == "" {
		return false
	}
	s.finalize()
	return true
}

// Event decodes one chunk (or in-stream error) and queues its parts.
func (s *stream) Event(ev sse.Event) error {
	data := ev.Data
	if string(ev.Name) == "error" {
		// LM Studio's "event: error", llama.cpp's "error:" line.
		return streamError(data)
	}
	if string(data) == "[DONE]" {
		if s.finish == "" {
			return provider.Malformed(Kind, "stream ended ([DONE]) without a finish_reason", data, nil)
		}
		s.finalize()
		return nil
	}
	c := &s.c
	if !decodeChunkFast(&s.sc, data, c, !s.metaSent) {
		*c = chunk{}
		if err := json.Unmarshal(data, c); err != nil {
			return provider.Malformed(Kind, "chunk is not valid JSON", data, err)
		}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return streamError(data)
	}
	if !s.metaSent && (c.ID != "" || c.Model != "") {
		s.metaSent = true
		if c.ID != "" {
			s.Emit(provider.Part{Kind: provider.PartMetadata, Key: provider.MetaResponseID, Text: c.ID})
		}
		if c.Model != "" {
			s.Emit(provider.Part{Kind: provider.PartMetadata, Key: provider.MetaModel, Text: c.Model})
		}
	}
	if c.Usage != nil {
		u := provider.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
		if d := c.Usage.PromptTokensDetails; d != nil {
			u.CacheReadTokens = d.CachedTokens
		}
		if d := c.Usage.CompletionTokensDetails; d != nil {
			u.ReasoningTokens = d.ReasoningTokens
		}
		s.usage = &u
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n > 1 is never requested
		}
		if err := s.choice(ch, data); err != nil {
			return err
		}
	}
	return nil
}

func (s *stream) choice(ch *choice, data []byte) error {
	d := &ch.Delta
	if r := d.ReasoningContent + d.Reasoning; r != "" {
		s.Emit(provider.Part{Kind: provider.PartReasoning, Text: r})
	}
	if d.Content != "" {
		s.Emit(provider.Part{Kind: provider.PartText, Text: d.Content})
	}
	if d.Refusal != "" {
		s.Emit(provider.Part{Kind: provider.PartText, Text: d.Refusal})
	}
	for _, tc := range d.ToolCalls {
		slot := -1
		for j := len(s.calls) - 1; j >= 0; j-- {
			if s.calls[j].wireIndex == tc.Index {
				slot = j
				break
			}
		}
		if slot >= 0 && tc.ID != "" && tc.ID != s.calls[slot].id {
			// Ollama reuses index 0 for every call of a parallel batch and
			// tells them apart only by ID.
			slot = -1
		}
		if slot >= 0 && s.calls[slot].complete {
			return provider.Malformed(Kind, "tool call delta after the call was complete", data, nil)
		}
		if slot < 0 {
			if s.finish != "" {
				return provider.Malformed(Kind, "tool call delta after finish_reason", data, nil)
			}
			// Calls stream one after another: a new one completes those
			// before it whose arguments already parse, so the Session can
			// start them while the model is still writing the rest.
			for j := range s.calls {
				if c := &s.calls[j]; !c.complete && jsonscan.Valid(c.args) {
					s.completeCall(j)
				}
			}
			slot = len(s.calls)
			id := tc.ID
			if id == "" {
				// Some local servers omit IDs; the Session needs one to pair
				// the result.
				id = fmt.Sprintf("call_%d", slot)
			}
			if tc.Function.Name == "" {
				return provider.Malformed(Kind, "tool call without a function name", data, nil)
			}
			s.calls = append(s.calls, callState{wireIndex: tc.Index, id: id, name: tc.Function.Name})
			s.Emit(provider.Part{Kind: provider.PartToolInputStart, Index: slot, ID: id, Name: tc.Function.Name})
		}
		if a := tc.Function.Arguments; a != "" {
			s.calls[slot].args = append(s.calls[slot].args, a...)
			s.Emit(provider.Part{Kind: provider.PartToolInputDelta, Index: slot, ID: s.calls[slot].id, Text: a})
		}
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" && s.finish == "" {
		f, ok := mapFinish(*ch.FinishReason)
		if !ok {
			return provider.Malformed(Kind, "unknown finish_reason", []byte(*ch.FinishReason), nil)
		}
		for j := range s.calls {
			if c := &s.calls[j]; !c.complete {
				if len(bytes.TrimSpace(c.args)) > 0 && !jsonscan.Valid(c.args) {
					return provider.Malformed(Kind, fmt.Sprintf("tool call %s (%s) arguments are not valid JSON", c.id, c.name), c.args, nil)
				}
				s.completeCall(j)
			}
		}
		if len(s.calls) > 0 && f == provider.FinishStop {
			// Some compatible servers say "stop" after tool calls; the
			// neutral reason says what the turn holds.
			f = provider.FinishToolCalls
		}
		s.finish = f
	}
	return nil
}

// completeCall emits call j (its arguments are valid JSON or empty).
func (s *stream) completeCall(j int) {
	c := &s.calls[j]
	args := json.RawMessage(bytes.Clone(c.args))
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	c.complete = true
	s.Emit(provider.Part{Kind: provider.PartToolCall, Index: j, ID: c.id, Name: c.name, Args: args})
}

func (s *stream) finalize() {
	if s.usage != nil {
		s.Emit(provider.Part{Kind: provider.PartUsage, Usage: *s.usage})
	}
	s.Emit(provider.Part{Kind: provider.PartFinish, Finish: s.finish})
	s.Finish()
}

func mapFinish(r string) (provider.FinishReason, bool) {
	switch r {
	case "stop", "eos", "end_turn":
		return provider.FinishStop, true
	case "length", "max_tokens":
		return provider.FinishLength, true
	case "tool_calls", "function_call":
		return provider.FinishToolCalls, true
	case "content_filter":
		return provider.FinishContentFilter, true
	}
	return "", false
}
