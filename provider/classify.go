package provider

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Failure is what a server said when a turn failed: an HTTP error response,
// or an error inside a 200 event stream. Adapters extract it from their wire
// format; Classify decides what it means.
type Failure struct {
	// Status is the HTTP status. For an error inside a stream it is the
	// status the error's body names (llama.cpp and OpenRouter put one there),
	// else 0.
	Status int
	// Type and Code are the error's type and code as sent; a numeric code is
	// a status and belongs in Status.
	Type, Code string
	// Message is the provider's own message.
	Message string
	// Header holds the response headers, nil inside a stream.
	Header http.Header
	// InStream: the error arrived inside a 200 event stream.
	InStream bool
}

// BodyMessage is the message to report for an error whose body holds none
// the adapter can read: the body itself (quoted when long), or for an empty
// one the status text.
func BodyMessage(body []byte, status int) string {
	msg := strings.TrimSpace(string(body))
	if len(msg) > MaxSnippet {
		return Quote(body)
	}
	if msg == "" {
		return http.StatusText(status)
	}
	return msg
}

// Classify returns the *Error for f: its Kind is that of the first row of
// Rules matching f, and RetryAfter is the delay the provider asked for.
func Classify(provider string, f Failure, now time.Time) *Error {
	e := &Error{Provider: provider, Status: f.Status, Type: f.Type, Code: f.Code, Message: f.Message,
		RetryAfter: Delay(f, now)}
	e.Kind = Rules[match(&f, e.RetryAfter > 0)].Kind
	return e
}

// ClassifyInStream classifies f, an error that arrived inside a 200 event
// stream as the event's data, which the error quotes.
func ClassifyInStream(provider string, f Failure, data []byte) *Error {
	if f.Message == "" {
		f.Message = BodyMessage(data, 0)
	}
	f.InStream = true
	e := Classify(provider, f, time.Time{})
	e.Snippet = Quote(data)
	return e
}

// match returns the index of the first row matching f (the last row matches
// everything).
func match(f *Failure, delay bool) int {
	for i := range Rules {
		if Rules[i].matches(f, delay) {
			return i
		}
	}
	panic("provider: the last rule must match every failure")
}

// Rule is one row of the classification table: a failure that meets every
// condition the row sets gets the row's Kind.
type Rule struct {
	// Families are the provider families whose servers send this failure
	// (space-separated: openai azure openrouter groq vllm llama.cpp lmstudio
	// ollama anthropic; other), empty for the generic rows. It documents the
	// row: every row applies to every server, as gateways relay the errors
	// of the servers behind them.
	Families string
	// Source names the server, version and report the row was taken from;
	// the row's tests use that message.
	Source string
	// Status, or the range Status..StatusTo, is the HTTP status; 0 is any.
	Status, StatusTo int
	// Type and Code match the error's type and code exactly, ignoring case.
	Type, Code string
	// Message is a regular expression found in the message, ignoring case.
	Message string
	// Delay: only when the server said how long to wait. Stream: only inside
	// a stream.
	Delay, Stream bool
	Kind          Kind

	re *regexp.Regexp
}

func (r *Rule) matches(f *Failure, delay bool) bool {
	switch {
	case r.Status != 0 && r.StatusTo == 0 && f.Status != r.Status,
		r.StatusTo != 0 && (f.Status < r.Status || f.Status > r.StatusTo),
		r.Type != "" && !strings.EqualFold(f.Type, r.Type),
		r.Code != "" && !strings.EqualFold(f.Code, r.Code),
		r.Delay && !delay,
		r.Stream && !f.InStream,
		r.re != nil && !r.re.MatchString(f.Message):
		return false
	}
	return true
}

func init() {
	for i := range Rules {
		if m := Rules[i].Message; m != "" {
			Rules[i].re = regexp.MustCompile("(?i)" + m)
		}
	}
}

// Rules is the classification table, tried in order: the messages of known
// servers first, then the meaning of HTTP statuses. A context overflow must be
// recognised whatever status carries it (llama.cpp sends one as a 500, a 200
// stream event, or an "error:" line), so the overflow rows come first; a
// server's retryable status must not hide a failure that no wait cures.
var Rules = []Rule{
	// Context overflow: compact and rebuild the request.
	{Families: "openai azure groq", Code: "context_length_exceeded", Kind: KindContextOverflow,
		Source: `OpenAI API (400, "This model's maximum context length is 8192 tokens. However, your messages resulted in 11433 tokens…", microsoft/autogen#238); Azure OpenAI (same body with "status":400); Groq ("Please reduce the length of the messages or completion.", letta-ai/letta#1963)`},
	{Families: "llama.cpp", Type: "exceed_context_size_error", Kind: KindContextOverflow,
		Source: `llama.cpp server since b6380 (ggml-org/llama.cpp#15780): 400 "the request exceeds the available context size, try increasing it" with n_prompt_tokens and n_ctx (llama.cpp#17284 on b7062)`},
	{Families: "llama.cpp", Message: `exceeds the available context size`, Kind: KindContextOverflow,
		Source: `llama.cpp server before b6380: 400 invalid_request_error "the request exceeds the available context size. try increasing the context size or enable context shift", in a 200 stream as an "error: {…}" line then "data: [DONE]" (containers/ramalama#1914; coddy-project/coddy-agent#106, verified on b5966)`},
	{Families: "llama.cpp", Message: `context size has been exceeded`, Kind: KindContextOverflow,
		Source: `llama.cpp server (tools/server/server-context.cpp update_slots, the KV cache cannot take one more token): 500 server_error "Context size has been exceeded.", also re-sent as "decode() failed: Context size has been exceeded."`},
	{Families: "lmstudio", Message: `when context (the )?overflows|greater than the context length`, Kind: KindContextOverflow,
		Source: `LM Studio 0.3.x: 400 {"error":"Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough…"} (lmstudio-bug-tracker#237, #546 on 0.3.13); older builds: "tokens to keep from the initial prompt is greater than the context length" (badlogic/pi-mono overflow.ts)`},
	{Families: "lmstudio", Message: `does not fit in context length`, Kind: KindContextOverflow,
		Source: `LM Studio 0.4.21: 200 stream, "event: error" {"error":{"message":"Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens."}} (lmstudio-bug-tracker#2322, aaif-goose/goose#11318)`},
	{Families: "lmstudio", Message: `reached context length of \d+ tokens`, Kind: KindContextOverflow,
		Source: `LM Studio 0.3.27: "Reached context length of 32000 tokens with model (arch: gpt-oss) that does not currently support mid-generation context overflow…" (lmstudio-bug-tracker#1024)`},
	{Families: "vllm openrouter", Message: `maximum context length is \d+`, Kind: KindContextOverflow,
		Source: `vLLM 0.6–0.10: 400 BadRequestError "This model's maximum context length is 65536 tokens. However, you requested 8192 output tokens and your prompt contains at least 57879 input tokens…"; OpenRouter: 400 "This endpoint's maximum context length is 1048576 tokens. However, you requested about 1293741 tokens…"`},
	{Families: "vllm", Message: `longer than the maximum model length`, Kind: KindContextOverflow,
		Source: `vLLM (vllm/v1/engine/processor.py _validate_model_input): 400 BadRequestError "The decoder prompt (length 12324) is longer than the maximum model length of 8192. Make sure that max_model_len is no smaller than the number of text tokens."`},
	{Families: "ollama", Message: `input length exceeds the context length|prompt too long; exceeded (max )?context length`, Kind: KindContextOverflow,
		Source: `Ollama runner (runner/ollamarunner errorInputTooLong, 400 when truncation is off): "the input length exceeds the context length"; Ollama 400 "prompt too long; exceeded max context length by 100918 tokens" (badlogic/pi-mono packages/ai/src/utils/overflow.ts)`},
	{Families: "anthropic", Message: `prompt is too long|exceed context limit`, Kind: KindContextOverflow,
		Source: `Anthropic Messages API: 400 invalid_request_error "prompt is too long: 208310 tokens > 200000 maximum" (anthropics/claude-code#12186); "input length and max_tokens exceed context limit: 156321 + 48384 > 200000, decrease input length or max_tokens and try again"`},
	{Families: "anthropic", Type: "request_too_large", Kind: KindContextOverflow,
		Source: `Anthropic Messages API: 413 request_too_large "Request exceeds the maximum allowed number of bytes." (a smaller history is what fits)`},
	{Families: "openai groq", Message: `request too large for .* tokens per min`, Kind: KindContextOverflow,
		Source: `OpenAI 429 rate_limit_exceeded "Request too large for gpt-4o … on tokens per min (TPM): Limit 30000, Requested 342389. The input or output tokens must be reduced…" (vanna-ai/vanna-flask#11); Groq 413 "Request too large for model … on tokens per minute (TPM): Limit 12000, Requested 14137, please reduce your message size…" (continuedev/continue#10218). The request alone exceeds the per-minute budget: no wait lets it pass, only a smaller request does`},
	{Families: "other", Message: `input is too long for requested model|input token count.*exceeds the maximum|maximum prompt length is \d+|context window exceeds limit|exceeded model token limit|exceeds the context window`, Kind: KindContextOverflow,
		Source: `other servers behind OpenAI-compatible gateways (badlogic/pi-mono overflow.ts): Bedrock "Input is too long for requested model.", Gemini "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)", xAI "This model's maximum prompt length is 131072 but the request contains 537812 tokens", MiniMax "invalid params, context window exceeds limit", Kimi "Your request exceeded model token limit: 262144 (requested: 291351)", OpenAI Responses "Your input exceeds the context window of this model."`},

	// Quota and credit: waiting does not cure it.
	{Families: "openai", Code: "insufficient_quota", Kind: KindQuotaExhausted,
		Source: `OpenAI API: 429 insufficient_quota "You exceeded your current quota, please check your plan and billing details." (Pythagora-io/gpt-pilot#340, OpenHands/OpenHands#998)`},
	{Families: "anthropic", Message: `credit balance is too low`, Kind: KindQuotaExhausted,
		Source: `Anthropic Messages API: 400 invalid_request_error "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits." (anthropics/claude-code#4684)`},
	{Families: "anthropic", Type: "billing_error", Kind: KindQuotaExhausted,
		Source: `Anthropic Messages API errors: 402 billing_error "There is an issue with your account's billing." (docs.anthropic.com/en/api/errors)`},
	{Families: "openrouter", Status: 402, Delay: true, Kind: KindRateLimited,
		Source: `OpenRouter: 402 with a Retry-After header when the in-flight spending budget is full (openrouter.ai/docs/api/reference/errors-and-debugging): it clears as requests finish`},
	{Families: "openrouter", Status: 402, Kind: KindQuotaExhausted,
		Source: `OpenRouter: 402 "Insufficient credits. Add more using https://openrouter.ai/settings/credits" (continuedev/continue#10877); "This request requires more credits, or fewer max_tokens. You requested up to 4096 tokens, but can only afford 4000…" (continuedev/continue#10298)`},

	// Rate limits: retry after the delay given.
	{Families: "anthropic", Type: "rate_limit_error", Kind: KindRateLimited,
		Source: `Anthropic Messages API: 429 rate_limit_error "Number of request tokens has exceeded your per-minute rate limit…", with retry-after`},
	{Families: "openai groq", Code: "rate_limit_exceeded", Kind: KindRateLimited,
		Source: `OpenAI API: 429 rate_limit_exceeded "Rate limit reached for gpt-4o in organization org-… on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s."; Groq: 429 "Rate limit reached for model llama-3.3-70b-versatile … on tokens per day (TPD)… Please try again in 9m38.016s." (continuedev/continue#10920)`},
	{Families: "azure openrouter other", Status: 429, Kind: KindRateLimited,
		Source: `Azure OpenAI: 429 code "429" "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-08-01-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds." (vanderschaarlab/climb#1); OpenRouter 429 "Rate limit exceeded: free-models-per-day." with Retry-After; any other 429`},

	// Overloaded: the server is busy; retry with backoff.
	{Families: "anthropic", Type: "overloaded_error", Kind: KindOverloaded,
		Source: `Anthropic Messages API: 529 overloaded_error "Overloaded", also as an "event: error" inside a 200 stream`},
	{Families: "other", Status: 529, Kind: KindOverloaded, Source: `HTTP 529 (Anthropic's overloaded status, also used by gateways in front of it)`},
	{Families: "openai", Message: `overloaded`, Kind: KindOverloaded,
		Source: `OpenAI API: 503 server_error "That model is currently overloaded with other requests. You can retry your request…" (waylaidwanderer/node-chatgpt-api#34)`},
	{Families: "llama.cpp", Type: "unavailable_error", Kind: KindOverloaded,
		Source: `llama.cpp server (format_error_response ERROR_TYPE_UNAVAILABLE): 503 unavailable_error "Loading model" while the model loads`},
	{Families: "ollama", Message: `server busy`, Kind: KindOverloaded,
		Source: `Ollama (server/sched.go ErrMaxQueue, OLLAMA_MAX_QUEUE full): 503 "server busy, please try again.  maximum pending requests exceeded"`},
	{Families: "groq", Status: 498, Kind: KindOverloaded,
		Source: `Groq: 498 capacity_exceeded, "Flex Tier Capacity Exceeded" (console.groq.com/docs/errors, /docs/flex-processing)`},
	{Families: "openrouter groq", Status: 503, Kind: KindOverloaded,
		Source: `HTTP 503 Service Unavailable: OpenRouter "There is no available model provider that meets your routing requirements" (openrouter.ai/docs errors), Groq 503 "Service Unavailable" (console.groq.com/docs/errors)`},

	// Content policy.
	{Families: "azure", Code: "content_filter", Kind: KindContentFilter,
		Source: `Azure OpenAI: 400 code content_filter "The response was filtered due to the prompt triggering Azure OpenAI's content management policy…"`},
	{Families: "openrouter", Status: 403, Message: `flagged`, Kind: KindContentFilter,
		Source: `OpenRouter: 403 when the model requires moderation and the input was flagged: "openai/gpt-4o requires moderation on OpenAI. Your input was flagged for \"harassment\"…" (openrouter.ai/docs errors)`},
	{Families: "openai", Code: "content_policy_violation", Kind: KindContentFilter,
		Source: `OpenAI API: 400 content_policy_violation "Your request was rejected as a result of our safety system."`},

	// Credentials.
	{Families: "openai groq", Code: "invalid_api_key", Kind: KindAuth,
		Source: `OpenAI API: 401 invalid_api_key "Incorrect API key provided: sk-…. You can find your API key at https://platform.openai.com/account/api-keys."; Groq: 401 invalid_api_key "Invalid API Key"`},
	{Families: "anthropic llama.cpp", Type: "authentication_error", Kind: KindAuth,
		Source: `Anthropic Messages API: 401 authentication_error "invalid x-api-key"; llama.cpp server --api-key (format_error_response ERROR_TYPE_AUTHENTICATION): 401 authentication_error "Invalid API Key"`},
	{Families: "anthropic", Type: "permission_error", Kind: KindAuth,
		Source: `Anthropic Messages API: 403 permission_error "Your API key does not have permission to use the specified resource."`},
	{Families: "azure vllm openrouter", Status: 401, StatusTo: 403, Kind: KindAuth,
		Source: `Azure OpenAI: 401 code "401" "Access denied due to invalid subscription key or wrong API endpoint…" (SciSharp/BotSharp#386); vLLM --api-key: 401 {"error": "Unauthorized"} (vllm/entrypoints/openai/api_server.py AuthenticationMiddleware); OpenRouter 401 "No auth credentials found"`},

	// The server failed: retry.
	{Families: "anthropic ollama", Type: "api_error", Kind: KindServerError,
		Source: `Anthropic Messages API: 500 api_error "Internal server error", also inside a stream; Ollama's OpenAI layer (openai/openai.go NewError: api_error for every status but 400 and 404): 500 "model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, check ollama server logs for details"`},
	{Families: "openai vllm llama.cpp openrouter", Status: 500, StatusTo: 599, Kind: KindServerError,
		Source: `OpenAI API: 500 server_error "The server had an error while processing your request. Sorry about that!"; vLLM 500 InternalServerError (EngineDeadError); llama.cpp 500 server_error; OpenRouter 502 "Your chosen model is down or we received an invalid response from it"; gateways' HTML 502/504`},
	{Families: "openrouter", Status: 408, Kind: KindServerError,
		Source: `OpenRouter: 408 "Your request timed out" (openrouter.ai/docs errors)`},
	{Families: "other", Status: 409, Kind: KindServerError, Source: `HTTP 409 Conflict: a concurrent request on the same resource; the next attempt may pass`},

	// Too large for the server: only a smaller request fits.
	{Families: "groq", Status: 413, Kind: KindContextOverflow,
		Source: `HTTP 413 Content Too Large: Groq "The request body is too large. Please reduce the size of the request body." (console.groq.com/docs/errors); Cerebras' 413 without a body and proxies' body limits alike`},

	// The request itself is wrong: retrying the same one fails again.
	{Families: "openai groq vllm ollama anthropic lmstudio", Status: 400, StatusTo: 499, Kind: KindInvalidRequest,
		Source: `any other 4xx: OpenAI 400 invalid_request_error; vLLM 400 BadRequestError; Ollama 404 not_found_error "model \"llama3\" not found, try pulling it first"; Anthropic 400 invalid_request_error "max_tokens: 21333 > 4096, which is the maximum allowed number of output tokens for claude-3-opus-20240229" (anthropics/claude-code#11302)`},

	// Inside a stream, without a status: the provider failed mid-turn.
	{Families: "openrouter", Stream: true, Kind: KindServerError,
		Source: `OpenRouter: an error during generation arrives as a 200 stream chunk {"error":{"code":"server_error","message":"Provider disconnected unexpectedly"},"choices":[{"finish_reason":"error",…}]} (openrouter.ai/docs/api-reference/streaming); any other error event without a status`},
	{Families: "other", Kind: KindServerError, Source: `anything else: an error the server sent without a status we know`},
}

// Delay is how long f asks the caller to wait before retrying, 0 when it
// does not say: the headers retry-after-ms, retry-after (seconds or an HTTP
// date), then the x-ratelimit-reset-* of the limit the request exhausted
// (OpenAI, Groq: durations like "6m0s"; Anthropic: anthropic-ratelimit-*-reset
// timestamps), then a delay in the message ("Please try again in 2s",
// "Please retry after 6 seconds").
func Delay(f Failure, now time.Time) time.Duration {
	if d := RetryAfter(f.Header, now); d > 0 {
		return d
	}
	if d := resetDelay(f.Header, now); d > 0 {
		return d
	}
	return messageDelay(f.Message)
}

// RetryAfter reads retry-after-ms, then retry-after (seconds or an HTTP date).
// It returns 0 when absent or unparseable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// resetDelay reads the rate-limit reset headers: the longest reset among the
// limits whose remaining count is 0, or among all of them when none says so
// (the request is then larger than what remains).
func resetDelay(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	var exhausted, any time.Duration
	for name, vals := range h {
		lower := strings.ToLower(name)
		var limit string
		var d time.Duration
		switch {
		case strings.HasPrefix(lower, "x-ratelimit-reset-"):
			limit = strings.TrimPrefix(lower, "x-ratelimit-reset-")
			d, _ = time.ParseDuration(vals[0])
		case strings.HasPrefix(lower, "anthropic-ratelimit-") && strings.HasSuffix(lower, "-reset"):
			limit = strings.TrimSuffix(strings.TrimPrefix(lower, "anthropic-ratelimit-"), "-reset")
			if t, err := time.Parse(time.RFC3339, vals[0]); err == nil {
				d = t.Sub(now)
			}
		default:
			continue
		}
		if d <= 0 {
			continue
		}
		any = max(any, d)
		remaining := "x-ratelimit-remaining-" + limit
		if strings.HasPrefix(lower, "anthropic-") {
			remaining = "anthropic-ratelimit-" + limit + "-remaining"
		}
		if h.Get(remaining) == "0" {
			exhausted = max(exhausted, d)
		}
	}
	if exhausted > 0 {
		return exhausted
	}
	return any
}

// delayInMessage finds "try again in 1m2.5s" (OpenAI, Groq) or "retry after
// 6 seconds" (Azure) in a message.
var delayInMessage = regexp.MustCompile(`(?i)(?:try again in|retry after) ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)|retry after (\d+(?:\.\d+)?) seconds?`)

func messageDelay(msg string) time.Duration {
	m := delayInMessage.FindStringSubmatch(msg)
	switch {
	case m == nil:
		return 0
	case m[1] != "":
		d, _ := time.ParseDuration(m[1])
		return max(d, 0)
	}
	s, _ := strconv.ParseFloat(m[2], 64)
	return time.Duration(s * float64(time.Second))
}
