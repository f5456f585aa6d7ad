// Package openai is the provider adapter for the OpenAI Chat Completions wire
// format with SSE streaming, as spoken by OpenAI and by OpenAI-compatible
// servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, …).
//
// It owns the wire encoding of a provider.Request and the decoding of
// chat.completion.chunk events into provider parts; it must not decide
// anything about sessions (retries live in provider.Retry, catalog lookups in
// provider/catalog).
package openai
