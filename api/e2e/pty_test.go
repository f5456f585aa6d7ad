package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
)

// alive reports whether pid is a live process (a zombie is dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// Stopping the server, gracefully or with kill -9, leaves no terminal
// process behind: not the shells, not what runs in their foreground.
func TestServeStopLeavesNoTerminalProcess(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds and runs the binary; reads /proc")
	}
	bin := build(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := serve(t, bin, t.TempDir())
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := client.New(client.Config{BaseURL: srv.url, Token: token})
			if err != nil {
				t.Fatal(err)
			}
			loc := &wire.LocationRef{Directory: t.TempDir()}
			// A shell running a foreground job, and a program run directly.
			marker := fmt.Sprintf("%d", 40000+int(sig))
			sh, err := c.CreatePTY(ctx, wire.CreatePTYRequest{Command: "/bin/sh", Location: loc})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.InputPTY(ctx, sh.ID, []byte("sleep "+marker+"1\n")); err != nil {
				t.Fatal(err)
			}
			direct, err := c.CreatePTY(ctx, wire.CreatePTYRequest{Command: "sleep", Args: []string{marker + "2"}, Location: loc})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "the shell's foreground sleep to start", func() bool { return processWith("sleep " + marker + "1") })
			for _, pid := range []int{sh.PID, direct.PID} {
				if !alive(pid) {
					t.Fatalf("terminal process %d not running", pid)
				}
			}

			if err := srv.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the server to exit", func() bool { return !alive(srv.cmd.Process.Pid) })
			// The kernel kills them (Pdeathsig, the PTY's hang-up) as the
			// server dies, but their exit is asynchronous to the server's.
			for _, pid := range []int{sh.PID, direct.PID} {
				eventually(t, fmt.Sprintf("terminal process %d to die with the server (%s)", pid, sig), func() bool { return !alive(pid) })
			}
			eventually(t, "the shell's foreground job to die with its terminal", func() bool { return !processWith("sleep " + marker + "1") })
			if processWith("sleep " + marker + "2") {
				t.Errorf("sleep %s2 outlived the server (%s)", marker, sig)
			}
		})
	}
}
