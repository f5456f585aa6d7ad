package reaper

import (
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Name is the argv[0] that turns a binary importing this package into the watchdog:
// argv is [Name, shell, command].
const Name = "sessionrt-tool-watchdog"

// Descriptors the server passes to the watchdog, besides stdin, stdout and stderr (which
// the command inherits).
const (
	// ControlFD is the read end of a pipe only the server writes. End of file means
	// "kill everything now": the call is over or the server is gone.
	ControlFD = 3
	// StatusFD is the write end of the status pipe: "pid N\n" once the command runs,
	// then "status W\n" (W the shell's raw wait status) when everything is gone, or
	// "error MESSAGE\n" if the command could not be started.
	StatusFD = 4
)

// rescan bounds how long a kill round waits for a child's death notice before it looks
// at the process tree again (a descendant forked during a round is re-parented
// silently).
const rescan = 50 * time.Millisecond

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h), which package
// syscall does not name.
const prSetChildSubreaper = 36

func init() {
	if len(os.Args) == 3 && os.Args[0] == Name {
		os.Exit(run(os.Args[1], os.Args[2]))
	}
}

// run is the watchdog's life; its result is the watchdog's exit code, which the server
// only reads when no status was reported.
func run(shell, command string) int {
	// Neither pipe may reach the command.
	syscall.CloseOnExec(ControlFD)
	syscall.CloseOnExec(StatusFD)
	status := os.NewFile(StatusFD, "status")
	report := func(line string) { _, _ = status.WriteString(line + "\n") }

	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		report("error make the tool watchdog a child subreaper: " + errno.Error())
		return 125
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGCHLD, syscall.SIGTERM)

	// Pdeathsig is tied to the thread that forks: keep it for the watchdog's life, so
	// the shell dies with the watchdog if the watchdog is killed outright.
	runtime.LockOSThread()
	pid, err := syscall.ForkExec(shell, []string{shell, "-c", command}, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		report("error start " + shell + ": " + err.Error())
		return 126
	}
	report("pid " + strconv.Itoa(pid))

	control := make(chan struct{})
	go func() {
		f := os.NewFile(ControlFD, "control")
		var b [64]byte
		for {
			if _, err := f.Read(b[:]); err != nil {
				close(control)
				return
			}
		}
	}()

	var shellStatus syscall.WaitStatus
	shellDone, killing := false, false
	var rescanTick <-chan time.Time
	startKilling := func() {
		if !killing {
			killing = true
			rescanTick = time.NewTicker(rescan).C // lives until exit
		}
	}
	for {
		// Reap everything that has ended; ECHILD means no descendant is left at all
		// (each live descendant has an ancestor chain ending in a child of ours).
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if err == syscall.ECHILD && shellDone {
				report("status " + strconv.FormatUint(uint64(shellStatus), 10))
				return 0
			}
			if err != nil || wpid <= 0 {
				break
			}
			if wpid == pid {
				shellStatus, shellDone = ws, true
			}
		}
		if shellDone {
			startKilling() // the call is over: whatever the command left dies with it
		}
		if killing {
			signalAll(syscall.SIGKILL, 0)
		}
		select {
		case s := <-signals:
			if s == syscall.SIGTERM && !killing {
				_ = syscall.Kill(-pid, syscall.SIGTERM)
				signalAll(syscall.SIGTERM, pid) // those that left the command's group
			}
		case <-control:
			control = nil
			startKilling()
		case <-rescanTick:
		}
	}
}

// signalAll sends sig to every descendant of the watchdog, except members of process
// group skipGroup (0: none skipped).
func signalAll(sig syscall.Signal, skipGroup int) {
	for _, d := range descendants() {
		if skipGroup != 0 && d.pgid == skipGroup {
			continue
		}
		_ = syscall.Kill(d.pid, sig)
	}
}

type proc struct{ pid, ppid, pgid int }

// descendants lists the watchdog's descendants from /proc: the per-task children
// files when the kernel has them, else a scan of every process's parent.
func descendants() []proc {
	self := os.Getpid()
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(self) + "/children"); err == nil {
		var out []proc
		queue := []int{self}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, c := range children(p) {
				if st, ok := stat(c); ok {
					out = append(out, st)
				}
				queue = append(queue, c)
			}
		}
		return out
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	byParent := map[int][]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := stat(pid); ok {
			byParent[st.ppid] = append(byParent[st.ppid], st)
		}
	}
	var out []proc
	queue := []int{self}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range byParent[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// children lists pid's children from the children files of all its threads (a child is
// listed under the thread that forked it, or any live thread once re-parented).
func children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// stat reads a process's parent and process group.
func stat(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp ...
	if len(f) < 3 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return proc{pid: pid, ppid: ppid, pgid: pgid}, true
}
