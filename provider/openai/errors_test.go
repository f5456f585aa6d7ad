package openai

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
)

// wireError is a failure exactly as a server family sends it: an HTTP error
// response, or a 200 event stream that reports it. The bodies are the ones
// reported in the sources of provider.Rules.
type wireError struct {
	name   string
	status int               // 200: body is an event stream
	hdr    map[string]string // response headers
	body   string
	kind   provider.Kind
	msg    string // the provider's own message, as Error.Message must carry it
	delay  time.Duration
}

var wireErrors = []wireError{
	{name: "openai overflow", status: 400,
		body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 129870 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		kind: provider.KindContextOverflow, msg: "This model's maximum context length is 128000 tokens. However, your messages resulted in 129870 tokens. Please reduce the length of the messages."},
	{name: "openai rate limit with reset headers", status: 429,
		hdr:  map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1.5s", "x-ratelimit-reset-requests": "6m0s"},
		body: `{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
		kind: provider.KindRateLimited, delay: 1500 * time.Millisecond},
	{name: "openai quota", status: 429,
		body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		kind: provider.KindQuotaExhausted},
	{name: "openai overloaded", status: 503,
		body: `{"error":{"message":"That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists.","type":"server_error","param":null,"code":null}}`,
		kind: provider.KindOverloaded},
	{name: "azure rate limit", status: 429, hdr: map[string]string{"retry-after-ms": "5250", "retry-after": "6"},
		body: `{"error":{"code":"429","message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-08-01-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`,
		kind: provider.KindRateLimited, delay: 5250 * time.Millisecond},
	{name: "azure auth", status: 401,
		body: `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`,
		kind: provider.KindAuth},
	{name: "openrouter overflow", status: 400,
		body: `{"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (139000 of text input, 1000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}`,
		kind: provider.KindContextOverflow},
	{name: "openrouter credits", status: 402,
		body: `{"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits","code":402,"metadata":{"limit_source":"openrouter_credits"}}}`,
		kind: provider.KindQuotaExhausted, msg: "Insufficient credits. Add more using https://openrouter.ai/settings/credits"},
	{name: "openrouter error during generation", status: 200,
		body: "data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"model\":\"openai/gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n" +
			": OPENROUTER PROCESSING\n\n" +
			"data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"created\":1234567890,\"model\":\"openai/gpt-4o\",\"provider\":\"openai\",\"error\":{\"code\":\"server_error\",\"message\":\"Provider disconnected unexpectedly\"},\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"error\"}]}\n\n",
		kind: provider.KindServerError, msg: "Provider disconnected unexpectedly"},
	{name: "groq request over the per-minute budget", status: 413,
		body: `{"error":{"message":"Request too large for model ` + "`llama-3.3-70b-versatile`" + ` in organization ` + "`org_01`" + ` service tier ` + "`on_demand`" + ` on tokens per minute (TPM): Limit 12000, Requested 14137, please reduce your message size and try again.","type":"tokens","code":"rate_limit_exceeded"}}`,
		kind: provider.KindContextOverflow},
	{name: "groq rate limit", status: 429, hdr: map[string]string{"retry-after": "4"},
		body: `{"error":{"message":"Rate limit reached for model ` + "`llama-3.1-8b-instant`" + ` in organization ` + "`org_01`" + ` service tier ` + "`on_demand`" + ` on tokens per minute (TPM): Limit 6000, Used 5034, Requested 1443. Please try again in 4.77s.","type":"tokens","code":"rate_limit_exceeded"}}`,
		kind: provider.KindRateLimited, delay: 4 * time.Second},
	{name: "vllm overflow, flat error before 0.10", status: 400,
		body: `{"object":"error","message":"The decoder prompt (length 12324) is longer than the maximum model length of 8192. Make sure that ` + "`max_model_len`" + ` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}`,
		kind: provider.KindContextOverflow},
	{name: "vllm overflow inside the stream", status: 200,
		body: "data: {\"error\": {\"object\": \"error\", \"message\": \"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens in the messages, Please reduce the length of the messages.\", \"type\": \"BadRequestError\", \"param\": null, \"code\": 400}}\n\ndata: [DONE]\n\n",
		kind: provider.KindContextOverflow},
	{name: "vllm unauthorized", status: 401, body: `{"error": "Unauthorized"}`, kind: provider.KindAuth, msg: "Unauthorized"},
	{name: "llama.cpp overflow since b6380", status: 400,
		body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}`,
		kind: provider.KindContextOverflow, msg: "the request exceeds the available context size, try increasing it"},
	{name: "llama.cpp KV cache full, a 500", status: 500,
		body: `{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}`,
		kind: provider.KindContextOverflow, msg: "Context size has been exceeded."},
	{name: "llama.cpp 2025 builds: an error: field line, then [DONE]", status: 200,
		body: "error: {\"code\":400,\"message\":\"the request exceeds the available context size. try increasing the context size or enable context shift\",\"type\":\"invalid_request_error\"}\n\ndata: [DONE]\n\n",
		kind: provider.KindContextOverflow, msg: "the request exceeds the available context size. try increasing the context size or enable context shift"},
	{name: "llama.cpp error chunk", status: 200,
		body: "data: {\"error\":{\"code\":500,\"message\":\"Context size has been exceeded.\",\"type\":\"server_error\"}}\n\n",
		kind: provider.KindContextOverflow},
	{name: "llama.cpp loading", status: 503,
		body: `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`, kind: provider.KindOverloaded},
	{name: "lm studio overflow, 0.3", status: 400,
		body: `{"error":"Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}`,
		kind: provider.KindContextOverflow},
	{name: "lm studio overflow event, 0.4.21", status: 200,
		body: "\n\nevent: error\ndata: {\"error\":{\"message\":\"Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens.\"},\"message\":\"Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens.\"}\n\n",
		kind: provider.KindContextOverflow, msg: "Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens."},
	{name: "ollama overflow", status: 400,
		body: `{"error":{"message":"the input length exceeds the context length","type":"invalid_request_error","param":null,"code":null}}`,
		kind: provider.KindContextOverflow},
	{name: "ollama busy", status: 503,
		body: `{"error":{"message":"server busy, please try again.  maximum pending requests exceeded","type":"api_error","param":null,"code":null}}`,
		kind: provider.KindOverloaded},
	// Ollama's OpenAI layer turns a failure after the first chunk into an
	// empty chunk and ends the body (middleware/openai.go writeResponse): all
	// that can be known is that the stream was cut.
	{name: "ollama failure after the first chunk", status: 200,
		body: "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"qwen3\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
		kind: provider.KindRetryable},
}

// Every family's error bodies, as HTTP errors and inside streams, reach the
// class of the row citing them, with the provider's own message.
func TestServerErrorsOfEveryFamilyAreClassifiedFromTheWire(t *testing.T) {
	for _, c := range wireErrors {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range c.hdr {
					w.Header().Set(k, v)
				}
				if c.status == 200 {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			})
			_, err := collect(t, newAdapter(t, srv.URL), basicRequest())
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v", err)
			}
			if pe.Kind != c.kind || pe.RetryAfter != c.delay {
				t.Fatalf("%s, retry after %s; want %s, %s (%v)", pe.Kind, pe.RetryAfter, c.kind, c.delay, err)
			}
			if c.msg != "" && pe.Message != c.msg {
				t.Fatalf("message %q, want %q", pe.Message, c.msg)
			}
			if c.status != 200 && pe.Status != c.status {
				t.Fatalf("status %d, want %d", pe.Status, c.status)
			}
		})
	}
}
