// Package peer holds the incumbent systems `sessionrt bench` compares
// against, as driver.Targets. OpenCode installs opencode-ai from npm into a
// cache folder on first use and runs `opencode serve` with an isolated HOME
// whose ~/.config/opencode/opencode.json names the fake model server as a
// custom @ai-sdk/openai-compatible provider, allows every tool, and turns
// autoupdate, sharing and the model-catalog fetch off.
//
// It must not measure anything itself; package driver does.
package peer
