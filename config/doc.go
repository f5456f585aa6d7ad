// Package config reads OpenCode's configuration files (opencode.json and
// opencode.jsonc: JSON with comments and trailing commas) for a Location and
// turns them into what the runtime acts on: agents with their permission
// rules, commands, providers and models.
//
// Files are read in this order, a later one overriding an earlier one
// (objects merge key by key, anything else is replaced):
//
//  1. the global folder: $XDG_CONFIG_HOME/opencode or ~/.config/opencode
//     (config.json, opencode.json, opencode.jsonc);
//  2. the project, walking down from its root (the nearest folder holding
//     .git, else the Location) to the Location: opencode.json[c] at each
//     level, then .opencode/opencode.json[c] at each level
//     (OPENCODE_DISABLE_PROJECT_CONFIG turns this step off);
//  3. the file named by OPENCODE_CONFIG;
//  4. the file given to `sessionrt serve --config`.
//
// Before parsing, {env:VAR} is replaced by the variable's value and
// {file:path} by the file's content, as OpenCode does. Every value keeps
// where it was written (Value.Pos), so a malformed file or a wrong value is
// a *FileError naming file, line and column, and `sessionrt config show`
// prints each value's source.
//
// A Loader caches each Location's result and reads the files again only
// when one changed, so the runtime can ask at every safe provider-turn
// boundary: a change takes effect at the next boundary, never mid-turn, and
// an error concerns that Location only.
//
// The package decides nothing about sessions: it reads files and resolves
// configuration (Agents, Commands); the composition root (node) hands the
// results to the Session runtime, the tools and the API.
package config
