// Package scripted is a provider that replays scripted turns instead of
// calling a model, and records every request it receives. It serves tests,
// benchmarks, chaos runs, and the offline demo of `sessionrt serve` when no
// real provider is configured.
//
// A script is either JSON (see Script and Turn) or a Go function deciding each
// turn from the request (Config.Func), so tests can react to what the Session
// sent. The stream it returns behaves like a real adapter's: deltas split in
// chunks, optional delays that honour cancellation, classified errors before
// or mid-stream, and a turn that "hangs" until interrupted.
//
// It must not import the real adapters and does no network I/O.
package scripted
