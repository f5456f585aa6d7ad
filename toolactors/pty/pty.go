package pty

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	cpty "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Config configures one terminal. Zero fields take the documented defaults.
type Config struct {
	// ID names the terminal in its messages.
	ID string
	// Location is the Location directory the PTY belongs to (passed to the overlay).
	Location string
	// Dir is the working directory; default Location. Required if Location is empty.
	Dir string
	// Shell is the program; default $SHELL, else /bin/sh. Args are its arguments.
	Shell string
	Args  []string
	// Env are the caller's values; Overlay the host's (nil: none).
	Env     map[string]string
	Overlay EnvOverlay
	// Rows and Cols are the initial size; default 24×80.
	Rows, Cols uint16
	// Subscribers receive *Output and *Exited.
	Subscribers []*actor.PID
	// Logger receives diagnostics; default slog.Default().
	Logger *slog.Logger
}

// Messages.

// Input writes bytes to the terminal.
type Input struct{ Data []byte }

// Resize changes the terminal size.
type Resize struct{ Rows, Cols uint16 }

// Subscribe adds a receiver of *Output and *Exited.
type Subscribe struct{ PID *actor.PID }

// Output is a chunk of terminal output, in order.
type Output struct {
	ID   string
	Data []byte
}

// Exited says the shell ended; the actor stops after sending it.
type Exited struct {
	ID       string
	PID      int
	ExitCode int    // -1 when killed by a signal
	Signal   string // the signal, if any
	Err      string // set when the terminal could not start
}

// Info asks for the shell's PID; the reply is *InfoReply.
type Info struct{}

// InfoReply answers Info.
type InfoReply struct {
	ID  string
	PID int
}

// terminalSupervision: a terminal is never restarted by its supervisor, because a
// restart would start a fresh shell and silently lose the user's shell state; a failed
// PTY actor stops (killing its processes) and the client opens a new terminal.
func terminalSupervision() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(0, time.Second, func(any) actor.Directive {
		return actor.StopDirective
	})
}

// Props returns the props of a PTY actor. Spawn it as a child of the Location
// supervisor, which should stop (not restart) it on failure: see SupervisorStrategy.
func Props(cfg Config) (*actor.Props, error) {
	if cfg.Dir == "" {
		cfg.Dir = cfg.Location
	}
	if cfg.Dir == "" {
		return nil, errors.New("pty: Config.Dir or Config.Location is required")
	}
	if cfg.Shell == "" {
		cfg.Shell = os.Getenv("SHELL")
	}
	if cfg.Shell == "" {
		cfg.Shell = "/bin/sh"
	}
	if cfg.Rows == 0 {
		cfg.Rows = 24
	}
	if cfg.Cols == 0 {
		cfg.Cols = 80
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return actor.PropsFromProducer(func() actor.Actor { return &terminal{cfg: cfg} }), nil
}

// SupervisorStrategy is the strategy a parent should use for PTY actors.
func SupervisorStrategy() actor.SupervisorStrategy { return terminalSupervision() }

type terminal struct {
	cfg      Config
	subs     []*actor.PID
	ptmx     *os.File
	writes   chan write    // input and resizes, in order, for the writer goroutine
	queued   atomic.Int64  // input bytes in writes
	wrote    chan struct{} // closed when the writer goroutine ends
	pid      int
	waited   chan struct{} // closed when the shell is reaped
	readDone chan struct{}
	exit     *Exited // set by the reaping goroutine before it closes waited
	gotExit  bool
	gotEOF   bool
}

// write is one input or resize for the writer goroutine.
type write struct {
	data []byte
	size *cpty.Winsize
}

// maxQueuedInput bounds the input waiting for a program that does not read
// it; more is dropped (with a warning) rather than blocking anything.
const maxQueuedInput = 1 << 20

// Internal messages posted by the terminal's goroutines.
type (
	chunk     struct{ data []byte }
	finished  struct{}
	readerEOF struct{}
)

func (t *terminal) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		t.subs = append(t.subs, t.cfg.Subscribers...)
		if err := t.start(ctx); err != nil {
			t.cfg.Logger.Error("pty start failed", "terminal", t.cfg.ID, "err", err)
			t.publish(ctx, &Exited{ID: t.cfg.ID, ExitCode: -1, Err: err.Error()})
			ctx.Stop(ctx.Self())
		}
	case *Input:
		// A write blocks while the program does not read its input; the
		// writer goroutine takes it so that the actor (and its Stop) never
		// waits on the program.
		if t.ptmx != nil && len(m.Data) > 0 {
			if t.queued.Load()+int64(len(m.Data)) > maxQueuedInput {
				t.cfg.Logger.Warn("pty input dropped: the program is not reading it", "terminal", t.cfg.ID, "bytes", len(m.Data))
				return
			}
			t.queued.Add(int64(len(m.Data)))
			if !t.enqueue(write{data: m.Data}) {
				t.queued.Add(-int64(len(m.Data)))
			}
		}
	case *Resize:
		if t.ptmx != nil && m.Rows > 0 && m.Cols > 0 {
			t.enqueue(write{size: &cpty.Winsize{Rows: m.Rows, Cols: m.Cols}})
		}
	case *Subscribe:
		t.subs = append(t.subs, m.PID)
	case *Info:
		ctx.Respond(&InfoReply{ID: t.cfg.ID, PID: t.pid})
	case *chunk:
		t.publish(ctx, &Output{ID: t.cfg.ID, Data: m.data})
	case *finished:
		// The shell is gone: kill what is left of its session so the terminal closes,
		// then stop once the reader has also delivered the last output (readerEOF
		// follows every chunk in the mailbox; a Stop now would overtake them).
		t.gotExit = true
		killSession(t.pid)
		if t.gotEOF {
			ctx.Stop(ctx.Self())
		}
	case *readerEOF:
		t.gotEOF = true
		if t.gotExit {
			ctx.Stop(ctx.Self())
		}
	case *actor.Stopping:
		if t.shutdown() {
			t.publish(ctx, t.exit)
		} else if t.pid != 0 {
			t.publish(ctx, &Exited{ID: t.cfg.ID, PID: t.pid, ExitCode: -1, Signal: "killed"})
		}
	}
}

// enqueue hands w to the writer goroutine without waiting: when the queue
// is full (the program has stopped reading), w is dropped with a warning.
func (t *terminal) enqueue(w write) bool {
	select {
	case t.writes <- w:
		return true
	default:
		t.cfg.Logger.Warn("pty input or resize dropped: the program is not reading its input", "terminal", t.cfg.ID)
		return false
	}
}

// writer applies inputs and resizes in order until writes closes.
func (t *terminal) writer(ptmx *os.File) {
	defer close(t.wrote)
	for w := range t.writes {
		if w.size != nil {
			if err := setSize(ptmx, w.size); err != nil {
				t.cfg.Logger.Warn("pty resize failed", "terminal", t.cfg.ID, "err", err)
			}
			continue
		}
		_, err := ptmx.Write(w.data)
		t.queued.Add(-int64(len(w.data)))
		if err != nil {
			t.cfg.Logger.Warn("pty write failed", "terminal", t.cfg.ID, "err", err)
		}
	}
}

func (t *terminal) publish(ctx actor.Context, msg any) {
	for _, s := range t.subs {
		ctx.Send(s, msg)
	}
}

func (t *terminal) start(ctx actor.Context) error {
	var overlay map[string]string
	if t.cfg.Overlay != nil {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		overlay, err = t.cfg.Overlay.Overlay(c, t.cfg.Location, t.cfg.Dir)
		cancel()
		if err != nil {
			return fmt.Errorf("pty environment overlay for %s: %w", t.cfg.Dir, err)
		}
	}
	cmd := exec.Command(t.cfg.Shell, t.cfg.Args...)
	cmd.Dir = t.cfg.Dir
	cmd.Env = Environment(os.Environ(), t.cfg.Env, overlay)
	size := &cpty.Winsize{Rows: t.cfg.Rows, Cols: t.cfg.Cols}

	// Start and reap on one goroutine whose OS thread stays locked: Pdeathsig fires
	// when the forking thread exits, not when the process does.
	type startResult struct {
		ptmx *os.File
		err  error
	}
	started := make(chan startResult, 1)
	t.waited = make(chan struct{})
	self, system := ctx.Self(), ctx.ActorSystem()
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(t.waited)
		f, err := cpty.StartWithAttrs(cmd, size, &syscall.SysProcAttr{Setsid: true, Setctty: true, Pdeathsig: syscall.SIGKILL})
		started <- startResult{f, err}
		if err != nil {
			return
		}
		_ = cmd.Wait()
		ex := &Exited{ID: t.cfg.ID, PID: cmd.Process.Pid, ExitCode: cmd.ProcessState.ExitCode()}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ex.Signal = ws.Signal().String()
		}
		t.exit = ex // read by the actor only after waited is closed
		system.Root.Send(self, &finished{})
	}()
	res := <-started
	if res.err != nil {
		return fmt.Errorf("start %s in a pty in %s: %w", t.cfg.Shell, t.cfg.Dir, res.err)
	}
	ptmx, err := pollable(res.ptmx)
	if err != nil {
		killSession(cmd.Process.Pid)
		return fmt.Errorf("terminal descriptor: %w", err)
	}
	res.ptmx = ptmx
	t.ptmx, t.pid = ptmx, cmd.Process.Pid
	t.writes, t.wrote = make(chan write, 1024), make(chan struct{})
	go t.writer(res.ptmx)
	t.readDone = make(chan struct{})
	go func() {
		defer close(t.readDone)
		defer system.Root.Send(self, &readerEOF{})
		buf := make([]byte, 32<<10)
		for {
			n, err := res.ptmx.Read(buf)
			if n > 0 {
				system.Root.Send(self, &chunk{data: append([]byte(nil), buf[:n]...)})
			}
			if err != nil {
				return // EIO once the shell side is gone, or the descriptor closed
			}
		}
	}()
	return nil
}

// pollable returns the terminal's descriptor in non-blocking mode under
// Go's poller, and closes f. creack/pty's file is in blocking mode (its
// ioctls call Fd): a write to a program that stopped reading would block
// its thread for good, and Close would wait for it. Under the poller a
// waiting read or write ends when the descriptor closes.
func pollable(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	_ = f.Close()
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

// setSize resizes the terminal without Fd (which would make the
// descriptor blocking again).
func setSize(f *os.File, ws *cpty.Winsize) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: ws.Rows, Col: ws.Cols})
	}); err != nil {
		return err
	}
	return ierr
}

// shutdown kills every process of the terminal's session, reaps the shell and closes
// the descriptor. It reports whether the shell was reaped (t.exit is then set).
func (t *terminal) shutdown() bool {
	if t.pid == 0 {
		return false
	}
	killSession(t.pid)
	reaped := false
	select {
	case <-t.waited:
		reaped = true
	case <-time.After(5 * time.Second):
		t.cfg.Logger.Error("pty shell not reaped after SIGKILL", "terminal", t.cfg.ID, "pid", t.pid)
	}
	// A write blocked on the program ends with the terminal (EIO once its
	// processes are gone, or the closed descriptor).
	close(t.writes)
	_ = t.ptmx.Close()
	<-t.readDone
	<-t.wrote
	return reaped
}

// killSession sends SIGKILL to the session's own process group and to every process
// group of the session sid (an interactive shell puts jobs in their own groups).
func killSession(sid int) {
	_ = syscall.Kill(-sid, syscall.SIGKILL)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the ")" closing the command: state ppid pgrp session ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 4 {
			continue
		}
		if sess, _ := strconv.Atoi(f[3]); sess == sid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
