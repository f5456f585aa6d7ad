// Package openai is the provider adapter for the OpenAI Chat Completions wire
// format with SSE streaming, as spoken by OpenAI and by OpenAI-compatible
// servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, …).
//
// It owns the wire encoding of a provider.Request and the decoding of
// chat.completion.chunk events into provider parts, with what the compatible
// servers vary: delta.content as a string or typed parts, reasoning in
// reasoning_content or reasoning, usage on its own chunk or on every chunk,
// error bodies of every shape (parseErrorBody) and errors inside the stream
// (an error chunk, an "error" event, llama.cpp's "error:" line), which
// provider.Classify classifies. It must not decide anything about sessions
// (retries live in provider.Retry, catalog lookups in provider/catalog).
package openai
