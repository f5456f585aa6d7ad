// Package api is sessionrt's HTTP + SSE server: OpenCode's V2 session routes
// (`/api/session…`, `/api/event`, `/api/health`) with their request and
// response shapes, so OpenCode's SDK (`@opencode-ai/sdk/v2`) works against a
// sessionrt server unchanged, plus sessionrt's own routes in the same style
// (`run`, `move`, `trace`).
//
// Start with New: it takes the runtime (actors.Sessions, the journal, the
// telemetry) in a Config and returns an http.Handler. Commands go through
// actors.Sessions; reads go straight to the journal's projections; the
// per-session event stream replays and tails the journal (durable, resumable
// by seq), the global stream forwards the live bus (bounded buffers: a slow
// reader is told and cut, never waited for).
//
// The package owns HTTP concerns only: authentication, size limits, strict
// JSON decoding, error mapping and the wire shapes (package wire, shared
// with the Go client in package client). It must not hold session state or
// decide anything the Session actor decides.
package api
