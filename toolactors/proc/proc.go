package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessionrt/sessionrt/toolactors/proc/reaper"
)

// Defaults.
const (
	DefaultShell     = "/bin/sh"
	DefaultKillGrace = 3 * time.Second
	DefaultOutputCap = 8 << 20 // bytes kept in memory per command
)

// Spec is one command.
type Spec struct {
	Command string
	Dir     string   // working directory; required
	Shell   string   // default /bin/sh; run as `<shell> -c <command>`
	Env     []string // nil: the server's environment
	// Timeout bounds the run; 0 means none (the caller's ctx still applies).
	Timeout   time.Duration
	KillGrace time.Duration // SIGTERM→SIGKILL delay, default 3 s
	OutputCap int           // default 8 MiB
	// Started, if set, is called with the leader's PID once it runs (tests, diagnostics).
	Started func(pid int)
}

// Outcome is how the command ended.
type Outcome struct {
	PID      int
	ExitCode int    // -1 when killed by a signal
	Signal   string // the signal that ended the leader, if any
	TimedOut bool
	// Cancelled: the caller's ctx ended before the command did.
	Cancelled bool
	// Output is stdout and stderr interleaved; when more than OutputCap bytes arrived,
	// the middle is replaced by a marker and Dropped says how many bytes were lost.
	Output  string
	Dropped int64
}

// watchdogBackstop bounds how long Run waits for the watchdog after telling it to kill
// everything; it only matters if the watchdog itself is stuck.
const watchdogBackstop = 30 * time.Second

// Run runs spec and waits until the command and everything it started are gone. The
// error is non-nil only when the command could not be started; a failing command is an
// Outcome with its exit code.
func Run(ctx context.Context, spec Spec) (Outcome, error) {
	if spec.Dir == "" {
		return Outcome{}, errors.New("run command: working directory is required")
	}
	if spec.Shell == "" {
		spec.Shell = DefaultShell
	}
	if spec.KillGrace <= 0 {
		spec.KillGrace = DefaultKillGrace
	}
	if spec.OutputCap <= 0 {
		spec.OutputCap = DefaultOutputCap
	}
	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}

	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("run command: output pipe: %w", err)
	}
	var conn *os.File
	var w *watchdog
	for try := 0; ; try++ {
		if w, err = theWatchdog(); err == nil {
			conn, err = w.open(outW, spec.Shell, spec.Command, spec.Dir, env)
		}
		if err != errGone || try > 0 {
			break
		}
		forget(w) // it died since the previous call: once more, with a new one
	}
	// The shell gets the watchdog's copy; ours must close so EOF can arrive.
	outW.Close()
	if err != nil {
		outR.Close()
		return Outcome{}, fmt.Errorf("run command in %s: %w", spec.Dir, err)
	}
	defer conn.Close() // closing it (or dying) tells the watchdog to kill what is left

	capt := newCapture(spec.OutputCap)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(capt, outR)
	}()

	// The first status line says whether the shell runs.
	status := bufio.NewReader(conn)
	line, readErr := status.ReadString('\n')
	pid, started := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "pid ")
	shellPID, convErr := strconv.Atoi(pid)
	if !started || convErr != nil {
		closeWrite(conn)
		outR.Close()
		<-copied
		msg, isErr := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "error ")
		if !isErr {
			// The watchdog died, maybe after it started the shell (which then died
			// with it): the call is not tried again. The next one starts a new
			// watchdog once this one is seen gone, which is a moment away.
			msg = fmt.Sprintf("the tool watchdog ended before it reported the shell running (%v)", readErr)
			select {
			case <-w.dead:
			case <-time.After(time.Second):
			}
		}
		return Outcome{}, fmt.Errorf("run command in %s: %s", spec.Dir, msg)
	}
	if spec.Started != nil {
		spec.Started(shellPID)
	}
	type reported struct {
		ws syscall.WaitStatus
		ok bool
	}
	done := make(chan reported, 1)
	go func() {
		ws, ok := reportedStatus(status)
		done <- reported{ws, ok}
	}()

	out := Outcome{PID: shellPID}
	var res reported
	exited := false
	select {
	case res = <-done:
		exited = true
	case <-ctx.Done():
		out.Cancelled = true
	case <-timeout:
		out.TimedOut = true
	}
	if !exited {
		// Politely first: the watchdog sends SIGTERM to the command's group and to
		// whatever left it. Then, after the grace, it kills everything.
		_, _ = conn.Write([]byte{reaper.Term})
		grace := time.NewTimer(spec.KillGrace)
		select {
		case res = <-done:
		case <-grace.C:
			closeWrite(conn)
			backstop := time.NewTimer(watchdogBackstop)
			select {
			case res = <-done:
			case <-backstop.C:
				// The watchdog is stuck: kill the group ourselves and stop waiting.
				_ = syscall.Kill(-shellPID, syscall.SIGKILL)
				conn.Close()
				res = <-done
			}
			backstop.Stop()
		}
		grace.Stop()
	}
	closeWrite(conn)
	// The watchdog has killed and reaped every process of the call, so the output
	// pipe is at EOF unless something escaped it (only a process started by another
	// parent, e.g. through a daemon the command asked, or one that cleared its
	// environment while other calls ran: see package reaper). After a bound, stop
	// waiting for it. The bound is wall-clock and a loaded machine may not have
	// scheduled the reader yet, so nothing already in the pipe is discarded: the
	// reader is woken with a deadline, then the buffered rest is read without blocking.
	drain := time.NewTimer(spec.KillGrace)
	select {
	case <-copied:
	case <-drain.C:
		if err := outR.SetReadDeadline(time.Now()); err == nil {
			<-copied
			_ = outR.SetReadDeadline(time.Time{})
			drainBuffered(outR, capt, spec.OutputCap)
		}
	}
	drain.Stop()
	outR.Close()
	<-copied

	// The shell's own wait status, which the watchdog reports last. Without it the
	// watchdog died, and the shell with it (Pdeathsig SIGKILL).
	ws := res.ws
	if !res.ok {
		ws = syscall.WaitStatus(syscall.SIGKILL)
	}
	out.ExitCode = ws.ExitStatus()
	if ws.Signaled() {
		out.Signal = ws.Signal().String()
	}
	head, tail, dropped := capt.result()
	out.Dropped = dropped
	if dropped > 0 {
		out.Output = string(head) + "\n... [" + strconv.FormatInt(dropped, 10) + " bytes of output dropped: over the in-memory cap] ...\n" + string(tail)
	} else {
		out.Output = string(head) + string(tail)
	}
	return out, nil
}

// reportedStatus reads the watchdog's "status W" line.
func reportedStatus(r *bufio.Reader) (syscall.WaitStatus, bool) {
	line, _ := r.ReadString('\n')
	v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "status ")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return syscall.WaitStatus(n), true
}

// Alive reports whether a process with pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the ")" closing the command name.
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] != 'Z'
		}
	}
	return true
}

// Gone waits up to timeout for pid to be dead (absent or a zombie); a SIGKILLed process
// takes a moment to finish exiting. It reports whether it is gone.
func Gone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// drainBuffered reads what the pipe holds right now, without waiting for more, up to
// limit bytes (an escaped writer may keep writing).
func drainBuffered(f *os.File, w io.Writer, limit int) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	total := 0
	_ = rc.Read(func(fd uintptr) bool {
		for total < limit {
			n, err := syscall.Read(int(fd), buf)
			if n <= 0 || err != nil {
				break
			}
			_, _ = w.Write(buf[:n])
			total += n
		}
		return true // done, whatever the outcome: never wait here
	})
}
