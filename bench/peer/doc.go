// Package peer holds the incumbent systems `sessionrt bench` compares
// against, as driver.Targets. OpenCode installs opencode-ai from npm into a
// cache folder on first use and runs `opencode serve` with an isolated HOME
// whose ~/.config/opencode/opencode.json names the fake model server as a
// custom @ai-sdk/openai-compatible provider, allows every tool, and turns
// autoupdate, sharing and the model-catalog fetch off.
//
// How OpenCode 1.18.33's V2 runner is made to call the fake model (read
// from its bundled code and checked against the fake server's request
// log): the models.dev catalog is replaced by an empty file
// (OPENCODE_MODELS_PATH), so the configured provider is the only one and
// its model the default; without that the bundled catalog snapshot wins
// and a session goes to its first keyless model (api.minimax.io,
// unreachable here). The provider has no "env" list, which would make an
// integration without a connection and mark the provider unavailable.
// Sessions name the model in POST /api/session anyway, and the driver waits
// until GET /api/model lists it: OpenCode answers /api/health a second or
// two before its catalog holds config providers, and a turn run in that
// window fails "Model unavailable: bench/bench" (the failure a previous
// attempt took for a config problem).
//
// It must not measure anything itself; package driver does.
package peer
