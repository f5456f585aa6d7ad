package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/sessionrt/sessionrt/toolactors/proc/reaper"
)

// watchdog is the server's end of its tool watchdog (package reaper): one process,
// started by the first call and again by the first call after it died.
type watchdog struct {
	sock *os.File      // SOCK_SEQPACKET; the watchdog reads end of file when it closes
	dead chan struct{} // closed once the watchdog has exited
	pid  int
}

var current struct {
	sync.Mutex
	w *watchdog
}

// errGone: the watchdog died, and the server has not yet seen it exit.
var errGone = errors.New("the tool watchdog is gone")

// forget makes the next call start a new watchdog if w is the current one.
func forget(w *watchdog) {
	current.Lock()
	defer current.Unlock()
	if current.w == w {
		current.w = nil
	}
}

// theWatchdog returns the running watchdog, starting one if there is none.
func theWatchdog() (*watchdog, error) {
	current.Lock()
	defer current.Unlock()
	if w := current.w; w != nil {
		select {
		case <-w.dead:
		default:
			return w, nil
		}
	}
	w, err := startWatchdog()
	if err != nil {
		return nil, err
	}
	current.w = w
	return w, nil
}

func startWatchdog() (*watchdog, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("start the tool watchdog: socket: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "tool-watchdog")
	defer theirs.Close()
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		return nil, fmt.Errorf("start the tool watchdog: socket: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "tool-watchdog")
	// The watchdog is this very binary (package reaper's init takes over when argv[0]
	// names it); /proc/self/exe still works when the file was replaced or deleted.
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{reaper.Name},
		Dir:        "/",
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{theirs}, // reaper.SocketFD
		// Its own process group: a terminal's signals never reach it. No Pdeathsig:
		// it must outlive the server long enough to kill what is left.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, fmt.Errorf("start the tool watchdog: %w", err)
	}
	w := &watchdog{sock: ours, dead: make(chan struct{}), pid: cmd.Process.Pid}
	go func() {
		// The watchdog never writes: the read returns when it is gone.
		var b [1]byte
		for {
			if _, err := ours.Read(b[:]); err != nil {
				break
			}
		}
		_ = cmd.Wait()
		close(w.dead)
	}()
	return w, nil
}

// open starts a call: it hands the watchdog the call's connection and out (which the
// caller may close once open returns) and writes the request on it.
func (w *watchdog) open(out *os.File, shell, command, dir string, env []string) (*os.File, error) {
	req, err := reaper.EncodeRequest(shell, command, dir, env)
	if err != nil {
		return nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("call socket: %w", err)
	}
	conn := os.NewFile(uintptr(fds[0]), "tool-call")
	// Fd puts the pipe in blocking mode, as the shell expects of its stdout.
	rights := syscall.UnixRights(fds[1], int(out.Fd()))
	rc, err := w.sock.SyscallConn()
	if err == nil {
		werr := rc.Write(func(fd uintptr) bool {
			err = syscall.Sendmsg(int(fd), []byte{'c'}, rights, nil, 0)
			return err != syscall.EAGAIN
		})
		if err == nil {
			err = werr
		}
	}
	syscall.Close(fds[1])
	if err != nil {
		conn.Close()
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return nil, errGone
		}
		return nil, fmt.Errorf("hand the call to the tool watchdog: %w", err)
	}
	if _, err := conn.Write(req); err != nil {
		conn.Close()
		return nil, fmt.Errorf("send the command to the tool watchdog: %w", err)
	}
	return conn, nil
}

// closeWrite tells the watchdog to kill the call now; the status can still be read.
func closeWrite(conn *os.File) {
	if rc, err := conn.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_WR) })
	}
}
