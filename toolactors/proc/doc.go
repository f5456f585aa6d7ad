// Package proc runs one shell command so that neither it nor anything it starts can
// outlive its call: the bash tool's process runner.
//
// What it guarantees:
//   - The command runs as `<shell> -c <command>` (default /bin/sh), leader of a new
//     process group, started by the server's tool watchdog (package reaper: this
//     binary re-executed once per server process), a child subreaper, so every
//     process the command orphans — background jobs, `setsid`, double-forked daemons
//     — stays its descendant. Stdin is /dev/null. Stdout and stderr go to one pipe,
//     captured with an in-memory safety cap that keeps the head and the tail.
//   - Cancellation or timeout asks the watchdog to send SIGTERM to the command's group
//     and to every process of the call that left it; after the grace period (default
//     3 s) everything of the call is killed with SIGKILL.
//   - When the shell exits, whatever it left behind is killed before Run returns: a
//     tool call leaves no process behind. Long-lived processes belong in a PTY. (The
//     one exception, an escapee that also cleared its environment while other calls
//     ran, dies when those calls have ended: see package reaper.)
//   - When the server dies, even by SIGKILL, the watchdog reads end of file on a
//     socket whose only other end is the server's and kills every descendant; the
//     shells also have Pdeathsig SIGKILL tied to the watchdog.
//
// Why one watchdog per server and not one per call (3d31285) or a PID namespace per
// call: the per-call watchdog re-executed the ~100 MB binary for every call, 3.3 ms
// of CPU per call that halved the server's throughput. A new PID namespace per call
// (CLONE_NEWPID, with Pdeathsig, the shell as its init) costs nothing as root and
// kills everything when the shell exits, but the command then lives in another PID
// world: `$!` and `$$` are namespace PIDs while /proc (and so ps, pgrep) shows the
// host's, and it cannot signal anything outside its namespace — `kill` of a dev
// server started in a PTY fails with ESRCH. The shared watchdog keeps the host's PIDs
// and costs a message over a socket and a scan of its own children per call;
// BenchmarkEchoCall measures it (bench/tools).
//
// If the watchdog dies, the calls it was running end as killed (their shells die by
// Pdeathsig) and the next call starts a new one.
//
// It knows nothing of tools, actors or bounding.
package proc
