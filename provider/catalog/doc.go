// Package catalog is the model catalog — providers and their models with
// context window, output limit, tool and reasoning support, and per-model
// defaults kept in three separate domains (Generation Controls, Model Request
// Options, raw compatibility wire fields) — plus Open, which builds the
// provider set from the catalog and the environment.
//
// Built-in defaults cover OpenAI, Anthropic and the scripted demo; a JSON
// file adds providers (e.g. a local Ollama or vLLM server) and models or
// overrides built-in entries. The catalog holds no secrets: API keys come
// from environment variables named by the provider entry. The Registry logs
// every failed turn and retried attempt with its class and the provider's
// own message when given a logger.
//
// A provider stream has no idle timeout, as the spec's runner imposes none (a
// reasoning model may think silently for many minutes; an interrupt ends a
// stream). A provider entry's "idle_timeout" (a Go duration, e.g. "10m") opts
// in to ending a stream that sent no byte for that long with a retryable error.
//
// SmallModel is OpenCode's choice of a provider's small model, the one that
// names sessions when the configuration names none: a title request costs a
// small model's price, not that of the session's model.
package catalog
