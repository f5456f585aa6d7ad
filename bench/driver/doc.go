// Package driver runs the workload of `sessionrt bench` against one system
// under test: it starts the system as a subprocess with a fresh data
// directory (a Target says how), waits for GET /api/health (and, for a
// target that names its sessions' model, for GET /api/model to list it),
// drives it through OpenCode's V2 session routes only (POST /api/session,
// POST /api/session/{id}/prompt, then the session's durable event stream
// GET /api/session/{id}/event until the reply naming the prompt's marker
// ends its step; one shared poll of GET /api/session/active fails a wait
// whose drain died), and measures start-up to first answer, single-session
// latency, throughput at several concurrency levels (a level may be cut
// short by a timeout, and is then rated over the turns that finished),
// server CPU per turn (the server's and its tool watchdog's) and RSS (both
// from /proc). Report renders results
// side by side as a table, JSON and a PNG chart.
//
// CrashMode kills a server with SIGKILL mid-stream or mid-tool, restarts
// it on the same data and records what it shows (prompt kept, how the
// interrupted turn and tool call end, orphan processes found by walking
// /proc from the killed pid); Judge words it, apart from the I/O.
//
// Every turn is one prompt answered by the fake model (package fakellm) in
// two model calls around one real bash `echo hi`. The driver must not use
// anything a V2 server other than sessionrt lacks.
package driver
