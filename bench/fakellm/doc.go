// Package fakellm is a fake OpenAI-compatible Chat Completions server for
// benchmarks: it streams (SSE) a `bash` tool call `echo hi` in answer to a
// prompt and, once the request carries that tool's result, a final text.
// Requests that offer no tools (title generation, summaries) get a short
// text. Options slow the stream (a delay before every chunk) and the tool
// (the command sleeps first).
//
// The final text repeats the first "[run:…]" marker of the latest user
// message, so a driver can tell which prompt a reply answers.
//
// Reply holds the decision (pure); Server does the HTTP. It must not know
// which system under test calls it.
package fakellm
