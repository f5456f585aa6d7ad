package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
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

// watchdog is the wrapper script. fd 3 is the read end of a pipe only the server
// writes; the subshell blocks on it and kills the group (kill 0) at EOF, which happens
// when the server process closes it or dies. The leader closes fd 3 and execs the real
// shell, so the command never sees it.
const watchdog = `(read _ <&3; kill -KILL 0) </dev/null >/dev/null 2>&1 &
exec 3<&-
exec "$0" -c "$1"`

// Run runs spec and waits for the group to be gone. The error is non-nil only when the
// command could not be started; a failing command is an Outcome with its exit code.
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

	outR, outW, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("run command: output pipe: %w", err)
	}
	dogR, dogW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Outcome{}, fmt.Errorf("run command: watchdog pipe: %w", err)
	}
	defer dogW.Close() // closing it tells the watchdog to kill what is left

	cmd := exec.Command("/bin/sh", "-c", watchdog, spec.Shell, spec.Command)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = outW
	cmd.Stderr = outW
	cmd.ExtraFiles = []*os.File{dogR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	capt := newCapture(spec.OutputCap)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(capt, outR)
	}()

	// Start and Wait on one goroutine whose OS thread stays locked until the leader is
	// reaped: Pdeathsig is tied to the thread that forked the child.
	type waited struct {
		state *os.ProcessState
		err   error
	}
	started := make(chan error, 1)
	done := make(chan waited, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		done <- waited{cmd.ProcessState, err}
	}()
	err = <-started
	// The child holds its own copies; ours must close so EOF can arrive.
	outW.Close()
	dogR.Close()
	if err != nil {
		outR.Close()
		<-copied
		return Outcome{}, fmt.Errorf("run command in %s: start %s: %w", spec.Dir, spec.Shell, err)
	}
	pid := cmd.Process.Pid
	if spec.Started != nil {
		spec.Started(pid)
	}

	out := Outcome{PID: pid}
	var w waited
	stop := false
	select {
	case w = <-done:
	case <-ctx.Done():
		out.Cancelled, stop = true, true
	case <-timeout:
		out.TimedOut, stop = true, true
	}
	if stop {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		grace := time.NewTimer(spec.KillGrace)
		select {
		case w = <-done:
		case <-grace.C:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			w = <-done
		}
		grace.Stop()
	}
	// The leader is gone; kill the rest of its group so no background job leaks and the
	// output pipe reaches EOF.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	dogW.Close()
	// A process that left the group (setsid) may still hold the pipe, so EOF may never
	// come: after a bound, stop waiting for it. The bound is wall-clock and a loaded
	// machine may not have scheduled the reader yet, so nothing already in the pipe is
	// discarded: the reader is woken with a deadline, then the buffered rest is read
	// without blocking.
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

	if w.state == nil {
		return out, fmt.Errorf("run command in %s: wait: %w", spec.Dir, w.err)
	}
	out.ExitCode = w.state.ExitCode()
	if ws, ok := w.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
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
