package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
)

// PTYCmd groups the terminal commands.
type PTYCmd struct {
	Open PTYOpenCmd `cmd:"" help:"Open an interactive terminal on the server and attach this one to it."`
	List PTYListCmd `cmd:"" help:"List the server's terminals."`
	Kill PTYKillCmd `cmd:"" help:"Kill terminals (every process in them) and print how they ended."`
}

// PTYOpenCmd runs a program in a terminal on the server, attached to this
// terminal.
type PTYOpenCmd struct {
	ClientFlags
	Dir     string   `help:"Location directory the terminal runs in (default: the server's default Location)." type:"path"`
	Title   string   `help:"Title shown by pty list."`
	Command []string `arg:"" optional:"" passthrough:"" help:"Program and arguments, after -- (default: the server's shell)."`
}

// Help is kong's detailed help of pty open.
func (c *PTYOpenCmd) Help() string {
	return `This terminal goes into raw mode: every key (Ctrl-C too) goes to the remote
program, window resizes follow, and the command exits with the remote
program's exit status (128+N when a signal N ended it). The terminal is
removed on the server when the program ends or this command is stopped.
Standard input that is not a terminal is sent as typed, then Ctrl-D.

Examples:
  sessionrt pty open
  sessionrt pty open --dir ~/src/project -- htop
  sessionrt pty open -- bash -c 'make test'; echo "exit $?"`
}

func (c *PTYOpenCmd) Run(g *Globals) error {
	cl, err := c.client(g)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP, os.Interrupt)
	defer stop()

	req := wire.CreatePTYRequest{Title: c.Title}
	if c.Dir != "" {
		req.Location = &wire.LocationRef{Directory: c.Dir}
	}
	if len(c.Command) > 0 && c.Command[0] == "--" {
		c.Command = c.Command[1:]
	}
	if len(c.Command) > 0 {
		req.Command, req.Args = c.Command[0], c.Command[1:]
	}
	in := int(os.Stdin.Fd())
	interactive := isTerminal(in)
	if interactive {
		if rows, cols, err := termSize(in); err == nil && rows > 0 && cols > 0 {
			req.Size = &wire.PTYSize{Rows: rows, Cols: cols}
		}
		// Raw before the terminal exists: keys typed meanwhile wait in the
		// local terminal and go over unchanged.
		restore, err := makeRaw(in)
		if err != nil {
			return fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		defer restore()
	}

	p, err := cl.CreatePTY(ctx, req)
	if err != nil {
		return failed("create terminal", err)
	}
	// However this ends, the terminal does not outlive the command.
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_, _ = cl.RemovePTY(rctx, p.ID)
	}()

	conn, err := cl.ConnectPTY(ctx, p.ID, 0)
	if err != nil {
		return failed("connect terminal", err)
	}
	var cur atomic.Pointer[client.PTYConn]
	cur.Store(conn)
	go forwardInput(&cur, os.Stdin, !interactive)
	if interactive {
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-winch:
					if rows, cols, err := termSize(in); err == nil && rows > 0 && cols > 0 {
						_, _ = cl.ResizePTY(ctx, p.ID, rows, cols)
					}
				}
			}
		}()
	}

	out := g.out()
	for {
		f, err := conn.Next()
		if err != nil {
			conn.Close()
			if ctx.Err() != nil {
				return &exitError{code: exitFailure, err: errors.New("stopped; the terminal was killed")}
			}
			return failed("terminal connection", err)
		}
		if f.Control == nil {
			if _, err := out.Write(f.Output); err != nil {
				return err
			}
			continue
		}
		switch f.Control.Type {
		case wire.EventCut:
			// This side fell a whole scrollback behind: go on from what
			// the server still has.
			conn.Close()
			fmt.Fprintf(g.errOut(), "\r\n[sessionrt: output from byte %d to %d was lost: the terminal was too slow to read]\r\n", f.Control.Cut.Offset, f.Control.Cut.Start)
			if conn, err = cl.ConnectPTY(ctx, p.ID, f.Control.Cut.Start); err != nil {
				return failed("reconnect terminal", err)
			}
			cur.Store(conn)
		case wire.EventPTYExited:
			conn.Close()
			return exitStatus(*f.Control.PTY)
		}
	}
}

// forwardInput types what r gives into the terminal's current connection
// until r ends; after the end of a non-terminal input it sends Ctrl-D.
func forwardInput(cur *atomic.Pointer[client.PTYConn], r io.Reader, eot bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = cur.Load().Write(buf[:n]) // a dropped connection ends the command
		}
		if err != nil {
			if eot && errors.Is(err, io.EOF) {
				_, _ = cur.Load().Write([]byte{4})
			}
			return
		}
	}
}

// quietExit is an exit status passed through without a message.
type quietExit int

func (q quietExit) Error() string { return "exit status " + strconv.Itoa(int(q)) }

// exitStatus is the remote program's exit as this command's: its code, or
// 128+N for signal N, like a shell.
func exitStatus(p wire.PTY) error {
	if p.Error != "" {
		return &exitError{code: exitFailure, err: errors.New(p.Error)}
	}
	code := 0
	if p.ExitCode != nil {
		code = *p.ExitCode
	}
	if code < 0 {
		code = 128 + signalNumber(p.Signal)
	}
	if code == 0 {
		return nil
	}
	return quietExit(code)
}

// signalNumber maps Go's name of a signal ("killed", "hangup") back to
// its number; unknown names count as SIGKILL.
func signalNumber(name string) int {
	for n := 1; n < 32; n++ {
		if syscall.Signal(n).String() == name {
			return n
		}
	}
	return int(syscall.SIGKILL)
}

// PTYListCmd lists the server's terminals.
type PTYListCmd struct {
	ClientFlags
}

func (c *PTYListCmd) Help() string {
	return `Examples:
  sessionrt pty list
  sessionrt pty list --json`
}

func (c *PTYListCmd) Run(g *Globals) error {
	cl, err := c.client(g)
	if err != nil {
		return err
	}
	list, err := cl.PTYs(context.Background())
	if err != nil {
		return failed("list terminals", err)
	}
	if c.JSON {
		return printJSON(g.out(), list)
	}
	rows := [][]string{{"ID", "STATUS", "PID", "SIZE", "COMMAND", "CWD", "TITLE", "CREATED"}}
	for _, p := range list {
		rows = append(rows, []string{p.ID, ptyStatus(p), strconv.Itoa(p.PID), fmt.Sprintf("%dx%d", p.Size.Cols, p.Size.Rows),
			oneLine(strings.Join(append([]string{filepath.Base(p.Command)}, p.Args...), " "), 40), p.Cwd, oneLine(p.Title, 30), msTime(p.Time.Created)})
	}
	return table(g.out(), rows)
}

func ptyStatus(p wire.PTY) string {
	switch {
	case p.Status != wire.PTYExited:
		return p.Status
	case p.Error != "":
		return "failed"
	case p.Signal != "":
		return "exited (" + p.Signal + ")"
	case p.ExitCode != nil:
		return fmt.Sprintf("exited (%d)", *p.ExitCode)
	}
	return p.Status
}

// PTYKillCmd kills terminals.
type PTYKillCmd struct {
	ClientFlags
	IDs []string `arg:"" name:"id" help:"Terminal IDs (see pty list)."`
}

func (c *PTYKillCmd) Help() string {
	return `Every process of the terminal is killed; the command returns once the
program was reaped. Exits 3 when a terminal does not exist.

Examples:
  sessionrt pty kill pty_019b…
  sessionrt pty kill --json pty_019b…`
}

func (c *PTYKillCmd) Run(g *Globals) error {
	cl, err := c.client(g)
	if err != nil {
		return err
	}
	var done []wire.PTY
	var firstErr error
	for _, id := range c.IDs {
		p, err := cl.RemovePTY(context.Background(), id)
		if err != nil {
			if firstErr == nil {
				firstErr = failed("kill "+id, err)
			} else {
				fmt.Fprintf(g.errOut(), "sessionrt: kill %s: %v\n", id, err)
			}
			continue
		}
		done = append(done, p)
	}
	if c.JSON {
		if done == nil {
			done = []wire.PTY{}
		}
		if err := printJSON(g.out(), done); err != nil {
			return err
		}
	} else {
		for _, p := range done {
			fmt.Fprintf(g.out(), "%s %s (pid %d)\n", p.ID, ptyStatus(p), p.PID)
		}
	}
	return firstErr
}
