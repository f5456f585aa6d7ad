package provider

import (
	"context"
	"errors"
	"fmt"
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
	// KindRetryable: the connection or the stream failed (network error, a
	// stream cut before its finish, a silent connection); the same request
	// may succeed later.
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
	// KindQuotaExhausted: the account's credit or quota is used up (HTTP 402,
	// insufficient_quota, a credit balance too low); waiting will not cure it.
	KindQuotaExhausted
	// KindOverloaded: the server is busy or still loading (Anthropic's 529,
	// a 503); the same request may succeed after a pause.
	KindOverloaded
	// KindServerError: the provider failed while handling the request (HTTP
	// 5xx, an error event inside a stream); the same request may succeed.
	KindServerError
)

// lastKind is the highest Kind (ParseKind's range).
const lastKind = KindServerError

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
	case KindQuotaExhausted:
		return "quota_exhausted"
	case KindOverloaded:
		return "overloaded"
	case KindServerError:
		return "server_error"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind is the inverse of Kind.String (used by scripts and configs).
func ParseKind(s string) (Kind, bool) {
	for k := KindContextOverflow; k <= lastKind; k++ {
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
	ErrQuotaExhausted  = errors.New("quota exhausted")
	ErrOverloaded      = errors.New("provider overloaded")
	ErrServerError     = errors.New("provider server error")
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
	case KindQuotaExhausted:
		return ErrQuotaExhausted
	case KindOverloaded:
		return ErrOverloaded
	case KindServerError:
		return ErrServerError
	}
	return nil
}

// Error is the terminal error of a provider turn.
type Error struct {
	Kind Kind
	// Provider is the adapter kind ("openai", "anthropic", "scripted").
	Provider string
	// Status is the HTTP status (for an error inside a stream, the status its
	// body names, as llama.cpp and OpenRouter do), 0 when none.
	Status int
	// Type and Code are the provider's error type and code, as it sent them
	// (e.g. "invalid_request_error", "context_length_exceeded").
	Type string
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
	switch {
	case e.Type != "" && e.Code != "" && e.Type != e.Code:
		fmt.Fprintf(&b, " [%s/%s]", e.Type, e.Code)
	case e.Code != "":
		fmt.Fprintf(&b, " [%s]", e.Code)
	case e.Type != "":
		fmt.Fprintf(&b, " [%s]", e.Type)
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
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindRateLimited, KindRetryable, KindOverloaded, KindServerError:
		return true
	}
	return false
}

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
