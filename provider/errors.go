package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind classifies a provider error by what the caller should do about it.
type Kind uint8

const (
	// KindUnknown is never produced by the adapters of this module.
	KindUnknown Kind = iota
	// KindContextOverflow: the request exceeds the model's context window;
	// compact and try again.
	KindContextOverflow
	// KindRateLimited: HTTP 429 or a rate-limit error; retry after RetryAfter.
	KindRateLimited
	// KindRetryable: transient failure (5xx, overloaded, network error, a
	// stream cut before its finish); the same request may succeed later.
	KindRetryable
	// KindContentFilter: the provider refused the request or output on
	// content-policy grounds.
	KindContentFilter
	// KindInvalidRequest: the request is wrong (HTTP 400/404/422, bad input);
	// retrying the same request will fail again.
	KindInvalidRequest
	// KindAuth: missing, wrong or unauthorized credentials (HTTP 401/403).
	KindAuth
	// KindInterrupted: the caller cancelled the context or closed the stream.
	KindInterrupted
	// KindMalformed: the provider sent bytes we cannot interpret (bad JSON,
	// unknown finish reason, tool arguments that are not JSON). Snippet
	// quotes the offending bytes.
	KindMalformed
)

func (k Kind) String() string {
	switch k {
	case KindUnknown:
		return "unknown"
	case KindContextOverflow:
		return "context_overflow"
	case KindRateLimited:
		return "rate_limited"
	case KindRetryable:
		return "retryable"
	case KindContentFilter:
		return "content_filter"
	case KindInvalidRequest:
		return "invalid_request"
	case KindAuth:
		return "auth"
	case KindInterrupted:
		return "interrupted"
	case KindMalformed:
		return "malformed"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind is the inverse of Kind.String (used by scripts and configs).
func ParseKind(s string) (Kind, bool) {
	for k := KindContextOverflow; k <= KindMalformed; k++ {
		if k.String() == s {
			return k, true
		}
	}
	return KindUnknown, false
}

// Sentinels for errors.Is: errors.Is(err, provider.ErrContextOverflow) is true
// for any *Error of that kind.
var (
	ErrContextOverflow = errors.New("context overflow")
	ErrRateLimited     = errors.New("rate limited")
	ErrRetryable       = errors.New("retryable provider error")
	ErrContentFilter   = errors.New("content filtered")
	ErrInvalidRequest  = errors.New("invalid request")
	ErrAuth            = errors.New("authentication failed")
	ErrInterrupted     = errors.New("interrupted")
	ErrMalformed       = errors.New("malformed provider stream")
)

func (k Kind) sentinel() error {
	switch k {
	case KindContextOverflow:
		return ErrContextOverflow
	case KindRateLimited:
		return ErrRateLimited
	case KindRetryable:
		return ErrRetryable
	case KindContentFilter:
		return ErrContentFilter
	case KindInvalidRequest:
		return ErrInvalidRequest
	case KindAuth:
		return ErrAuth
	case KindInterrupted:
		return ErrInterrupted
	case KindMalformed:
		return ErrMalformed
	}
	return nil
}

// Error is the terminal error of a provider turn.
type Error struct {
	Kind Kind
	// Provider is the adapter kind ("openai", "anthropic", "scripted").
	Provider string
	// Status is the HTTP status, 0 when none.
	Status int
	// Code is the provider's error type/code (e.g. "context_length_exceeded").
	Code string
	// Message is the provider's (or our) human-readable message.
	Message string
	// RetryAfter is the provider's requested delay, 0 when not given.
	RetryAfter time.Duration
	// Snippet quotes the offending bytes (bounded, see Quote).
	Snippet string
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.String())
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " [%s]", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	if e.Snippet != "" {
		b.WriteString(": ")
		b.WriteString(e.Snippet)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches the Kind's sentinel.
func (e *Error) Is(target error) bool { return target != nil && target == e.Kind.sentinel() }

// Retryable says whether the same request may succeed later.
func (e *Error) Retryable() bool { return e.Kind == KindRateLimited || e.Kind == KindRetryable }

// KindOf returns the Kind of err (KindUnknown when err is not an *Error).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}

// MaxSnippet bounds the bytes quoted in Error.Snippet.
const MaxSnippet = 256

// Quote quotes b for an error message, keeping at most MaxSnippet bytes
// (head and tail) so a huge bad chunk cannot blow up a log line.
func Quote(b []byte) string {
	if len(b) <= MaxSnippet {
		return strconv.Quote(string(b))
	}
	head := b[:MaxSnippet/2]
	tail := b[len(b)-MaxSnippet/2:]
	// Do not cut a UTF-8 sequence in half; Quote would still be valid, but
	// the message is easier to read.
	for len(head) > 0 && !utf8.Valid(head) {
		head = head[:len(head)-1]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return strconv.Quote(string(head)) + fmt.Sprintf("…(%d bytes)…", len(b)-len(head)-len(tail)) + strconv.Quote(string(tail))
}

// Malformed builds a KindMalformed error quoting the offending bytes.
func Malformed(provider, what string, b []byte, cause error) *Error {
	return &Error{Kind: KindMalformed, Provider: provider, Message: what, Snippet: Quote(b), Err: cause}
}

// overflowPatterns (compiled once, never modified; a *regexp.Regexp is safe
// for concurrent use) are context-overflow messages of known providers and
// OpenAI-compatible servers; a 400 whose message matches one is
// KindContextOverflow whatever its code says.
var overflowPatterns = regexp.MustCompile(`(?i)` + strings.Join([]string{
	`prompt is too long`,                     // Anthropic
	`exceeds the context window`,             // OpenAI
	`maximum context length is \d+`,          // OpenAI, vLLM, DeepSeek, OpenRouter
	`context[_ ]length[_ ]exceeded`,          // OpenAI code, generic
	`exceeds the available context size`,     // llama.cpp server
	`greater than the context length`,        // LM Studio
	`input is too long for requested model`,  // Bedrock
	`input token count.*exceeds the maximum`, // Gemini
	`maximum prompt length is \d+`,           // xAI
	`reduce the length of the messages`,      // Groq
	`context window exceeds limit`,           // MiniMax
	`exceeded model token limit`,             // Kimi
	`exceeds? (the )?(model'?s? )?context`,   // Ollama and others
	`request exceeds the maximum context`,    // generic
	`prompt too long`,                        // generic
	`exceed_context_size_error`,              // llama.cpp error type
	`model_context_window_exceeded`,          // Anthropic stop reason text
}, "|"))

// IsOverflowMessage reports whether a provider error message says the
// context window was exceeded.
func IsOverflowMessage(s string) bool { return overflowPatterns.MatchString(s) }

// ClassifyHTTP classifies an HTTP error response by status, provider error
// code and message, and the Retry-After headers.
func ClassifyHTTP(provider string, status int, code, message string, h http.Header, now time.Time) *Error {
	e := &Error{Provider: provider, Status: status, Code: code, Message: message, RetryAfter: RetryAfter(h, now)}
	lc := strings.ToLower(code)
	switch {
	case status != http.StatusTooManyRequests && (IsOverflowMessage(message) || IsOverflowMessage(code)),
		status == http.StatusRequestEntityTooLarge:
		e.Kind = KindContextOverflow
	case strings.Contains(lc, "content_filter") || strings.Contains(lc, "content_policy"):
		e.Kind = KindContentFilter
	case lc == "insufficient_quota" || lc == "billing_error":
		// A 429 that waiting will not cure.
		e.Kind = KindInvalidRequest
	case status == http.StatusTooManyRequests || lc == "rate_limit_error" || lc == "rate_limit_exceeded":
		e.Kind = KindRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		lc == "authentication_error" || lc == "permission_error" || lc == "invalid_api_key":
		e.Kind = KindAuth
	case status >= 500 || status == http.StatusRequestTimeout || status == http.StatusConflict ||
		lc == "overloaded_error" || lc == "api_error" || lc == "server_error":
		e.Kind = KindRetryable
	case status >= 400:
		e.Kind = KindInvalidRequest
	default:
		// An error event inside a 200 stream with no recognised code: the
		// provider failed mid-turn; the same request may well succeed.
		e.Kind = KindRetryable
	}
	return e
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

// TransportError classifies an error from sending a request or reading its
// body: KindInterrupted when ctx is done, KindRetryable otherwise (network
// failure, connection cut).
func TransportError(ctx context.Context, provider, what string, err error) *Error {
	if ctx.Err() != nil {
		return &Error{Kind: KindInterrupted, Provider: provider, Message: what, Err: context.Cause(ctx)}
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Kind: KindRetryable, Provider: provider, Message: what, Err: err}
}
