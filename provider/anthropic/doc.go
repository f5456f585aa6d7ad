// Package anthropic is the provider adapter for the Anthropic Messages API
// with SSE streaming: text, tool use, thinking blocks (with their signatures,
// replayed on later turns) and prompt-cache control on the baseline prefix.
//
// It owns the wire encoding of a provider.Request and the decoding of the
// message_start … message_stop event stream into provider parts, including
// programmatic tool calling's shapes (a tool call's whole input at its
// block's start, a message_start already holding the turn); it must not
// decide anything about sessions (retries live in provider.Retry).
package anthropic
