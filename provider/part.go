package provider

import "encoding/json"

// PartKind says what a Part carries.
type PartKind uint8

const (
	// PartText is a text delta (Text).
	PartText PartKind = iota + 1
	// PartReasoning is a reasoning delta (Text) of reasoning block Index.
	PartReasoning
	// PartToolInputStart opens tool call Index (ID, Name).
	PartToolInputStart
	// PartToolInputDelta is a fragment (Text) of tool call Index's JSON arguments.
	PartToolInputDelta
	// PartToolCall is a complete tool call Index (ID, Name, Args as valid JSON).
	PartToolCall
	// PartUsage reports token usage (Usage); at most once, before PartFinish.
	PartUsage
	// PartFinish is the last part of a turn (Finish).
	PartFinish
	// PartMetadata is provider metadata (Key, Text = value; Index = reasoning
	// block for the Meta* reasoning keys).
	PartMetadata
)

func (k PartKind) String() string {
	switch k {
	case PartText:
		return "text"
	case PartReasoning:
		return "reasoning"
	case PartToolInputStart:
		return "tool-input-start"
	case PartToolInputDelta:
		return "tool-input-delta"
	case PartToolCall:
		return "tool-call"
	case PartUsage:
		return "usage"
	case PartFinish:
		return "finish"
	case PartMetadata:
		return "metadata"
	}
	return "unknown"
}

// Metadata keys of PartMetadata.
const (
	// MetaResponseID is the provider's response/message ID.
	MetaResponseID = "response_id"
	// MetaModel is the model the provider reports having used.
	MetaModel = "model"
	// MetaReasoningSignature is the signature of reasoning block Index (Anthropic).
	MetaReasoningSignature = "reasoning.signature"
	// MetaReasoningRedacted is the opaque data of redacted reasoning block Index (Anthropic).
	MetaReasoningRedacted = "reasoning.redacted"
)

// Part is one element of a provider-turn stream. It is a flat value (no
// interface) so that streaming a part allocates nothing beyond its strings.
type Part struct {
	Kind PartKind
	// Index is the tool call index (tool parts) or reasoning block index
	// (reasoning parts and reasoning metadata), both counted from 0 per turn.
	Index int
	// Text is the delta for text, reasoning and tool-input parts, the value
	// for metadata.
	Text string
	// ID and Name identify a tool call.
	ID   string
	Name string
	// Args is the complete JSON arguments of a PartToolCall.
	Args json.RawMessage
	// Key is the metadata key of a PartMetadata.
	Key    string
	Usage  Usage
	Finish FinishReason
}

// Usage is token accounting of one turn, with one meaning whatever the
// provider (the adapters convert what each one reports):
//   - InputTokens counts every input token, those read from and written to
//     the prompt cache included (Anthropic reports them apart; the adapter
//     adds them), and CacheReadTokens and CacheWriteTokens are those parts;
//   - OutputTokens counts every generated token, reasoning included (xAI's
//     completion_tokens leave reasoning out, unlike OpenAI's, DeepSeek's and
//     Groq's; the adapter adds it back), and ReasoningTokens is the part
//     spent reasoning, 0 when the provider does not say.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
}

// FinishReason says why the model stopped.
type FinishReason string

const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
	// FinishOther is a documented provider reason with no neutral equivalent
	// (e.g. Anthropic's pause_turn). Unknown reasons are a KindMalformed error.
	FinishOther FinishReason = "other"
)
