// Package reaper is the tool watchdog: one process per server that starts every bash
// call's shell, so that nothing a command starts can outlive its call — not background
// jobs, not `setsid`, not double-forked daemons — nor the server.
//
// The server (package proc) re-executes its own binary (/proc/self/exe) with argv[0]
// set to Name when its first call runs; this package's init sees that and runs the
// watchdog instead of the program. The watchdog (named srt-watchdog in ps):
//   - makes itself a child subreaper (PR_SET_CHILD_SUBREAPER): every process a command
//     orphans, whatever its session or process group, is re-parented to it instead of
//     to init, so it stays findable;
//   - receives each call over the server's SOCK_SEQPACKET socket (SocketFD): the call's
//     own connection and its output pipe, passed with SCM_RIGHTS; reads the request
//     (shell, command, directory, environment) from the connection; starts
//     `<shell> -c <command>` as the leader of a new process group with Pdeathsig
//     SIGKILL and answers "pid N";
//   - on Term (a polite stop) sends SIGTERM to the command's group and to every process
//     of the call that left it;
//   - when the shell exits, or the server shuts down the connection's write side or
//     closes it, kills every process of the call with SIGKILL, reaps them, and only
//     then answers "status W" (the shell's wait status);
//   - on end of file on SocketFD (the server is gone, even by SIGKILL) kills every
//     descendant, reaps until it has no child left, and exits.
//
// Attribution. A process still below its call's shell belongs to that call. One whose
// parent died is re-parented to the watchdog and loses that link; the watchdog looks at
// its direct children when a call ends (and while it kills), and gives each new one to
// a call:
//   - by the marker: every shell's environment carries MarkerVar=<call id>, inherited
//     by whatever it starts; /proc/PID/environ names the call (a process in the middle
//     of execve shows an empty environment for a moment, so an empty one is read again
//     by the next sweeps, and the calls it may belong to wait for the answer);
//   - otherwise (a process that cleared its environment) to the calls running since the
//     previous look, of which its own is one: when only one is left it is that call's,
//     and when they have all ended it is killed. Every call's end looks, so none that
//     ended can be missing from that set. Descendants of such a process are found by
//     walking the tree from it.
//
// It is one thread around one epoll set: the server's socket, each call's connection,
// a pidfd per shell and per re-parented process (kernels without pidfds: a pipe fed on
// SIGCHLD). That thread, locked, is the main thread: it forks every shell (so Pdeathsig
// is tied to a thread that lives as long as the watchdog) and, as the thread group
// leader, is the one orphans are re-parented to, so its own children file lists every
// child. A first version handed each event from goroutine to goroutine onto the locked
// thread and spent 500 µs of CPU per call in the runtime's scheduler and /proc reads;
// this one spends about 160 µs (3 × 3000 `echo hi` calls, the watchdog's utime+stime),
// mostly the fork. It costs one long-lived process per server, about 9 MB resident.
//
// Every binary that runs tool commands imports this package through proc; nothing else
// should import it.
package reaper
