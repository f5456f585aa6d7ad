package proc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readPID waits (bounded) for a file holding a PID written by the command.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func TestExitCodeOutputAndClosedStdin(t *testing.T) {
	dir := t.TempDir()
	out, err := Run(context.Background(), Spec{Command: "pwd; cat; echo err >&2; exit 7", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 7 {
		t.Fatalf("exit code %d", out.ExitCode)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if out.Output != real+"\nerr\n" {
		t.Fatalf("output %q", out.Output)
	}
}

func TestTimeoutKillsWholeGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	start := time.Now()
	out, err := Run(context.Background(), Spec{
		// The timeout must leave the shell time to start its job on a loaded machine.
		Command: "sleep 300 & echo $! > pid; echo started; wait",
		Dir:     dir, Timeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out.TimedOut || out.Signal != "terminated" {
		t.Fatalf("outcome %+v", out)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("timeout did not stop the command")
	}
	if pid := readPID(t, pidFile); !Gone(pid, 5*time.Second) {
		t.Fatalf("background sleep %d survived the timeout", pid)
	}
	if !strings.Contains(out.Output, "started") {
		t.Fatalf("output lost: %q", out.Output)
	}
}

func TestTermIgnoredEscalatesToKill(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan int, 1)
	go func() {
		// Cancel once the trap is installed.
		readPID(t, filepath.Join(dir, "pid"))
		cancel()
	}()
	out, err := Run(ctx, Spec{
		Command: "trap '' TERM; echo $$ > pid; while :; do sleep 0.05; done",
		Dir:     dir, KillGrace: 100 * time.Millisecond,
		Started: func(pid int) { started <- pid },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Cancelled || out.Signal != "killed" {
		t.Fatalf("outcome %+v", out)
	}
	if !Gone(<-started, 5*time.Second) {
		t.Fatal("leader alive")
	}
}

func TestBackgroundJobsDieWithTheLeader(t *testing.T) {
	dir := t.TempDir()
	out, err := Run(context.Background(), Spec{Command: "sleep 300 & echo $! > pid", Dir: dir})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("%+v %v", out, err)
	}
	if pid := readPID(t, filepath.Join(dir, "pid")); !Gone(pid, 5*time.Second) {
		t.Fatalf("background job %d leaked", pid)
	}
}

func TestOutputCapKeepsHeadAndTail(t *testing.T) {
	out, err := Run(context.Background(), Spec{
		Command: "echo BEGIN; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END", Dir: t.TempDir(), OutputCap: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.Output, "BEGIN\n") || !strings.HasSuffix(out.Output, "END\n") || out.Dropped != 100011-1000 {
		t.Fatalf("dropped %d, output %q", out.Dropped, out.Output)
	}
}

func TestMissingDirIsAStartError(t *testing.T) {
	if _, err := Run(context.Background(), Spec{Command: "true", Dir: "/nonexistent/dir"}); err == nil || !strings.Contains(err.Error(), "/nonexistent/dir") {
		t.Fatalf("err %v", err)
	}
}

func TestConfiguredShell(t *testing.T) {
	out, err := Run(context.Background(), Spec{Command: "echo $0", Dir: t.TempDir(), Shell: "/bin/bash"})
	if err != nil || strings.TrimSpace(out.Output) != "/bin/bash" {
		t.Fatalf("%q %v", out.Output, err)
	}
}

func TestWriterThatEscapedTheGroupDoesNotHangOrLoseOutput(t *testing.T) {
	dir := t.TempDir()
	out, err := Run(context.Background(), Spec{
		Command: `setsid sh -c 'echo escaped; echo $$ > esc.tmp; mv esc.tmp esc; exec sleep 300' & ` +
			`while [ ! -e esc ]; do sleep 0.01; done; echo leader`,
		Dir: dir, KillGrace: 100 * time.Millisecond,
	})
	esc := readPID(t, filepath.Join(dir, "esc"))
	t.Cleanup(func() { _ = syscall.Kill(esc, syscall.SIGKILL) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Output, "escaped\n") || !strings.Contains(out.Output, "leader\n") {
		t.Fatalf("output %q", out.Output)
	}
	if !Gone(esc, 10*time.Second) {
		t.Fatalf("the writer that left the group (%d) outlived the call", esc)
	}
}

// escapees starts two processes that leave the command's session: one through
// `setsid`, one as a daemon (double fork, the middle process exits at once, the
// grandchild calls setsid). Each writes its own PID to a file (setsid, daemon), then
// the command waits for both files and runs tail.
func escapees(tail string) string {
	return `setsid sh -c 'echo $$ > setsid.tmp; mv setsid.tmp setsid; exec sleep 600' & ` +
		`sh -c 'setsid sh -c "echo \$\$ > daemon.tmp; mv daemon.tmp daemon; exec sleep 600" & exit'; ` +
		`while [ ! -e setsid ] || [ ! -e daemon ]; do sleep 0.01; done; ` + tail
}

func TestSetsidAndDaemonsDieWithTheCall(t *testing.T) {
	dir := t.TempDir()
	out, err := Run(context.Background(), Spec{Command: escapees("echo done"), Dir: dir, Shell: "/bin/bash"})
	pids := []int{readPID(t, filepath.Join(dir, "setsid")), readPID(t, filepath.Join(dir, "daemon"))}
	t.Cleanup(func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	if err != nil || out.ExitCode != 0 || out.Output != "done\n" {
		t.Fatalf("%+v %v", out, err)
	}
	for _, p := range pids {
		if !Gone(p, 10*time.Second) {
			t.Fatalf("process %d left the session and outlived the call", p)
		}
	}
}

// TestSetsidAndDaemonsDieWithAKilledServer re-executes this test binary as a "server"
// whose bash call has started a setsid'd process and a daemon and is still running,
// SIGKILLs it, and checks that the shell and both escapees die with it.
func TestSetsidAndDaemonsDieWithAKilledServer(t *testing.T) {
	if dir := os.Getenv("SESSIONRT_PROC_SERVER_DIR"); dir != "" {
		_, _ = Run(context.Background(), Spec{
			Command: escapees("echo $$ > shell.tmp; mv shell.tmp shell; exec sleep 600"), Dir: dir, Shell: "/bin/bash",
		})
		t.Fatal("the call ended before the server was killed")
		return
	}
	dir := t.TempDir()
	server := exec.Command(os.Args[0], "-test.run=^TestSetsidAndDaemonsDieWithAKilledServer$")
	server.Env = append(os.Environ(), "SESSIONRT_PROC_SERVER_DIR="+dir)
	var log bytes.Buffer
	server.Stdout, server.Stderr = &log, &log
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range []string{"setsid", "daemon", "shell"} {
		pids = append(pids, readPID(t, filepath.Join(dir, f)))
	}
	t.Cleanup(func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	if err := server.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = server.Wait()
	for _, p := range pids {
		if !Gone(p, 30*time.Second) {
			t.Fatalf("process %d outlived the SIGKILLed server; server output:\n%s", p, log.String())
		}
	}
}
