// Package api is sessionrt's HTTP + SSE server: OpenCode's V2 session routes
// (`/api/session…`, `/api/event`, `/api/health`) with their request and
// response shapes, so OpenCode's SDK (`@opencode-ai/sdk/v2`) works against a
// sessionrt server unchanged, plus sessionrt's own routes in the same style.
//
// Start with New: it takes the runtime (actors.Sessions, the journal, the
// bus, the telemetry) in a Config and returns a *Server (an http.Handler).
// Commands go through actors.Sessions; reads go straight to the journal's
// projections; the per-session event stream replays and tails the journal
// (durable, resumable by seq), the global stream forwards the live bus
// (bounded buffers: a slow reader is told and cut, never waited for).
//
//	GET  /api/health                                  {"healthy":true}
//	GET  /api/session?limit&order&cursor&directory&search   sessions, newest first
//	POST /api/session                                 create {id?,agent?,model?,location?}
//	GET  /api/session/active                          sessions with a drain running
//	GET  /api/session/{id}                            one session
//	POST /api/session/{id}/prompt                     admit {id?,prompt,delivery?,resume?} → durable receipt
//	GET  /api/session/{id}/message?limit&order&cursor messages with cursors
//	GET  /api/session/{id}/message/{messageID}        one message
//	GET  /api/session/{id}/history?after&limit        durable events, paged
//	GET  /api/session/{id}/context                    model-visible history + Context Epoch
//	GET  /api/session/{id}/event?after                SSE: replay then tail; id = seq; Last-Event-ID honoured
//	POST /api/session/{id}/interrupt                  204
//	POST /api/session/{id}/wait                       200 {data: {error, kind, lastSeq}}: how the last drain ended
//	POST /api/session/{id}/agent|model                switch for the next turn, 204
//	GET  /api/session/{id}/permission[/{requestID}]   pending permission requests
//	POST /api/session/{id}/permission/{requestID}/reply   {reply: once|always|reject, message?}
//	GET  /api/session/{id}/question                   the session's pending question requests (question tool)
//	POST /api/session/{id}/question/{requestID}/reply|reject   204: answered (the model continues) | dismissed
//	POST /api/session/{id}/compact                    manual compaction: 204, 409 while running, 503 when it failed
//	POST /api/session/{id}/revert/stage               {messageID} → {data: {messageID, snapshot, diff, files}}: what a commit changes (409 while running)
//	POST /api/session/{id}/revert/commit|clear        204: files restored and messages hidden | a staged or committed revert undone
//	GET  /api/session/{id}/diff?messageID             sessionrt: {data: [FileDiff]} the files the session (or one prompt's turns) changed
//	GET  /api/location?location[directory]            the Location and its project (root, ID)
//	GET  /api/agent|model|provider[/{id}]|command|skill|reference?location[directory]
//	                                                  the Location's catalog from its opencode.json[c] (400 naming file:line:col when malformed)
//	GET  /api/fs/list?path | /api/fs/find?query&type&limit | /api/fs/read/{path}
//	                                                  files inside the Location (the read tool's path authority)
//	GET  /api/permission/request | /api/question/request?location[directory]   pending requests of the Location's sessions
//	GET  /api/permission/saved?projectID | DELETE /api/permission/saved/{id}    saved "always" approvals
//	GET  /api/integration                             [] (/api/integration/… log-ins and /api/credential/…: 501 naming what to configure)
//	GET  /api/event?sessionID                         SSE: live bus (session.status retry while a drain waits for the journal); last event server.cut when cut
//	POST /api/session/{id}/run                        sessionrt: explicit run → outcome
//	POST /api/session/{id}/move                       sessionrt: {location:{directory}}
//	GET  /api/session/{id}/trace?format=json|text     sessionrt: stored spans or their tree
//	GET  /metrics                                     Prometheus text or OpenMetrics with exemplars (when Telemetry is set)
//	GET|POST /api/pty, GET|PUT|DELETE /api/pty/{id}   sessionrt: terminals (OpenCode's pty routes; see pty.go)
//	POST /api/pty/{id}/input                          sessionrt: type {data} or {base64}
//	GET  /api/pty/{id}/output?after                   sessionrt: SSE output by byte offset, then pty.exited
//	GET  /api/pty/{id}/connect?after                  WebSocket: frames in are input, binary out is output; pings every Config.PTYPing, a client silent for two is closed (the terminal keeps running)
//
// Both V2 streams open every streamed block as OpenCode's wire does:
// session.next.text.started (and reasoning.started) with the textID that the
// deltas and the durable text.ended repeat, tool.input.started/ended before
// tool.called. These opening events are derived (no durable position, no SSE
// id), written just before the block's first delta or its durable end
// (blocks.go).
//
// OpenCode's V1 routes, for its own clients (`opencode attach URL`, the TUI,
// and `opencode run --attach URL`): a second projection of the same journal
// in the shapes of opencode serve 1.18.33 (v1*.go). Writes go through the
// same Sessions door as V2; part IDs sort in display order and are derived
// from the journal, so a list and the live events agree.
//
//	GET  /session?directory&search&limit | POST /session  V1 sessions (no child sessions)
//	GET  /session/{id} | /session/status | /session/{id}/children
//	GET  /session/{id}/message?limit&before | /message/{messageID}   messages with parts
//	POST /session/{id}/message                        synchronous prompt: the last assistant message
//	POST /session/{id}/prompt_async | /abort | /command   204 | true | 400 naming the configured commands
//	GET  /session/{id}/todo                           [] (no todo tool)
//	GET  /session/{id}/diff?messageID                 [SnapshotFileDiff] from the file snapshots
//	POST /session/{id}/revert {messageID} | /unrevert the session with its revert: stage + commit | clear
//	POST /session/{id}/fork {messageID?}             a new session holding the messages before messageID (all without), fresh IDs (actors.ForkOf)
//	GET  /permission | POST /permission/{requestID}/reply | POST /session/{id}/permissions/{requestID}
//	GET  /question | POST /question/{requestID}/reply|reject   pending questions of the directory | true
//	GET  /event?directory                             SSE: V1 bus (message.updated, message.part.updated/delta, session.status, …)
//	GET  /global/event                                SSE: the same, each wrapped {directory, payload}
//	GET  /path | /project/current | /config | /config/providers | /provider | /agent | /command   from Config.Catalog
//	GET  /lsp | /mcp | /formatter | /vcs | /experimental/… | /provider/auth   honest empty answers
//	PATCH|DELETE /session/{id}, …/share|shell   501 naming what sessionrt does not do
//
// Every route needs "Authorization: Bearer <Config.Token>", or HTTP Basic
// with the token as password (OpenCode's clients; any user name) (Insecure
// admits loopback clients without it). A request without the token must
// name the server in its Host (its address, a loopback address, localhost or
// one of Config.Hosts), against DNS rebinding; browser pages of other origins
// are refused unless Config.CORSOrigins names them (access.go). Bodies are limited (Config.MaxBodyBytes) and
// decoded strictly: unknown fields, malformed JSON, wrong types, trailing
// data, duplicate keys, keys that match a field only when case is ignored and
// bytes that are not UTF-8 get a 400 whose InvalidRequestError names the
// field (strict.go). Seq cursors (after, Last-Event-ID) run from 0 to 2^63−2. Runtime errors
// map by code: invalid 400, not found 404, conflict 409, backlog 429,
// fenced 503. Mount with http.Server.RegisterOnShutdown(server.Close) so
// Shutdown does not wait for open event streams; Close also kills the
// terminals (Config.Locations).
//
// The package owns HTTP concerns only: authentication, size limits, strict
// decoding, error mapping and the wire shapes (package wire, shared with the
// Go client in package client). It must not hold session state or decide
// anything the Session actor decides.
package api
