package provider

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// failureCase is a failure as a server of family sent it: the message is the
// one reported where the row's Source says.
type failureCase struct {
	family string
	f      Failure
	kind   Kind
	delay  time.Duration
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

var failures = []failureCase{
	// OpenAI
	{"openai", Failure{Status: 400, Type: "invalid_request_error", Code: "context_length_exceeded",
		Message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 11433 tokens. Please reduce the length of the messages."}, KindContextOverflow, 0},
	{"openai", Failure{Status: 429, Type: "tokens", Code: "rate_limit_exceeded",
		Message: "Request too large for gpt-4o in organization org-VDAWofJASuLH0vVz8o9tiQZr on tokens per min (TPM): Limit 30000, Requested 30601. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more."}, KindContextOverflow, 0},
	{"openai", Failure{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota",
		Message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."}, KindQuotaExhausted, 0},
	{"openai", Failure{Status: 429, Type: "tokens", Code: "rate_limit_exceeded",
		Message: "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s. Visit https://platform.openai.com/account/rate-limits to learn more.",
		Header:  hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "2s", "x-ratelimit-remaining-requests", "499", "x-ratelimit-reset-requests", "120ms")}, KindRateLimited, 2 * time.Second},
	{"openai", Failure{Status: 503, Type: "server_error",
		Message: "That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists. (Please include the request ID 169bee8d in your message.)"}, KindOverloaded, 0},
	{"openai", Failure{Status: 400, Code: "content_policy_violation", Type: "invalid_request_error",
		Message: "Your request was rejected as a result of our safety system."}, KindContentFilter, 0},
	{"openai", Failure{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key",
		Message: "Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys."}, KindAuth, 0},
	{"openai", Failure{Status: 500, Type: "server_error",
		Message: "The server had an error while processing your request. Sorry about that!"}, KindServerError, 0},
	{"openai", Failure{Status: 400, Type: "invalid_request_error",
		Message: "Invalid value: 'tool'. Supported values are: 'system', 'assistant', 'user', 'function'."}, KindInvalidRequest, 0},

	// Azure OpenAI
	{"azure", Failure{Status: 400, Type: "invalid_request_error", Code: "context_length_exceeded",
		Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 129870 tokens. Please reduce the length of the messages."}, KindContextOverflow, 0},
	{"azure", Failure{Status: 429, Code: "429",
		Message: "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-08-01-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}, KindRateLimited, 6 * time.Second},
	{"azure", Failure{Status: 429, Code: "429", Header: hdr("Retry-After-Ms", "5250", "Retry-After", "6"),
		Message: "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-05-01-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}, KindRateLimited, 5250 * time.Millisecond},
	{"azure", Failure{Status: 400, Code: "content_filter",
		Message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry."}, KindContentFilter, 0},
	{"azure", Failure{Status: 401, Code: "401",
		Message: "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}, KindAuth, 0},

	// OpenRouter
	{"openrouter", Failure{Status: 400,
		Message: "This endpoint's maximum context length is 1048576 tokens. However, you requested about 1293741 tokens (1227853 of text input, 353 of tool input, 65535 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically."}, KindContextOverflow, 0},
	{"openrouter", Failure{Status: 402, Message: "Insufficient credits. Add more using https://openrouter.ai/settings/credits"}, KindQuotaExhausted, 0},
	{"openrouter", Failure{Status: 402, Message: "This request requires more credits, or fewer max_tokens. You requested up to 4096 tokens, but can only afford 4000. To increase, visit https://openrouter.ai/settings/credits and upgrade to a paid account"}, KindQuotaExhausted, 0},
	{"openrouter", Failure{Status: 402, Header: hdr("Retry-After", "4"), Message: "In-flight spending budget exceeded."}, KindRateLimited, 4 * time.Second},
	{"openrouter", Failure{Status: 429, Header: hdr("Retry-After", "12"), Message: "Rate limit exceeded: free-models-per-day. "}, KindRateLimited, 12 * time.Second},
	{"openrouter", Failure{Status: 503, Message: "There is no available model provider that meets your routing requirements"}, KindOverloaded, 0},
	{"openrouter", Failure{Status: 403, Message: "openai/gpt-4o requires moderation on OpenAI. Your input was flagged for \"harassment\". No credits were charged."}, KindContentFilter, 0},
	{"openrouter", Failure{Status: 401, Message: "No auth credentials found"}, KindAuth, 0},
	{"openrouter", Failure{Status: 408, Message: "Your request timed out"}, KindServerError, 0},
	{"openrouter", Failure{Status: 502, Message: "Your chosen model is down or we received an invalid response from it"}, KindServerError, 0},
	{"openrouter", Failure{InStream: true, Code: "server_error", Message: "Provider disconnected unexpectedly"}, KindServerError, 0},

	// Groq
	{"groq", Failure{Status: 400, Type: "invalid_request_error", Code: "context_length_exceeded",
		Message: "Please reduce the length of the messages or completion."}, KindContextOverflow, 0},
	{"groq", Failure{Status: 413, Type: "tokens", Code: "rate_limit_exceeded",
		Message: "Request too large for model `llama-3.3-70b-versatile` in organization `org_01kgg5588eftc8k70aes4864eb` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 14137, please reduce your message size and try again. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing"}, KindContextOverflow, 0},
	{"groq", Failure{Status: 413, Message: "The request body is too large. Please reduce the size of the request body."}, KindContextOverflow, 0},
	{"groq", Failure{Status: 429, Type: "tokens", Code: "rate_limit_exceeded",
		Message: "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01kjh7p9n8f1qs6nz2bz77vy6b` service tier `on_demand` on tokens per day (TPD): Limit 100000, Used 97050, Requested 3619. Please try again in 9m38.016s. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing",
		Header:  hdr("Retry-After", "579")}, KindRateLimited, 579 * time.Second},
	{"groq", Failure{Status: 498, Code: "capacity_exceeded", Message: "Flex Tier Capacity Exceeded"}, KindOverloaded, 0},
	{"groq", Failure{Status: 503, Message: "Service Unavailable"}, KindOverloaded, 0},
	{"groq", Failure{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key", Message: "Invalid API Key"}, KindAuth, 0},

	// vLLM
	{"vllm", Failure{Status: 400, Type: "BadRequestError",
		Message: "This model's maximum context length is 65536 tokens. However, you requested 8192 output tokens and your prompt contains at least 57879 input tokens, for a total of at least 66071 tokens. Please reduce the length of the input prompt or the number of requested output tokens."}, KindContextOverflow, 0},
	{"vllm", Failure{Status: 400, Type: "BadRequestError",
		Message: "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is 65536 tokens and your request has 57879 input tokens (8192 > 65536 - 57879). None"}, KindContextOverflow, 0},
	{"vllm", Failure{Status: 400, Type: "BadRequestError",
		Message: "The decoder prompt (length 12324) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens."}, KindContextOverflow, 0},
	{"vllm", Failure{Status: 401, Message: "Unauthorized"}, KindAuth, 0},
	{"vllm", Failure{Status: 500, Type: "InternalServerError", Message: "EngineCore encountered an issue. See stack trace (above) for the root cause."}, KindServerError, 0},
	{"vllm", Failure{Status: 404, Type: "NotFoundError", Message: "The model `gpt-4` does not exist."}, KindInvalidRequest, 0},

	// llama.cpp
	{"llama.cpp", Failure{Status: 400, Type: "exceed_context_size_error",
		Message: "the request exceeds the available context size, try increasing it"}, KindContextOverflow, 0},
	{"llama.cpp", Failure{Status: 400, Type: "invalid_request_error", InStream: true,
		Message: "the request exceeds the available context size. try increasing the context size or enable context shift"}, KindContextOverflow, 0},
	{"llama.cpp", Failure{Status: 500, Type: "server_error", Message: "Context size has been exceeded."}, KindContextOverflow, 0},
	{"llama.cpp", Failure{Status: 500, Type: "server_error", InStream: true, Message: "decode() failed: Context size has been exceeded."}, KindContextOverflow, 0},
	{"llama.cpp", Failure{Status: 503, Type: "unavailable_error", Message: "Loading model"}, KindOverloaded, 0},
	{"llama.cpp", Failure{Status: 401, Type: "authentication_error", Message: "Invalid API Key"}, KindAuth, 0},
	{"llama.cpp", Failure{Status: 500, Type: "server_error", InStream: true, Message: "Compute error."}, KindServerError, 0},

	// LM Studio
	{"lmstudio", Failure{Status: 400,
		Message: "Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}, KindContextOverflow, 0},
	{"lmstudio", Failure{Status: 400, Message: "tokens to keep from the initial prompt is greater than the context length"}, KindContextOverflow, 0},
	{"lmstudio", Failure{InStream: true,
		Message: "Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens."}, KindContextOverflow, 0},
	{"lmstudio", Failure{InStream: true,
		Message: "Reached context length of 32000 tokens with model (arch: gpt-oss) that does not currently support mid-generation context overflow. Try reloading with a larger context length or shortening the prompt/chat."}, KindContextOverflow, 0},
	{"lmstudio", Failure{Status: 400, Message: "Model unloaded."}, KindInvalidRequest, 0},

	// Ollama
	{"ollama", Failure{Status: 400, Type: "invalid_request_error", Message: "the input length exceeds the context length"}, KindContextOverflow, 0},
	{"ollama", Failure{Status: 400, Type: "invalid_request_error", Message: "prompt too long; exceeded max context length by 100918 tokens"}, KindContextOverflow, 0},
	{"ollama", Failure{Status: 503, Type: "api_error", Message: "server busy, please try again.  maximum pending requests exceeded"}, KindOverloaded, 0},
	{"ollama", Failure{Status: 500, Type: "api_error", Message: "model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, check ollama server logs for details"}, KindServerError, 0},
	{"ollama", Failure{Status: 500, Type: "api_error", Message: "requested context size too large for model"}, KindServerError, 0},
	{"ollama", Failure{Status: 404, Type: "not_found_error", Message: `model "llama3" not found, try pulling it first`}, KindInvalidRequest, 0},

	// Anthropic
	{"anthropic", Failure{Status: 400, Type: "invalid_request_error", Message: "prompt is too long: 208310 tokens > 200000 maximum"}, KindContextOverflow, 0},
	{"anthropic", Failure{Status: 400, Type: "invalid_request_error",
		Message: "input length and `max_tokens` exceed context limit: 156321 + 48384 > 200000, decrease input length or `max_tokens` and try again"}, KindContextOverflow, 0},
	{"anthropic", Failure{Status: 413, Type: "request_too_large", Message: "Request exceeds the maximum allowed number of bytes."}, KindContextOverflow, 0},
	{"anthropic", Failure{Status: 400, Type: "invalid_request_error",
		Message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}, KindQuotaExhausted, 0},
	{"anthropic", Failure{Status: 402, Type: "billing_error", Message: "There is an issue with your account's billing."}, KindQuotaExhausted, 0},
	{"anthropic", Failure{Status: 429, Type: "rate_limit_error",
		Message: "Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.",
		Header:  hdr("anthropic-ratelimit-input-tokens-remaining", "0", "anthropic-ratelimit-input-tokens-reset", "2026-01-01T00:00:41Z", "anthropic-ratelimit-requests-remaining", "49", "anthropic-ratelimit-requests-reset", "2026-01-01T00:00:01Z")}, KindRateLimited, 41 * time.Second},
	{"anthropic", Failure{Status: 529, Type: "overloaded_error", Message: "Overloaded"}, KindOverloaded, 0},
	{"anthropic", Failure{InStream: true, Type: "overloaded_error", Message: "Overloaded"}, KindOverloaded, 0},
	{"anthropic", Failure{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"}, KindAuth, 0},
	{"anthropic", Failure{Status: 403, Type: "permission_error", Message: "Your API key does not have permission to use the specified resource."}, KindAuth, 0},
	{"anthropic", Failure{Status: 500, Type: "api_error", Message: "Internal server error"}, KindServerError, 0},
	{"anthropic", Failure{InStream: true, Type: "api_error", Message: "Internal server error"}, KindServerError, 0},
	{"anthropic", Failure{Status: 400, Type: "invalid_request_error",
		Message: "max_tokens: 21333 > 4096, which is the maximum allowed number of output tokens for claude-3-opus-20240229"}, KindInvalidRequest, 0},

	// Other servers behind gateways.
	{"other", Failure{Status: 400, Message: "Input is too long for requested model."}, KindContextOverflow, 0},
	{"other", Failure{Status: 400, Message: "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)"}, KindContextOverflow, 0},
	{"other", Failure{Status: 400, Message: "This model's maximum prompt length is 131072 but the request contains 537812 tokens"}, KindContextOverflow, 0},
	{"other", Failure{Status: 400, Message: "invalid params, context window exceeds limit"}, KindContextOverflow, 0},
	{"other", Failure{Status: 400, Message: "Invalid request: Your request exceeded model token limit: 262144 (requested: 291351)"}, KindContextOverflow, 0},
	{"other", Failure{Status: 400, Message: "Your input exceeds the context window of this model. Please adjust your input and try again."}, KindContextOverflow, 0},
	{"other", Failure{Status: 429, Message: "Throttling error: Too many tokens, please wait before trying again."}, KindRateLimited, 0},
	{"other", Failure{Status: 409, Message: "Conflict"}, KindServerError, 0},
	{"other", Failure{Status: 529, Message: "Overloaded"}, KindOverloaded, 0},
	{"other", Failure{Message: "something broke"}, KindServerError, 0},
}

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Every row is matched by the message of a server it names, and every
// message gets its class and delay.
func TestEveryRuleMatchesTheMessagesItCites(t *testing.T) {
	hit := make([]bool, len(Rules))
	for _, c := range failures {
		e := Classify("x", c.f, now)
		if e.Kind != c.kind || e.RetryAfter != c.delay {
			t.Errorf("%s %+v: %s, retry after %s; want %s, %s", c.family, c.f, e.Kind, e.RetryAfter, c.kind, c.delay)
		}
		i := match(&c.f, e.RetryAfter > 0)
		hit[i] = true
		if fam := Rules[i].Families; fam != "" && !slices.Contains(strings.Fields(fam), c.family) {
			t.Errorf("%s %q was classified by a row of %q (%s)", c.family, c.f.Message, fam, Rules[i].Source)
		}
	}
	for i, r := range Rules {
		if !hit[i] {
			t.Errorf("row %d (%s, %s) is tested by no message", i, r.Families, r.Source)
		}
		if r.Source == "" || r.Kind == KindUnknown {
			t.Errorf("row %d has no source or kind", i)
		}
	}
}

// Each family of the issue has its overflow, and the classes it documents.
func TestEveryFamilyHasItsOverflowTested(t *testing.T) {
	for _, fam := range []string{"openai", "azure", "openrouter", "groq", "vllm", "llama.cpp", "lmstudio", "ollama", "anthropic"} {
		overflow := false
		for _, c := range failures {
			overflow = overflow || (c.family == fam && c.kind == KindContextOverflow)
		}
		if !overflow {
			t.Errorf("%s: no overflow message", fam)
		}
	}
}

func TestDelayHeaders(t *testing.T) {
	cases := []struct {
		h    http.Header
		msg  string
		want time.Duration
	}{
		{hdr("Retry-After", now.Add(30*time.Second).Format(http.TimeFormat)), "", 30 * time.Second},
		{hdr("Retry-After", "1.5"), "", 1500 * time.Millisecond},
		{hdr("Retry-After-Ms", "250", "Retry-After", "1"), "", 250 * time.Millisecond},
		{hdr("Retry-After", "-1"), "", 0},
		// No limit says it is exhausted: the longest reset.
		{hdr("x-ratelimit-reset-requests", "2m59.56s", "x-ratelimit-reset-tokens", "7.66s"), "", 2*time.Minute + 59560*time.Millisecond},
		// The exhausted limit's reset.
		{hdr("x-ratelimit-reset-requests", "2m59.56s", "x-ratelimit-remaining-requests", "14", "x-ratelimit-reset-tokens", "7.66s", "x-ratelimit-remaining-tokens", "0"), "", 7660 * time.Millisecond},
		{hdr("x-ratelimit-reset-tokens", "bogus"), "Please try again in 20ms.", 20 * time.Millisecond},
		{nil, "Please try again in 1m12.5s.", 72500 * time.Millisecond},
		{nil, "Please retry after 86400 seconds.", 86400 * time.Second},
		{nil, "no delay here", 0},
	}
	for _, c := range cases {
		if got := Delay(Failure{Header: c.h, Message: c.msg}, now); got != c.want {
			t.Errorf("%v %q: %s, want %s", c.h, c.msg, got, c.want)
		}
	}
}

func TestOnlyWaitableKindsAreRetryable(t *testing.T) {
	for k := KindContextOverflow; k <= lastKind; k++ {
		want := k == KindRateLimited || k == KindRetryable || k == KindOverloaded || k == KindServerError
		if got := (&Error{Kind: k}).Retryable(); got != want {
			t.Errorf("%s: retryable %v", k, got)
		}
		if back, ok := ParseKind(k.String()); !ok || back != k {
			t.Errorf("%s does not parse back", k)
		}
	}
}
