package pty

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestEnvironmentPrecedence: caller values, then the host overlay, then the forced
// invariants, which the spec names: "PTY creation merges caller values, then the host
// overlay, then Core-forced terminal invariants such as TERM and OPENCODE_TERMINAL"
// (glossary 000). Neither a caller nor the overlay can unset them.
func TestEnvironmentPrecedence(t *testing.T) {
	env := Environment(
		[]string{"A=base", "B=base", "C=base", "D=base", "TERM=vt100"},
		map[string]string{"B": "caller", "C": "caller", "TERM": "dumb", "OPENCODE_TERMINAL": "0"},
		map[string]string{"C": "host", TerminalEnvVar: "0"},
	)
	want := []string{"A=base", "B=caller", "C=host", "D=base", "OPENCODE_TERMINAL=1", TerminalEnvVar + "=1", "TERM=" + ForcedTERM}
	if strings.Join(env, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v\nwant %v", env, want)
	}
}

// screen collects a terminal's output for a test.
type screen struct {
	mu     sync.Mutex
	buf    strings.Builder
	change chan struct{}
	exited chan *Exited
}

func newScreen() *screen {
	return &screen{change: make(chan struct{}, 1), exited: make(chan *Exited, 1)}
}

func (s *screen) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Output:
		s.mu.Lock()
		s.buf.Write(m.Data)
		s.mu.Unlock()
		select {
		case s.change <- struct{}{}:
		default:
		}
	case *Exited:
		s.exited <- m
	}
}

// waitFor waits (bounded) until the output matches re and returns the first submatch.
func (s *screen) waitFor(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		s.mu.Lock()
		m := re.FindStringSubmatch(s.buf.String())
		text := s.buf.String()
		s.mu.Unlock()
		if m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		select {
		case <-s.change:
		case <-deadline:
			t.Fatalf("no match for %s in terminal output:\n%s", re, text)
		}
	}
}

func TestShellExitStopsTheActorAfterLastOutput(t *testing.T) {
	sys := actor.NewActorSystem()
	scr := newScreen()
	sub := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return scr }))
	props, err := Props(Config{ID: "t2", Dir: t.TempDir(), Shell: "/bin/sh", Args: []string{"-c", "echo last words; exit 4"}, Subscribers: []*actor.PID{sub}})
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Spawn(props)
	select {
	case ex := <-scr.exited:
		if ex.ExitCode != 4 {
			t.Fatalf("exit %+v", ex)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no Exited message")
	}
	scr.waitFor(t, regexp.MustCompile("last words"))
}

func TestMissingShellReportsExitWithError(t *testing.T) {
	sys := actor.NewActorSystem()
	scr := newScreen()
	sub := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return scr }))
	props, err := Props(Config{ID: "t3", Dir: t.TempDir(), Shell: "/no/such/shell", Subscribers: []*actor.PID{sub}})
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Spawn(props)
	ex := <-scr.exited
	if !strings.Contains(ex.Err, "/no/such/shell") {
		t.Fatalf("exit %+v", ex)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func gone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// A program that stops reading its input must not hold the actor: input
// queued for it is bounded, and stopping still kills it at once.
func TestStopWhileTheProgramIgnoresItsInput(t *testing.T) {
	sys := actor.NewActorSystem()
	scr := newScreen()
	sub := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return scr }))
	props, err := Props(Config{ID: "t4", Dir: t.TempDir(), Shell: "/bin/sh",
		Args: []string{"-c", "stty raw -echo; echo ready; exec sleep 300"}, Subscribers: []*actor.PID{sub}})
	if err != nil {
		t.Fatal(err)
	}
	term := sys.Root.Spawn(props)
	scr.waitFor(t, regexp.MustCompile("ready"))
	for range 4 {
		sys.Root.Send(term, &Input{Data: make([]byte, 1<<20)})
	}
	res, err := sys.Root.RequestFuture(term, &Info{}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("the actor does not answer while input waits: %v", err)
	}
	pid := res.(*InfoReply).PID
	if err := sys.Root.StopFuture(term).Wait(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("program %d alive after its PTY actor stopped", pid)
	}
}
