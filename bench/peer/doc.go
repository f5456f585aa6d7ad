// Package peer holds the incumbent systems `sessionrt bench` compares
// against, as driver.Targets. OpenCode installs opencode-ai from npm into a
// cache folder on first use and runs `opencode serve` with an isolated HOME
// whose ~/.config/opencode/opencode.json names the fake model server as a
// custom @ai-sdk/openai-compatible provider, allows every tool, and turns
// autoupdate, sharing and the model-catalog fetch off.
//
// Known limit (OpenCode 1.18.33): its V2 session runner resolves a
// session's model from the V2 catalog's "available" models, and a custom
// provider from opencode.json is not listed there (a session created with
// model bench/bench fails "Model unavailable: bench/bench"). Without a
// model it takes the first keyless OpenAI-compatible model of its bundled
// catalog (api.minimax.io, seen with strace) and fails "HTTP transport
// failed" offline; it never calls the fake server. enabled_providers does
// not change that. The driver reports such a drain as "the session stopped
// running" instead of waiting forever.
//
// It must not measure anything itself; package driver does.
package peer
