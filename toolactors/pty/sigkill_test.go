package pty

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestServerSIGKILLKillsTerminal re-executes this test binary as a "server" holding a
// PTY whose shell runs a foreground command, SIGKILLs it, and checks that the shell
// (Pdeathsig) and the foreground command (terminal hang-up) die with it.
func TestServerSIGKILLKillsTerminal(t *testing.T) {
	if dir := os.Getenv("SESSIONRT_PTY_SERVER_DIR"); dir != "" {
		runPTYServer(t, dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerSIGKILLKillsTerminal$")
	cmd.Env = append(os.Environ(), "SESSIONRT_PTY_SERVER_DIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, filepath.Join(dir, "pids"), cmd, &out)
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("process %d not running before the kill", p)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, p := range pids {
		if !gone(p, 10*time.Second) {
			t.Fatalf("terminal process %d outlived the SIGKILLed server", p)
		}
	}
}

func runPTYServer(t *testing.T, dir string) {
	sys := actor.NewActorSystem()
	scr := newScreen()
	sub := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return scr }))
	props, err := Props(Config{ID: "k", Dir: dir, Shell: "/bin/sh", Subscribers: []*actor.PID{sub}})
	if err != nil {
		t.Fatal(err)
	}
	term := sys.Root.Spawn(props)
	sys.Root.Send(term, &Input{Data: []byte("echo SH:$$:; sh -c 'echo FG:$$:; exec sleep 300'\n")})
	shell := scr.waitFor(t, regexp.MustCompile(`SH:(\d+):`))
	fg := scr.waitFor(t, regexp.MustCompile(`FG:(\d+):`))
	tmp := filepath.Join(dir, "pids.tmp")
	if err := os.WriteFile(tmp, []byte(shell+" "+fg+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "pids")); err != nil {
		t.Fatal(err)
	}
	select {} // until SIGKILL
}

func readPIDs(t *testing.T, path string, cmd *exec.Cmd, out *bytes.Buffer) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			var pids []int
			for _, f := range strings.Fields(string(b)) {
				p, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, p)
			}
			return pids
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	t.Fatalf("child server wrote no pids; its output:\n%s", out.String())
	return nil
}
