package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
)

// cliArgsEnv makes the test binary run the CLI with these (JSON) arguments
// instead of the tests: a CLI process whose terminal the test controls.
const cliArgsEnv = "SESSIONRT_CLI_TEST_ARGS"

func TestMain(m *testing.M) {
	if a := os.Getenv(cliArgsEnv); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			os.Exit(99)
		}
		os.Exit(Main(args))
	}
	os.Exit(m.Run())
}

// ptyScreen collects what the CLI process writes to its terminal.
type ptyScreen struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	change chan struct{}
}

func (s *ptyScreen) copyFrom(f *os.File) {
	b := make([]byte, 4096)
	for {
		n, err := f.Read(b)
		if n > 0 {
			s.mu.Lock()
			s.buf.Write(b[:n])
			s.mu.Unlock()
			select {
			case s.change <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return // EIO once the CLI and its children closed the terminal
		}
	}
}

func (s *ptyScreen) waitFor(t *testing.T, re *regexp.Regexp) {
	t.Helper()
	deadline := time.After(ptyBackstop)
	for {
		s.mu.Lock()
		ok, text := re.Match(s.buf.Bytes()), s.buf.String()
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.change:
		case <-deadline:
			t.Fatalf("no %s on the CLI's terminal:\n%q", re, text)
		}
	}
}

// ptyBackstop bounds a wait for the CLI or the server: far beyond a slow
// step, so that only a stuck one reaches it (under -race at load 40 on two
// cores the CLI process took over 30 s to open its terminal on the server).
const ptyBackstop = 3 * time.Minute

// eventually polls cond (the server's view) until it holds, bounded by
// ptyBackstop.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(ptyBackstop)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPTYOpenIsAnInteractiveTerminalAndExitsWithTheRemoteStatus(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c, err := client.New(client.Config{BaseURL: rt.URL, Token: rt.Token})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*ptyBackstop)
	defer cancel()

	// The CLI's own stdin, stdout and stderr are a pseudo-terminal.
	ptmx, tty, err := cpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := cpty.Setsize(ptmx, &cpty.Winsize{Rows: 30, Cols: 90}); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"--data", t.TempDir(), "pty", "open", "--server", rt.URL, "--token", rt.Token, "--dir", rt.Loc, "--title", "cli", "--", "/bin/sh"})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), cliArgsEnv+"="+string(args))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true} // tty becomes its controlling terminal: it gets SIGWINCH
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()
	scr := &ptyScreen{change: make(chan struct{}, 1)}
	go scr.copyFrom(ptmx)

	// The terminal exists on the server with this terminal's size.
	var p wire.PTY
	eventually(t, "the CLI's terminal on the server", func() bool {
		list, err := c.PTYs(ctx)
		if err == nil && len(list) == 1 {
			p = list[0]
			return true
		}
		return false
	})
	if p.Size != (wire.PTYSize{Rows: 30, Cols: 90}) || p.Title != "cli" || !strings.HasSuffix(p.Cwd, rt.Loc) && p.Cwd != rt.Loc {
		t.Fatalf("terminal %+v: want 30×90, title cli, cwd %s", p, rt.Loc)
	}
	// Raw mode: the local terminal neither echoes nor edits lines.
	tio, err := unix.IoctlGetTermios(int(ptmx.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&(unix.ECHO|unix.ICANON) != 0 {
		t.Fatalf("local terminal not in raw mode: lflag %#x", tio.Lflag)
	}

	type_ := func(s string) {
		if _, err := ptmx.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	type_("echo round-$((20+1))\r")
	scr.waitFor(t, regexp.MustCompile(`round-21`))

	// A local resize reaches the remote terminal.
	if err := cpty.Setsize(ptmx, &cpty.Winsize{Rows: 50, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the remote terminal to be resized", func() bool {
		got, err := c.PTY(ctx, p.ID)
		return err == nil && got.Size == wire.PTYSize{Rows: 50, Cols: 120}
	})
	type_("stty size\r")
	scr.waitFor(t, regexp.MustCompile(`50 120`))

	type_("exit 3\r")
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("pty open ended with %v, want exit status 3; terminal:\n%s", err, scr.buf.String())
		}
	case <-time.After(ptyBackstop):
		t.Fatal("pty open did not exit after the remote shell did")
	}
	// The local terminal is restored, and the remote one removed.
	if tio, err = unix.IoctlGetTermios(int(ptmx.Fd()), unix.TCGETS); err != nil || tio.Lflag&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
		t.Fatalf("local terminal mode not restored: %+v, %v", tio, err)
	}
	if list, err := c.PTYs(ctx); err != nil || len(list) != 0 {
		t.Fatalf("terminals left on the server: %+v, %v", list, err)
	}
	if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("remote shell %d: %v, want gone", p.PID, err)
	}
}

func TestPTYListAndKill(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c, err := client.New(client.Config{BaseURL: rt.URL, Token: rt.Token})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := c.CreatePTY(ctx, wire.CreatePTYRequest{Command: "sleep", Args: []string{"300"}, Title: "napping"})
	if err != nil {
		t.Fatal(err)
	}
	run := cliRun{t: t, rt: rt, data: t.TempDir()}

	out := runPTY(run, 0, "pty", "list")
	if !strings.Contains(out, p.ID) || !strings.Contains(out, "running") || !strings.Contains(out, "sleep 300") || !strings.Contains(out, "napping") {
		t.Fatalf("pty list:\n%s", out)
	}
	var list []wire.PTY
	if err := json.Unmarshal([]byte(runPTY(run, 0, "pty", "list", "--json")), &list); err != nil || len(list) != 1 || list[0].PID != p.PID {
		t.Fatalf("pty list --json: %+v, %v", list, err)
	}

	var killed []wire.PTY
	if err := json.Unmarshal([]byte(runPTY(run, 0, "pty", "kill", "--json", p.ID)), &killed); err != nil || len(killed) != 1 || killed[0].Status != wire.PTYExited {
		t.Fatalf("pty kill --json: %+v, %v", killed, err)
	}
	if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d after pty kill: %v, want gone", p.PID, err)
	}
	runPTY(run, exitNotFound, "pty", "kill", p.ID)
}

// runPTY runs a pty command in-process and checks its exit code.
func runPTY(c cliRun, want int, args ...string) string {
	c.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--data", c.data}, args...)
	full = append(full, "--server", c.rt.URL, "--token", c.rt.Token)
	if code := run(full, &out, &errb); code != want {
		c.t.Fatalf("%v: exit %d, want %d; stderr %q", args, code, want, errb.String())
	}
	return out.String()
}

func TestPTYOpenWithPipedInputTypesItAndExitsWithTheStatus(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	args, _ := json.Marshal([]string{"--data", t.TempDir(), "pty", "open", "--server", rt.URL, "--token", rt.Token, "--", "/bin/sh"})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), cliArgsEnv+"="+string(args))
	cmd.Stdin = strings.NewReader("echo piped-$((2*3))\nexit 4\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Fatalf("pty open: %v, want exit status 4; output:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "piped-6") {
		t.Fatalf("output %q lacks the command's", out.String())
	}
}
