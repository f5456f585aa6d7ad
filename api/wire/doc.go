// Package wire holds the JSON shapes of the HTTP API: OpenCode's V2 session
// schemas (camelCase, `data` envelopes, `_tag`ged errors) and sessionrt's
// extensions in the same style. The server (package api) encodes them and
// the Go client (package client) decodes them; nothing here does I/O or
// imports the runtime.
package wire
