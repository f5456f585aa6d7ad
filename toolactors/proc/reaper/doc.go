// Package reaper is the watchdog process a tool command runs under, so that nothing it
// starts can outlive the call: not background jobs, not `setsid`, not double-forked
// daemons.
//
// The server (package proc) re-executes its own binary (/proc/self/exe) with argv[0]
// set to Name; this package's init sees that and runs the watchdog instead of the
// program, then exits. The watchdog:
//   - makes itself a child subreaper (PR_SET_CHILD_SUBREAPER): every process the
//     command orphans, whatever its session or process group, is re-parented to it
//     instead of to init, so it stays findable;
//   - starts `<shell> -c <command>` as the leader of a new process group and reports
//     its PID on the status pipe (StatusFD);
//   - on SIGTERM (a polite stop), forwards SIGTERM to the command's group and to every
//     descendant that left it;
//   - when the command's shell exits, or when the control pipe (ControlFD, whose only
//     writer is the server) reaches end of file — the server closed it or died, even by
//     SIGKILL — kills every descendant with SIGKILL and reaps until it has no child
//     left, then writes the shell's wait status and exits.
//
// It imports only a few standard packages on purpose: Go initialises packages in
// import-path order once their imports are done, so a package with light imports runs
// its init before the heavy ones of the server binary (the SQL engine's ICU regex alone
// takes a second to start). The watchdog costs one short-lived Go process per call.
//
// Every binary that runs tool commands imports this package through proc; nothing else
// should import it.
package reaper
