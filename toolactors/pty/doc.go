// Package pty owns PTY actors: one actor per terminal, running a shell in a real
// pseudo-terminal (github.com/creack/pty). It streams output to subscribers, takes
// input and resizes, and on stop kills the terminal's processes and closes the
// descriptor.
//
// The PTY Environment is a server concern: Environment merges the server's
// environment, then the caller's values, then the host overlay (EnvOverlay, observed for
// the request Location and the resolved working directory; a standalone server passes
// none), then the forced terminal invariants TERM, OPENCODE_TERMINAL (the spec's name) and
// SESSIONRT_TERMINAL. Environment is pure; the actor does the I/O.
//
// The shell is a session leader (setsid) with Pdeathsig SIGKILL from a locked OS
// thread; stopping the actor kills every process of the terminal's session, including
// job-control process groups an interactive shell creates.
//
// Inputs and resizes reach the terminal in order through a writer goroutine,
// so the actor never waits on a program that stopped reading: up to 1 MiB of
// input waits for it, more is dropped with a warning. The descriptor is
// non-blocking under Go's poller, so closing it ends a waiting read or write.
package pty
