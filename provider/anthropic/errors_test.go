package anthropic

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
)

// The Messages API's failures as it sends them (the bodies cited by
// provider.Rules), as HTTP errors and as error events inside a stream.
func TestServerErrorsAreClassifiedFromTheWire(t *testing.T) {
	cases := []struct {
		name   string
		status int
		hdr    map[string]string
		body   string
		kind   provider.Kind
		delay  time.Duration
	}{
		{"credit balance", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CbrFTcXhtiMzr3s6EocF7"}`,
			provider.KindQuotaExhausted, 0},
		{"context limit with max_tokens", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 156321 + 48384 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"}}`,
			provider.KindContextOverflow, 0},
		{"output limit is not an overflow", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 21333 > 4096, which is the maximum allowed number of output tokens for claude-3-opus-20240229"}}`,
			provider.KindInvalidRequest, 0},
		{"rate limit without retry-after", 429, map[string]string{
			"anthropic-ratelimit-output-tokens-remaining": "0", "anthropic-ratelimit-output-tokens-reset": "2026-01-01T00:00:09Z",
			"anthropic-ratelimit-requests-remaining": "10", "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:59Z"},
			`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 8,000 output tokens per minute."}}`,
			provider.KindRateLimited, 9 * time.Second},
		{"overloaded event", 200, nil,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
				"event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
			provider.KindOverloaded, 0},
		{"api error event", 200, nil,
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}\n\n",
			provider.KindServerError, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range c.hdr {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				if c.status == 200 {
					w.Header().Set("Content-Type", "text/event-stream")
				}
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			})
			a := newAdapter(t, srv.URL)
			a.cfg.Now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
			_, err := collect(t, a, basicRequest())
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != c.kind || pe.RetryAfter != c.delay || pe.Message == "" || pe.Type == "" {
				t.Fatalf("err = %v (%+v), want %s after %s", err, pe, c.kind, c.delay)
			}
		})
	}
}
