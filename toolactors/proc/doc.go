// Package proc runs one shell command so that neither it nor anything it starts can
// outlive its call: the bash tool's process runner.
//
// What it guarantees:
//   - The command runs as `<shell> -c <command>` (default /bin/sh), leader of a new
//     process group, under a watchdog process (package reaper: this binary
//     re-executed) that is a child subreaper, so every process the command orphans —
//     background jobs, `setsid`, double-forked daemons — stays its descendant. Stdin is
//     /dev/null. Stdout and stderr go to one pipe, captured with an in-memory safety cap
//     that keeps the head and the tail.
//   - Cancellation or timeout sends SIGTERM to the watchdog, which forwards it to the
//     command's group and to every descendant that left it; after the grace period
//     (default 3 s) everything is killed with SIGKILL.
//   - When the shell exits, whatever it left behind is killed: a tool call leaves no
//     process behind. Long-lived processes belong in a PTY.
//   - When the server dies, even by SIGKILL, the watchdog reads end of file on a pipe
//     whose only writer is the server and kills every descendant; the shell also has
//     Pdeathsig SIGKILL tied to the watchdog.
//
// The price is one short-lived Go process per call (measured in bench/tools).
// It knows nothing of tools, actors or bounding.
package proc
