package reaper

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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

// The call's connection: the server writes the request (see WriteRequest), then
// optionally Term; shutting down its write side (or closing it, or dying) means "kill
// the call now". The watchdog answers "pid N\n" once the shell runs, then "status W\n"
// (W the shell's raw wait status) when the shell and every process attributed to the
// call are gone, or "error MESSAGE\n" if the shell could not be started.
const Term = 't'

// maxRequest bounds a request (the kernel's own limit on one exec string is 128 KiB,
// on all of them a quarter of the stack limit).
const maxRequest = 64 << 20

// WriteRequest writes a call's request on its connection: a big-endian uint32 length,
// then shell, command, dir and the environment joined by NUL bytes (none of them can
// hold one: they become C strings).
func WriteRequest(w io.Writer, shell, command, dir string, env []string) error {
	fields := append([]string{shell, command, dir}, env...)
	size := len(fields) - 1
	for _, f := range fields {
		if strings.IndexByte(f, 0) >= 0 {
			return fmt.Errorf("%.40q holds a NUL byte", f)
		}
		size += len(f)
	}
	if size > maxRequest {
		return fmt.Errorf("request of %d bytes is over the %d limit", size, maxRequest)
	}
	buf := make([]byte, 4, 4+size)
	binary.BigEndian.PutUint32(buf, uint32(size))
	buf = append(buf, strings.Join(fields, "\x00")...)
	_, err := w.Write(buf)
	return err
}

func readRequest(r io.Reader) (shell, command, dir string, env []string, err error) {
	var hdr [4]byte
	if _, err = io.ReadFull(r, hdr[:]); err != nil {
		return
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > maxRequest {
		err = fmt.Errorf("request of %d bytes is over the %d limit", size, maxRequest)
		return
	}
	body := make([]byte, size)
	if _, err = io.ReadFull(r, body); err != nil {
		return
	}
	f := strings.Split(string(body), "\x00")
	if len(f) < 3 {
		err = errors.New("short request")
		return
	}
	return f[0], f[1], f[2], f[3:], nil
}

// rescan bounds how long a kill round waits for a death notice before it looks at the
// process tree again (a process forked during a round is re-parented silently).
const rescan = 50 * time.Millisecond

// prctl options that package syscall does not name (linux/prctl.h).
const (
	prSetName           = 15
	prSetChildSubreaper = 36
)

func init() {
	if len(os.Args) == 1 && os.Args[0] == Name {
		os.Exit(serve())
	}
}

// call is one command's life in the watchdog; only the main loop touches it after
// it is handed over.
type call struct {
	id    string
	conn  *os.File
	out   *os.File
	shell int // PID, also its process group; 0 until started
	req   []string

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
}

type event struct {
	c    *call
	kind byte // 's' start, 't' polite stop, 'k' kill now
}

type watchdog struct {
	self   int
	devnul *os.File
	seq    uint64
	live   map[*call]bool
	shells map[int]*call
	roots  map[int]*root
}

// serve is the watchdog's life; its result is its exit code.
func serve() int {
	// Every fork happens on this thread, to which the shells' Pdeathsig is tied: it
	// lives as long as the watchdog.
	runtime.LockOSThread()
	// A name ps and top show (the executable's would be "exe", from /proc/self/exe).
	if name, err := syscall.BytePtrFromString("srt-watchdog"); err == nil {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetName, uintptr(unsafe.Pointer(name)), 0)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "%s: make it a child subreaper: %v\n", Name, errno)
		return 125
	}
	syscall.CloseOnExec(SocketFD)
	_ = syscall.SetNonblock(SocketFD, false) // read by a goroutine of its own
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Name, err)
		return 125
	}
	w := &watchdog{self: os.Getpid(), devnul: devnull, live: map[*call]bool{}, shells: map[int]*call{}, roots: map[int]*root{}}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGCHLD)
	events := make(chan event, 64)
	closed := make(chan struct{})
	go accept(events, closed)

	var tick <-chan time.Time
	var ticker *time.Ticker
	for {
		select {
		case ev := <-events:
			w.handle(ev)
		case <-signals:
			w.reap()
		case <-tick:
		case <-closed:
			w.killAll(signals)
			return 0
		}
		if w.sweep() {
			if ticker == nil {
				ticker = time.NewTicker(rescan)
				tick = ticker.C
			}
		} else if ticker != nil {
			ticker.Stop()
			ticker, tick = nil, nil
		}
	}
}

// accept receives the server's calls until end of file on SocketFD.
func accept(events chan<- event, closed chan<- struct{}) {
	defer close(closed)
	buf := make([]byte, 16)
	oob := make([]byte, syscall.CmsgSpace(2*4))
	for {
		n, oobn, _, _, err := syscall.Recvmsg(SocketFD, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || (n == 0 && oobn == 0) {
			return
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
				_ = syscall.Close(fd)
			}
			continue // not a call: nothing to answer on
		}
		c := &call{conn: os.NewFile(uintptr(fds[0]), "call"), out: os.NewFile(uintptr(fds[1]), "output")}
		go c.read(events)
	}
}

// read reads the call's request, hands it to the main loop, then turns what the server
// says next into events.
func (c *call) read(events chan<- event) {
	r := bufio.NewReader(c.conn)
	shell, command, dir, env, err := readRequest(r)
	if err != nil {
		_, _ = c.conn.WriteString("error read the request: " + err.Error() + "\n")
		c.conn.Close()
		c.out.Close()
		return
	}
	c.req = append([]string{shell, command, dir}, env...)
	events <- event{c, 's'}
	for {
		b, err := r.ReadByte()
		if err != nil {
			events <- event{c, 'k'}
			return
		}
		if b == Term {
			events <- event{c, 't'}
		}
	}
}

func (w *watchdog) handle(ev event) {
	c := ev.c
	switch ev.kind {
	case 's':
		w.start(c)
	case 't':
		if !c.done && !c.killing && c.shell != 0 {
			w.term(c)
		}
	case 'k':
		if !c.done {
			c.killing = true
		}
	}
}

// start forks the call's shell, on the locked thread.
func (w *watchdog) start(c *call) {
	shell, command, dir, env := c.req[0], c.req[1], c.req[2], c.req[3:]
	c.req = nil
	w.seq++
	c.id = strconv.Itoa(w.self) + "." + strconv.FormatUint(w.seq, 10)
	env = withMarker(env, c.id)
	pid, err := syscall.ForkExec(shell, []string{shell, "-c", command}, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{w.devnul.Fd(), c.out.Fd(), c.out.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	c.out.Close() // the shell has its own copies
	c.out = nil
	if err != nil {
		_, _ = c.conn.WriteString("error start " + shell + ": " + err.Error() + "\n")
		c.conn.Close()
		c.done = true
		return
	}
	c.shell = pid
	w.live[c] = true
	w.shells[pid] = c
	_, _ = c.conn.WriteString("pid " + strconv.Itoa(pid) + "\n")
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
			c.status, c.shellDone, c.killing = ws, true, true // whatever the command left dies with it
		}
		delete(w.roots, pid)
	}
}

// scan attributes the watchdog's new direct children (processes re-parented to it).
func (w *watchdog) scan() {
	for _, pid := range children(w.self) {
		if _, ok := w.shells[pid]; ok {
			continue
		}
		if _, ok := w.roots[pid]; ok {
			continue
		}
		r := &root{}
		if c := w.byMarker(pid); c != nil {
			r.owner = c
		} else {
			// It was re-parented after the previous scan, and every call that ended
			// since then scanned before it was reported: its owner, if still running,
			// is one of these.
			r.cands = make(map[*call]bool, len(w.live))
			for c := range w.live {
				r.cands[c] = true
			}
			if len(r.cands) == 1 {
				for c := range r.cands {
					r.owner = c
				}
			}
		}
		w.roots[pid] = r
	}
}

// byMarker finds the running call whose id pid's environment carries.
func (w *watchdog) byMarker(pid int) *call {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	prefix := MarkerVar + "="
	for _, kv := range strings.Split(string(b), "\x00") {
		if id, ok := strings.CutPrefix(kv, prefix); ok {
			for c := range w.live {
				if c.id == id {
					return c
				}
			}
			return nil
		}
	}
	return nil
}

// sweep kills what belongs to calls that are over, reports the calls that have nothing
// left, and kills the roots nobody can own any more. It reports whether anything is
// still being killed.
func (w *watchdog) sweep() bool {
	busy := false
	for c := range w.live {
		if c.killing {
			busy = true
		}
	}
	for _, r := range w.roots {
		if r.owner == nil && len(r.cands) == 0 {
			busy = true
		}
	}
	if !busy {
		return false
	}
	w.scan()
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
			}
		}
		if c.shellDone && !owned {
			w.finish(c)
		}
	}
	busy = false
	for c := range w.live {
		if c.killing {
			busy = true
		}
	}
	for pid, r := range w.roots {
		if r.owner == nil && len(r.cands) == 0 {
			killTree(pid, syscall.SIGKILL, 0)
			busy = true
		}
	}
	return busy
}

// finish reports the call's status and forgets it.
func (w *watchdog) finish(c *call) {
	_, _ = c.conn.WriteString("status " + strconv.FormatUint(uint64(c.status), 10) + "\n")
	c.conn.Close()
	c.done = true
	delete(w.live, c)
	for _, r := range w.roots {
		delete(r.cands, c)
		if r.owner == nil && len(r.cands) == 1 {
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
func (w *watchdog) killAll(signals <-chan os.Signal) {
	for _, c := range w.shells {
		_ = syscall.Kill(-c.shell, syscall.SIGKILL)
	}
	ticker := time.NewTicker(rescan)
	defer ticker.Stop()
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
		select {
		case <-signals:
		case <-ticker.C:
		}
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
