// Package pty owns PTY actors: one actor per terminal, running a shell in a real
// pseudo-terminal (github.com/creack/pty). It streams output to subscribers, takes
// input and resizes, and on stop kills the terminal's processes and closes the
// descriptor.
//
// The PTY Environment is a server concern: Environment merges the server's
// environment, then the caller's values, then the host overlay (EnvOverlay, observed for
// the request Location and the resolved working directory; a standalone server passes
// none), then the forced terminal invariants TERM and SESSIONRT_TERMINAL. Environment is
// pure; the actor does the I/O.
//
// The shell is a session leader (setsid) with Pdeathsig SIGKILL from a locked OS
// thread; stopping the actor kills every process of the terminal's session, including
// job-control process groups an interactive shell creates.
package pty
