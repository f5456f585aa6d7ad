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

	// usage is where the fast decoder puts what Usage points to, so a chunk
	// allocates none of it (the chunk is reused).
	usage wireUsage
}

type choice struct {
	Index int   `json:"index"`
	Delta delta `json:"delta"`
	// FinishReason is "" until the last chunk (null and absent alike).
	FinishReason string `json:"finish_reason"`
}

type delta struct {
	Content content `json:"content"`
	// ReasoningContent is DeepSeek/vLLM/llama.cpp/xAI/Qwen's field;
	// Reasoning is OpenRouter/Ollama/Groq's.
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	Refusal          string          `json:"refusal"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

// content is delta.content: a string, or an array of typed parts (Mistral's
// Magistral: {"type":"text","text":…} and {"type":"thinking","thinking":[text
// parts]}), whose text parts are the answer and thinking parts reasoning.
type content struct {
	Text, Thinking string
}

// contentPart is one typed part; thinking is a string or text parts.
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking json.RawMessage `json:"thinking"`
}

func (c *content) UnmarshalJSON(b []byte) error {
	*c = content{}
	if len(b) == 0 || b[0] != '[' {
		if string(b) == "null" {
			return nil
		}
		return json.Unmarshal(b, &c.Text)
	}
	var parts []contentPart
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	for _, p := range parts {
		switch p.Type {
		case "text":
			c.Text += p.Text
		case "thinking":
			if len(p.Thinking) > 0 && p.Thinking[0] == '"' {
				var t string
				if err := json.Unmarshal(p.Thinking, &t); err != nil {
					return err
				}
				c.Thinking += t
				continue
			}
			var inner []contentPart
			if err := json.Unmarshal(p.Thinking, &inner); err != nil && string(p.Thinking) != "null" {
				return err
			}
			for _, t := range inner {
				if t.Type == "text" {
					c.Thinking += t.Text
				}
			}
		}
	}
	return nil
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
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
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
		s.usage = usage(c.Usage)
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

// usage reads a usage object (the last one sent counts: some servers send
// a growing one on every chunk) in provider.Usage's meaning.
func usage(w *wireUsage) *provider.Usage {
	u := provider.Usage{InputTokens: w.PromptTokens, OutputTokens: w.CompletionTokens,
		CacheReadTokens: w.PromptTokensDetails.CachedTokens, ReasoningTokens: w.CompletionTokensDetails.ReasoningTokens}
	// OpenAI, DeepSeek and Groq count reasoning in completion_tokens; xAI
	// does not (its total is prompt + completion + reasoning): add it.
	if r := u.ReasoningTokens; r > 0 && w.TotalTokens == u.InputTokens+u.OutputTokens+r {
		u.OutputTokens += r
	}
	return &u
}

func (s *stream) choice(ch *choice, data []byte) error {
	d := &ch.Delta
	r := d.ReasoningContent
	if d.Reasoning != r {
		// A server sending the same text in both fields says it once.
		r += d.Reasoning
	}
	r += d.Content.Thinking
	if r != "" {
		s.Emit(provider.Part{Kind: provider.PartReasoning, Text: r})
	}
	if d.Content.Text != "" {
		s.Emit(provider.Part{Kind: provider.PartText, Text: d.Content.Text})
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
	if ch.FinishReason != "" && s.finish == "" {
		if ch.FinishReason == "error" {
			// OpenRouter ends a turn its upstream failed this way (with an
			// error member, classified before; here without one).
			return &provider.Error{Kind: provider.KindServerError, Provider: Kind,
				Message: `the provider ended the turn with finish_reason "error"`, Snippet: provider.Quote(data)}
		}
		f, ok := mapFinish(ch.FinishReason)
		if !ok {
			return provider.Malformed(Kind, "unknown finish_reason", []byte(ch.FinishReason), nil)
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
	case "length", "max_tokens", "model_context_window_exceeded":
		return provider.FinishLength, true
	case "tool_calls", "function_call":
		return provider.FinishToolCalls, true
	case "content_filter":
		return provider.FinishContentFilter, true
	}
	return "", false
}
