package ptys

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/supervisor"
)

func newHub(t *testing.T, cfg Config) *Hub {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	locs, err := supervisor.New(sys, supervisor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Locations = locs
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); locs.Stop() })
	return h
}

// readAll reads a terminal's output to its end (bounded by the test's clock).
func readAll(t *testing.T, r *Reader) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	for {
		c, err := r.Next(ctx, 1<<10)
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatalf("read after %q: %v", b.String(), err)
		}
		b.Write(c.Data)
	}
}

func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

func TestSlowReaderIsCutAndTheTerminalRunsOn(t *testing.T) {
	h := newHub(t, Config{Scrollback: 64})
	in, err := h.Create(context.Background(), Spec{Location: t.TempDir(), Command: "/bin/sh",
		Args: []string{"-c", "stty -echo; read x; head -c 1000 /dev/zero | tr '\\0' x; exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := h.Reader(in.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Input(in.ID, []byte("go\n")); err != nil {
		t.Fatal(err)
	}
	// Nobody reads: the program still writes everything and exits.
	term, _ := h.get(in.ID)
	select {
	case <-term.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the terminal did not finish while its reader was not reading")
	}
	_, err = slow.Next(context.Background(), 1<<10)
	var cut *CutError
	if !errors.As(err, &cut) || !errors.Is(err, ErrCut) || cut.Offset != 0 || cut.Start < 1000-64 {
		t.Fatalf("slow reader: %v, want a cut at offset 0 with the ring starting past %d", err, 1000-64)
	}
	got, _ := h.Get(in.ID)
	if got.Running || got.ExitCode != 7 || got.Offset < 1000 {
		t.Fatalf("terminal after exit: %+v", got)
	}
}

func TestCloseKillsEveryTerminal(t *testing.T) {
	h := newHub(t, Config{})
	var pids []int
	for range 2 {
		in, err := h.Create(context.Background(), Spec{Location: t.TempDir(), Command: "sleep", Args: []string{"300"}})
		if err != nil {
			t.Fatal(err)
		}
		if in.PID == 0 || processGone(in.PID) {
			t.Fatalf("terminal %+v has no running process", in)
		}
		pids = append(pids, in.PID)
	}
	h.Close()
	for _, pid := range pids {
		if !processGone(pid) {
			t.Fatalf("process %d survived Close", pid)
		}
	}
	if _, err := h.Create(context.Background(), Spec{Location: t.TempDir()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Create after Close: %v, want ErrClosed", err)
	}
}

func TestBadSpecsNameTheField(t *testing.T) {
	h := newHub(t, Config{})
	dir := t.TempDir()
	file := dir + "/f"
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec  Spec
		field string
	}{
		{Spec{}, "location"},
		{Spec{Location: dir + "/missing"}, "location"},
		{Spec{Location: dir, Dir: "missing"}, "cwd"},
		{Spec{Location: dir, Command: "no-such-command-xyz"}, "command"},
		{Spec{Location: dir, Command: file}, "command"},
		{Spec{Location: dir, Env: map[string]string{"A=B": "x"}}, "env"},
	} {
		_, err := h.Create(context.Background(), c.spec)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != c.field {
			t.Errorf("%+v: %v, want an InvalidError on %q", c.spec, err, c.field)
		}
	}
	if len(h.List()) != 0 {
		t.Fatalf("failed creates left terminals: %+v", h.List())
	}
}

func TestQuickExitIsReportedNotLost(t *testing.T) {
	h := newHub(t, Config{})
	in, err := h.Create(context.Background(), Spec{Location: t.TempDir(), Command: "/bin/sh", Args: []string{"-c", "echo bye; exit 5"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.Reader(in.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out := readAll(t, r); !strings.Contains(out, "bye") {
		t.Fatalf("output %q", out)
	}
	if got := r.Info(); got.Running || got.ExitCode != 5 {
		t.Fatalf("exit %+v", got)
	}
}

func TestMaxRunningRefusesMoreTerminalsUntilOneEnds(t *testing.T) {
	h := newHub(t, Config{MaxRunning: 2})
	loc := t.TempDir()
	var ids []string
	for range 2 {
		in, err := h.Create(context.Background(), Spec{Location: loc, Command: "sleep", Args: []string{"300"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	if _, err := h.Create(context.Background(), Spec{Location: loc}); !errors.Is(err, ErrTooMany) {
		t.Fatalf("third terminal: %v, want ErrTooMany", err)
	}
	if _, err := h.Remove(context.Background(), ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(context.Background(), Spec{Location: loc, Command: "sleep", Args: []string{"300"}}); err != nil {
		t.Fatalf("after a remove: %v", err)
	}
}

func TestRemoveKillsAProgramThatStoppedReadingItsInput(t *testing.T) {
	h := newHub(t, Config{})
	in, err := h.Create(context.Background(), Spec{Location: t.TempDir(), Command: "/bin/sh", Args: []string{"-c", "stty raw -echo; echo ready; exec sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := h.Reader(in.ID, 0)
	if _, err := r.Next(context.Background(), 16); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := h.Input(in.ID, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.Remove(context.Background(), in.ID)
	if err != nil || got.Running {
		t.Fatalf("remove: %+v, %v", got, err)
	}
	if !processGone(in.PID) {
		t.Fatalf("program %d survived its removal", in.PID)
	}
}
