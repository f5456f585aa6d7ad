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

	"github.com/sessionrt/sessionrt/toolactors/proc/reaper"
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

// gated starts a call in dir that writes its shell's PID to file name, waits for the
// file "go" and prints name; the result arrives on the channel. At the end of the test
// the call is let go and waited for, so a failing test leaves no call running.
func gated(t *testing.T, dir, name string) <-chan Outcome {
	t.Helper()
	res := make(chan Outcome, 1)
	ended := make(chan struct{})
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
		}
	})
	go func() {
		defer close(ended)
		out, err := Run(context.Background(), Spec{
			Command: `echo $$ > ` + name + `.tmp; mv ` + name + `.tmp ` + name + `; until [ -e go ]; do sleep 0.01; done; echo ` + name,
			Dir:     dir,
		})
		if err != nil {
			t.Error(err)
		}
		res <- out
	}()
	return res
}

func TestEscapeesOfOneCallDieWhileAnotherRuns(t *testing.T) {
	other := t.TempDir()
	waiting := gated(t, other, "waiting")
	waitingPID := readPID(t, filepath.Join(other, "waiting"))

	dir := t.TempDir()
	out, err := Run(context.Background(), Spec{Command: escapees("echo done"), Dir: dir})
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
			t.Fatalf("process %d left the session and outlived its call while another call ran", p)
		}
	}
	if !Alive(waitingPID) {
		t.Fatal("the other call's shell died with the first call")
	}
	if err := os.WriteFile(filepath.Join(other, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := <-waiting; o.ExitCode != 0 || o.Output != "waiting\n" {
		t.Fatalf("the other call: %+v", o)
	}
}

// An escapee that also cleared its environment cannot be told apart from the processes
// of the calls running beside its own: it dies when they have all ended.
func TestEscapeeWithoutItsEnvironmentDiesWhenTheCallsBesideItEnd(t *testing.T) {
	other := t.TempDir()
	waiting := gated(t, other, "waiting")
	readPID(t, filepath.Join(other, "waiting"))

	dir := t.TempDir()
	out, err := Run(context.Background(), Spec{
		Command: `env -i setsid sh -c 'echo $$ > bare.tmp; mv bare.tmp bare; exec sleep 600' & ` +
			`while [ ! -e bare ]; do sleep 0.01; done; echo done`,
		// The escapee holds the output pipe: the call stops waiting for it after this.
		Dir: dir, KillGrace: 100 * time.Millisecond,
	})
	bare := readPID(t, filepath.Join(dir, "bare"))
	t.Cleanup(func() { _ = syscall.Kill(bare, syscall.SIGKILL) })
	if err != nil || out.ExitCode != 0 || out.Output != "done\n" {
		t.Fatalf("%+v %v", out, err)
	}
	if err := os.WriteFile(filepath.Join(other, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := <-waiting; o.ExitCode != 0 || o.Output != "waiting\n" {
		t.Fatalf("the other call: %+v", o)
	}
	if !Gone(bare, 10*time.Second) {
		t.Fatalf("the escapee without a marker (%d) outlived every call", bare)
	}
}

func TestConcurrentCallsKeepTheirOwnOutputAndStatus(t *testing.T) {
	const n = 24
	type result struct {
		i   int
		out Outcome
		err error
	}
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			out, err := Run(context.Background(), Spec{
				Command: "echo call " + strconv.Itoa(i) + "; sleep 0.0" + strconv.Itoa(i%10) + "; exit " + strconv.Itoa(i%7),
				Dir:     t.TempDir(),
			})
			results <- result{i, out, err}
		}(i)
	}
	for range n {
		r := <-results
		if r.err != nil || r.out.ExitCode != r.i%7 || r.out.Output != "call "+strconv.Itoa(r.i)+"\n" {
			t.Errorf("call %d: %+v %v", r.i, r.out, r.err)
		}
	}
}

func TestACallOutlivesNoWatchdogAndTheNextStartsOne(t *testing.T) {
	dir := t.TempDir()
	res := make(chan Outcome, 1)
	started := make(chan int, 1)
	go func() {
		out, err := Run(context.Background(), Spec{
			Command: "exec sleep 600", Dir: dir,
			Started: func(pid int) { started <- pid },
		})
		if err != nil {
			t.Error(err)
		}
		res <- out
	}()
	var shell int
	select {
	case shell = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not start")
	}
	t.Cleanup(func() { _ = syscall.Kill(shell, syscall.SIGKILL) })
	w, err := theWatchdog()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(w.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-res:
		if out.Signal != "killed" {
			t.Fatalf("outcome %+v", out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end with its watchdog")
	}
	if !Gone(shell, 10*time.Second) {
		t.Fatal("the shell outlived its watchdog")
	}
	select { // the call has ended: the server sees the watchdog gone a moment later
	case <-w.dead:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not see its watchdog die")
	}
	out, err := Run(context.Background(), Spec{Command: "echo again", Dir: dir})
	if err != nil || out.Output != "again\n" {
		t.Fatalf("%+v %v", out, err)
	}
}

// TestWithoutPidfds runs calls through a watchdog that learns of deaths by SIGCHLD, as
// on kernels without pidfds.
func TestWithoutPidfds(t *testing.T) {
	t.Setenv(reaper.NoPidfdsVar, "1")
	w, err := startWatchdog()
	if err != nil {
		t.Fatal(err)
	}
	current.Lock()
	saved := current.w
	current.w = w
	current.Unlock()
	t.Cleanup(func() {
		current.Lock()
		current.w = saved
		current.Unlock()
		w.sock.Close()
		select {
		case <-w.dead:
		case <-time.After(30 * time.Second):
			t.Error("the watchdog did not exit when its socket closed")
		}
	})
	t.Run("exit", TestExitCodeOutputAndClosedStdin)
	t.Run("term", TestTermIgnoredEscalatesToKill)
	t.Run("escapees", TestSetsidAndDaemonsDieWithTheCall)
	t.Run("beside", TestEscapeesOfOneCallDieWhileAnotherRuns)
	t.Run("concurrent", TestConcurrentCallsKeepTheirOwnOutputAndStatus)
	if current.w != w {
		t.Fatal("the calls did not run through the watchdog without pidfds")
	}
}

// A long command (a file written through a heredoc) reaches the shell whole: the
// request crosses the watchdog's connection in many reads.
func TestLongCommand(t *testing.T) {
	body := strings.Repeat("0123456789abcdef\n", 6000) // 102,000 bytes
	out, err := Run(context.Background(), Spec{
		Command: "cat > f <<'EOF'\n" + body + "EOF\nwc -c < f",
		Dir:     t.TempDir(),
	})
	if err != nil || out.ExitCode != 0 || strings.TrimSpace(out.Output) != strconv.Itoa(len(body)) {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestNULInCommandIsAStartError(t *testing.T) {
	if _, err := Run(context.Background(), Spec{Command: "echo a\x00b", Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("err %v", err)
	}
}
