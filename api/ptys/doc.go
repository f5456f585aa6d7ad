// Package ptys keeps the server's terminals: it starts PTY actors
// (package toolactors/pty) under the Location supervisor of their
// directory, remembers what each one runs, and keeps a bounded scrollback
// of its output that readers follow by byte offset.
//
// Output never waits for a reader. The PTY actor's output lands in a ring
// of Config.Scrollback bytes; each reader pulls from the ring at its own
// offset. A reader that falls more than the ring behind has lost output:
// its next read fails with ErrCut (and says from which offset it can go
// on), so a slow HTTP client is cut, never the terminal blocked.
//
// A terminal ends when its program exits, when it is removed (Remove stops
// its actor, which kills every process of the terminal's session and reaps
// the shell before Remove returns), or when the hub closes (Close, at
// server shutdown). Exited terminals stay listed with their exit status
// until removed, up to Config.KeepExited of them; at most
// Config.MaxRunning run at once.
//
// The package holds terminal bookkeeping only; the process, its
// environment and its killing are the PTY actor's.
package ptys
