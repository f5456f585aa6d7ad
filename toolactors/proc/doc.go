// Package proc runs one shell command as a process group that cannot outlive its
// caller: the bash tool's process runner.
//
// What it guarantees:
//   - The command runs through a small /bin/sh wrapper that becomes the leader of a new
//     process group (Setpgid) and execs the configured shell with -c. Stdin is
//     /dev/null. Stdout and stderr go to one pipe, captured with an in-memory safety cap
//     that keeps the head and the tail.
//   - Cancellation or timeout sends SIGTERM to the whole group, then SIGKILL after the
//     grace period (default 3 s).
//   - When the leader exits, whatever is left of the group (background jobs) is killed:
//     a tool call leaves no process behind. Long-lived processes belong in a PTY.
//   - When the server dies, even by SIGKILL, the group dies too: the leader has
//     Pdeathsig SIGKILL (its creating OS thread is locked for the life of the child,
//     because Pdeathsig fires when that thread exits, not the process), and a watchdog
//     in the group blocks reading a pipe whose only writer is the server; at EOF it
//     kills the group with SIGKILL. Pdeathsig alone would miss grandchildren.
//
// It knows nothing of tools, actors or bounding.
package proc
