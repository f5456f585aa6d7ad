package reaper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Name is the argv[0] that turns a binary importing this package into the watchdog
// (argv is exactly [Name]).
const Name = "sessionrt-tool-watchdog"

// SocketFD is the watchdog's end of the server's SOCK_SEQPACKET socket, besides stdin,
// stdout and stderr. Each message on it starts one call: a one-byte body and, in
// SCM_RIGHTS, two descriptors: the call's connection (one end of a SOCK_STREAM
// socketpair) and the write end of the call's output pipe. End of file on it (the
// server closed it or died, even by SIGKILL) means "kill everything and exit".
const SocketFD = 3

// MarkerVar is set in every shell's environment to the call's id, so a process that
// left the call's process tree (re-parented to the watchdog) can be told apart from
// another call's; see Attribution in doc.go.
const MarkerVar = "SESSIONRT_TOOL_CALL"

// Term, written by the server on a call's connection after the request (see
// EncodeRequest), is the polite
// stop. Shutting down the connection's write side (or closing it, or dying) means
// "kill the call now". The watchdog answers "pid N\n" once the shell runs, then
// "status W\n" (W the shell's raw wait status) when the shell and every process
// attributed to the call are gone, or "error MESSAGE\n" if the shell could not be
// started.
const Term = 't'

// maxRequest bounds a request (the kernel's own limit on one exec string is 128 KiB,
// on all of them a quarter of the stack limit).
const maxRequest = 64 << 20

// EncodeRequest is a call's request as the server writes it on the call's connection:
// a big-endian uint32 length, then shell, command, dir and the environment joined by
// NUL bytes (none of them can hold one: they become C strings).
func EncodeRequest(shell, command, dir string, env []string) ([]byte, error) {
	fields := append([]string{shell, command, dir}, env...)
	size := len(fields) - 1
	for _, f := range fields {
		if strings.IndexByte(f, 0) >= 0 {
			return nil, fmt.Errorf("%.40q holds a NUL byte", f)
		}
		size += len(f)
	}
	if size > maxRequest {
		return nil, fmt.Errorf("request of %d bytes is over the %d limit", size, maxRequest)
	}
	buf := make([]byte, 4, 4+size)
	binary.BigEndian.PutUint32(buf, uint32(size))
	return append(buf, strings.Join(fields, "\x00")...), nil
}

// NoPidfdsVar, set to 1 in the server's environment, makes the watchdog it starts work
// as on a kernel without pidfds (deaths come as SIGCHLD): for tests of that path.
const NoPidfdsVar = "SESSIONRT_TOOL_WATCHDOG_NO_PIDFDS"

// rescan bounds how long a kill round waits for a death notice before it looks at the
// process tree again (a process forked during a round is re-parented silently).
const rescan = 50 * time.Millisecond

// Linux numbers that package syscall does not name.
const (
	prSetName           = 15 // prctl, linux/prctl.h
	prSetChildSubreaper = 36
	sysPidfdOpen        = 434 // the same on every architecture
)

func init() {
	if len(os.Args) == 1 && os.Args[0] == Name {
		os.Exit(serve())
	}
}

// call is one command's life in the watchdog.
type call struct {
	id    string
	conn  int    // non-blocking stream socket
	out   int    // the output pipe's write end until the shell has it, then -1
	in    []byte // the request as it arrives
	shell int    // PID, also its process group; 0 until started
	pidfd int    // the shell's, or -1

	status    syscall.WaitStatus
	shellDone bool // reaped
	killing   bool // the call is over: everything attributed to it dies
	done      bool // status reported
}

// root is a direct child of the watchdog that is not a shell: a process whose parent
// died, re-parented here because the watchdog is a child subreaper. owner is its call
// when known; otherwise cands are the calls it may belong to, and it dies when they
// have all ended.
type root struct {
	owner *call
	cands map[*call]bool
	pidfd int
	// reads counts the reads of an empty environment: a process in the middle of
	// execve shows none until the new program's stack is laid out, so an empty one is
	// read again by the next sweeps before the candidates decide.
	reads int
}

// markerReads is how many times an empty environment is read before it is believed
// (the process cleared it), at least rescan apart.
const markerReads = 3

// The watchdog is one thread: every descriptor it waits on — the server's socket, the
// calls' connections, a pidfd per shell and per re-parented process (or, on kernels
// without pidfds, a pipe fed on SIGCHLD) — is in one epoll set, and the thread that
// waits on it is the one that forks, to which the shells' Pdeathsig is tied. No
// goroutine hands work to another: a call costs a few system calls and no wake-up of
// another thread.
type watchdog struct {
	self    int
	epfd    int
	devnull int
	sigchld int // read end of the SIGCHLD pipe, or -1 when pidfds tell deaths
	pidfds  bool
	seq     uint64
	conns   map[int]*call // by connection fd
	deaths  map[int]int   // pidfd → PID
	live    map[*call]bool
	shells  map[int]*call
	roots   map[int]*root
}

// serve is the watchdog's life; its result is its exit code.
func serve() int {
	// This is the main thread (init runs on it, and stays on it once locked): it forks
	// every shell, and re-parented processes are attached to it, the thread group
	// leader, so its own children file lists every child.
	runtime.LockOSThread()
	// A name ps and top show (the executable's would be "exe", from /proc/self/exe).
	if name, err := syscall.BytePtrFromString("srt-watchdog"); err == nil {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetName, uintptr(unsafe.Pointer(name)), 0)
	}
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %s: %v\n", Name, what, err)
		return 125
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fail("make it a child subreaper", errno)
	}
	syscall.CloseOnExec(SocketFD)
	devnull, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail("open "+os.DevNull, err)
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return fail("epoll", err)
	}
	w := &watchdog{
		self: os.Getpid(), epfd: epfd, devnull: devnull, sigchld: -1,
		conns: map[int]*call{}, deaths: map[int]int{}, live: map[*call]bool{}, shells: map[int]*call{}, roots: map[int]*root{},
	}
	if fd, err := pidfdOpen(w.self); err == nil && os.Getenv(NoPidfdsVar) != "1" {
		syscall.Close(fd)
		w.pidfds = true
	} else {
		// No pidfds: deaths come as SIGCHLD, which only the runtime can receive; a
		// goroutine turns each into a byte on a pipe.
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
			return fail("pipe", err)
		}
		w.sigchld = p[0]
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGCHLD)
		go func() {
			for range signals {
				_, _ = syscall.Write(p[1], []byte{0})
			}
		}()
		w.watch(p[0])
	}
	if err := syscall.SetNonblock(SocketFD, true); err != nil {
		return fail("socket", err)
	}
	w.watch(SocketFD)

	events := make([]syscall.EpollEvent, 64)
	busy := false
	for {
		timeout := -1
		if busy {
			timeout = int(rescan / time.Millisecond)
		}
		n, err := syscall.EpollWait(w.epfd, events, timeout)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fail("epoll", err)
		}
		reap := false
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			switch {
			case fd == SocketFD:
				if !w.accept() {
					w.killAll()
					return 0
				}
			case fd == w.sigchld:
				var b [64]byte
				for {
					if n, _ := syscall.Read(fd, b[:]); n <= 0 {
						break
					}
				}
				reap = true
			default:
				if c, ok := w.conns[fd]; ok {
					w.read(c)
				} else if _, ok := w.deaths[fd]; ok {
					reap = true
				}
			}
		}
		if reap || busy {
			w.reap() // while killing, also on the tick: a death may have gone unseen
		}
		busy = w.sweep()
	}
}

func pidfdOpen(pid int) (int, error) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	syscall.CloseOnExec(int(fd))
	return int(fd), nil
}

func (w *watchdog) watch(fd int) {
	_ = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)})
}

func (w *watchdog) unwatch(fd int) {
	_ = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
}

// watchDeath adds a pidfd for pid, so its exit wakes the loop.
func (w *watchdog) watchDeath(pid, pidfd int) int {
	if !w.pidfds {
		return -1
	}
	if pidfd < 0 {
		var err error
		if pidfd, err = pidfdOpen(pid); err != nil {
			return -1 // gone already: a sweep or the next death reaps it
		}
	}
	w.deaths[pidfd] = pid
	w.watch(pidfd)
	return pidfd
}

func (w *watchdog) forgetDeath(pidfd int) {
	if pidfd >= 0 {
		delete(w.deaths, pidfd)
		w.unwatch(pidfd)
		syscall.Close(pidfd)
	}
}

// accept takes every call waiting on the server's socket; false: end of file.
func (w *watchdog) accept() bool {
	buf := make([]byte, 16)
	oob := make([]byte, syscall.CmsgSpace(2*4))
	for {
		n, oobn, _, _, err := syscall.Recvmsg(SocketFD, buf, oob, syscall.MSG_CMSG_CLOEXEC|syscall.MSG_DONTWAIT)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			return true
		}
		if err != nil || (n == 0 && oobn == 0) {
			return false
		}
		var fds []int
		if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if rights, err := syscall.ParseUnixRights(&m); err == nil {
					fds = append(fds, rights...)
				}
			}
		}
		if len(fds) != 2 {
			for _, fd := range fds {
				syscall.Close(fd)
			}
			continue // not a call: nothing to answer on
		}
		_ = syscall.SetNonblock(fds[0], true)
		c := &call{conn: fds[0], out: fds[1], pidfd: -1}
		w.conns[c.conn] = c
		w.watch(c.conn)
		w.read(c)
	}
}

// read takes what the server wrote on a call's connection: the request, then Term, or
// end of file (kill now).
func (w *watchdog) read(c *call) {
	var buf [4096]byte
	for {
		n, err := syscall.Read(c.conn, buf[:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			return
		}
		if n <= 0 {
			// The server shut its side: nothing more will come, and a level-triggered
			// end of file would wake the loop forever.
			w.unwatch(c.conn)
			delete(w.conns, c.conn)
			if c.shell == 0 {
				w.drop(c, "")
			} else if !c.done {
				c.killing = true
			}
			return
		}
		data := buf[:n]
		if c.shell == 0 {
			c.in = append(c.in, data...)
			req, rest, err := request(c.in)
			if err != nil {
				w.drop(c, "error read the request: "+err.Error())
				return
			}
			if req == nil {
				continue
			}
			c.in = nil
			w.start(c, req)
			if c.done {
				return
			}
			data = rest
		}
		for _, b := range data {
			if b == Term && !c.killing && !c.done {
				w.term(c)
			}
		}
	}
}

// request parses a complete request from b: nil while it is incomplete.
func request(b []byte) (fields []string, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, nil
	}
	size := binary.BigEndian.Uint32(b)
	if size > maxRequest {
		return nil, nil, fmt.Errorf("request of %d bytes is over the %d limit", size, maxRequest)
	}
	if uint32(len(b)-4) < size {
		return nil, nil, nil
	}
	f := strings.Split(string(b[4:4+size]), "\x00")
	if len(f) < 3 {
		return nil, nil, errors.New("short request")
	}
	return f, b[4+size:], nil
}

// drop ends a call that never started, with a message if the server is still there.
func (w *watchdog) drop(c *call, msg string) {
	if msg != "" {
		_, _ = syscall.Write(c.conn, []byte(msg+"\n"))
	}
	if c.out >= 0 {
		syscall.Close(c.out)
		c.out = -1
	}
	if _, ok := w.conns[c.conn]; ok {
		w.unwatch(c.conn)
		delete(w.conns, c.conn)
	}
	syscall.Close(c.conn)
	c.done = true
}

// start forks the call's shell.
func (w *watchdog) start(c *call, req []string) {
	shell, command, dir, env := req[0], req[1], req[2], req[3:]
	w.seq++
	c.id = strconv.Itoa(w.self) + "." + strconv.FormatUint(w.seq, 10)
	pidfd := -1
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if w.pidfds {
		sys.PidFD = &pidfd
	}
	pid, err := syscall.ForkExec(shell, []string{shell, "-c", command}, &syscall.ProcAttr{
		Dir:   dir,
		Env:   withMarker(env, c.id),
		Files: []uintptr{uintptr(w.devnull), uintptr(c.out), uintptr(c.out)},
		Sys:   sys,
	})
	if err != nil {
		w.drop(c, "error start "+shell+": "+err.Error())
		return
	}
	syscall.Close(c.out) // the shell has its own copies
	c.out = -1
	c.shell = pid
	c.pidfd = w.watchDeath(pid, pidfd)
	w.live[c] = true
	w.shells[pid] = c
	_, _ = syscall.Write(c.conn, []byte("pid "+strconv.Itoa(pid)+"\n"))
}

func withMarker(env []string, id string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, MarkerVar+"=") {
			out = append(out, kv)
		}
	}
	return append(out, MarkerVar+"="+id)
}

// reap collects every child that has ended.
func (w *watchdog) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if c, ok := w.shells[pid]; ok {
			delete(w.shells, pid)
			w.forgetDeath(c.pidfd)
			c.pidfd = -1
			c.status, c.shellDone, c.killing = ws, true, true // whatever the command left dies with it
		}
		if r, ok := w.roots[pid]; ok {
			w.forgetDeath(r.pidfd)
			delete(w.roots, pid)
		}
	}
}

// scan attributes the watchdog's new direct children (processes re-parented to it).
func (w *watchdog) scan() {
	for _, pid := range ownChildren(w.self) {
		if _, ok := w.shells[pid]; ok {
			continue
		}
		if _, ok := w.roots[pid]; ok {
			continue
		}
		// It was re-parented after the previous scan, and every call that ended since
		// then scanned before it was reported: its owner, if still running, is one
		// of these.
		r := &root{cands: make(map[*call]bool, len(w.live))}
		for c := range w.live {
			r.cands[c] = true
		}
		w.attribute(pid, r)
		r.pidfd = w.watchDeath(pid, -1)
		w.roots[pid] = r

	}
}

// ownChildren lists the watchdog's children: those of its main thread, which forks
// every shell and to which the kernel re-parents orphans (the first live thread of a
// subreaper, its leader), unless the main thread is somehow not the leader.
func ownChildren(self int) []int {
	if syscall.Gettid() != self {
		return children(self)
	}
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(self) + "/children")
	if err != nil {
		return children(self)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// attribute gives r (pid) its owner: the candidate its marker names, else the only
// candidate left once its environment is believed.
func (w *watchdog) attribute(pid int, r *root) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err == nil && len(b) == 0 {
		if r.reads++; r.reads < markerReads {
			return // pending: maybe in execve
		}
	}
	r.reads = markerReads
	if id, ok := marker(b); ok {
		for c := range r.cands {
			if c.id == id {
				r.owner = c
				return
			}
		}
	}
	if len(r.cands) == 1 {
		for c := range r.cands {
			r.owner = c
		}
	}
}

// pending: r's environment may not be readable yet.
func (r *root) pending() bool { return r.owner == nil && r.reads > 0 && r.reads < markerReads }

func marker(environ []byte) (string, bool) {
	prefix := MarkerVar + "="
	for _, kv := range strings.Split(string(environ), "\x00") {
		if id, ok := strings.CutPrefix(kv, prefix); ok {
			return id, true
		}
	}
	return "", false
}

// sweep kills what belongs to calls that are over, reports the calls that have nothing
// left, and kills the roots nobody can own any more. It reports whether anything is
// still being killed.
func (w *watchdog) sweep() bool {
	if !w.killing() {
		return false
	}
	w.scan()
	for pid, r := range w.roots {
		if r.pending() {
			w.attribute(pid, r)
		}
	}
	for c := range w.live {
		if !c.killing {
			continue
		}
		if !c.shellDone {
			_ = syscall.Kill(-c.shell, syscall.SIGKILL)
			killTree(c.shell, syscall.SIGKILL, 0)
		}
		owned := false
		for pid, r := range w.roots {
			if r.owner == c {
				owned = true
				killTree(pid, syscall.SIGKILL, 0)
			} else if r.pending() && r.cands[c] {
				owned = true // maybe c's: it cannot finish before that is known
			}
		}
		if c.shellDone && !owned {
			w.finish(c)
		}
	}
	for pid, r := range w.roots {
		if r.owner == nil && len(r.cands) == 0 && !r.pending() {
			killTree(pid, syscall.SIGKILL, 0)
		}
	}
	return w.killing()
}

// killing: some call is over but not yet reported, or some root is owned by no one.
func (w *watchdog) killing() bool {
	for c := range w.live {
		if c.killing {
			return true
		}
	}
	for _, r := range w.roots {
		if (r.owner == nil && len(r.cands) == 0) || r.pending() {
			return true
		}
	}
	return false
}

// finish reports the call's status and forgets it.
func (w *watchdog) finish(c *call) {
	_, _ = syscall.Write(c.conn, []byte("status "+strconv.FormatUint(uint64(c.status), 10)+"\n"))
	if _, ok := w.conns[c.conn]; ok {
		w.unwatch(c.conn)
		delete(w.conns, c.conn)
	}
	syscall.Close(c.conn)
	c.done = true
	delete(w.live, c)
	for _, r := range w.roots {
		delete(r.cands, c)
		if r.owner == nil && len(r.cands) == 1 && !r.pending() {
			for o := range r.cands {
				r.owner = o
			}
		}
	}
}

// term is the polite stop: SIGTERM to the command's group, and to every process of the
// call that left it.
func (w *watchdog) term(c *call) {
	w.scan()
	_ = syscall.Kill(-c.shell, syscall.SIGTERM)
	killTree(c.shell, syscall.SIGTERM, c.shell)
	for pid, r := range w.roots {
		if r.owner == c {
			killTree(pid, syscall.SIGTERM, c.shell)
		}
	}
}

// killAll: the server is gone. Everything below the watchdog dies; then it exits.
func (w *watchdog) killAll() {
	for _, c := range w.shells {
		_ = syscall.Kill(-c.shell, syscall.SIGKILL)
	}
	for {
		killTree(w.self, syscall.SIGKILL, 0)
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if err == syscall.ECHILD {
				return
			}
			if err != nil || pid <= 0 {
				break
			}
		}
		time.Sleep(rescan / 10)
	}
}

// killTree sends sig to pid (unless it is the watchdog) and to every descendant of it,
// skipping members of process group skipGroup (0: none skipped).
func killTree(pid int, sig syscall.Signal, skipGroup int) {
	self := os.Getpid()
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != self && (skipGroup == 0 || pgid(p) != skipGroup) {
			_ = syscall.Kill(p, sig)
		}
		queue = append(queue, children(p)...)
	}
}

// children lists pid's children from the children files of all its threads (a child is
// listed under the thread that forked it, or any live thread once re-parented); where
// the kernel has no such files, from every process's parent.
func children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) && t.Name() == strconv.Itoa(pid) {
			return childrenByScan(pid)
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func childrenByScan(parent int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(pid); len(f) >= 3 {
			if pp, _ := strconv.Atoi(f[1]); pp == parent {
				out = append(out, pid)
			}
		}
	}
	return out
}

// pgid is a process's group, 0 if it is gone.
func pgid(pid int) int {
	f := statFields(pid)
	if len(f) < 3 {
		return 0
	}
	g, _ := strconv.Atoi(f[2])
	return g
}

// statFields are the fields of /proc/PID/stat after the command name: state ppid pgrp …
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}
