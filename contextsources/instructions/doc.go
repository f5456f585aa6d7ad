// Package instructions is the first slice of the instruction service: the ambient
// AGENTS.md files of a Location observed as one ordered aggregate Context Source
// ("instructions/agents").
//
// Order: the global file first, then the AGENTS.md files found walking up from the
// Location's directory to its project root, nearest first. The global file is the first
// AGENTS.md of sessionrt's config folder ($XDG_CONFIG_HOME/sessionrt, else
// ~/.config/sessionrt: a deliberate override) and OpenCode's ($XDG_CONFIG_HOME/opencode,
// else ~/.config/opencode: an OpenCode user's existing file applies unchanged); only one
// is read, as OpenCode reads one. Project discovery is off
// when OPENCODE_DISABLE_PROJECT_CONFIG or SESSIONRT_DISABLE_PROJECT_CONFIG is set (global
// stays). Paths are canonicalized; the walk never leaves the project root and a symlinked
// AGENTS.md whose target lies outside the root is ignored. A file that exists but cannot
// be read makes the whole source Unavailable (the model keeps the last admitted set)
// rather than silently empty; no file at all is a successful absence (revocation text).
//
// It must not cache between boundaries, watch files, or know about epochs and actors.
package instructions
