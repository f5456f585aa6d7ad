package pty

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/toolactors/internal/scripttest"
)

// TestScripts runs the PTY scenario scripts in testdata/ (s57) against real
// PTY actors: /bin/sh in a real pseudo-terminal, in the Location $LOC.
// Regenerate with go test ./toolactors/pty -run TestScripts -rewrite and
// read the diff.
//
// Commands besides scripttest's file commands:
//
//	pty-open [id=t1] [rows=24 cols=80]   input lines: base|caller|overlay KEY=VALUE…
//	    base values go into the server's environment, caller values into
//	    Config.Env, overlay values are what the host overlay returns. It
//	    waits until the shell reads its input, then turns the terminal's echo
//	    and the prompt off so that a command's output is only its own.
//	pty-run                              the input is one command line: its output
//	pty-resize rows=40 cols=100
//	pty-stop                             stop the actor; is the shell gone at once; its Exited
//
// Output comes back with the terminal's \r\n as \n and /dev/pts/N as
// /dev/pts/N.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := &ptyEnv{terms: map[string]*openTerm{}}
		e.names.Add("$LOC", scripttest.Dir(t))
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		e.sys = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
		t.Cleanup(func() {
			for _, o := range e.terms {
				_ = e.sys.Root.StopFuture(o.pid).Wait()
			}
		})
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return e.handle(t, td)
		})
	})
}

type ptyEnv struct {
	names scripttest.Names
	sys   *actor.ActorSystem
	terms map[string]*openTerm
	runs  int
}

// openTerm is one PTY actor and the screen that subscribes to it.
type openTerm struct {
	pid    *actor.PID
	screen *screen
	mark   int // output before mark has been shown

	mu       sync.Mutex
	overlays []string // the overlay's calls
}

const waitLimit = 15 * time.Second

var ptsName = regexp.MustCompile(`/dev/pts/\d+`)

func (e *ptyEnv) handle(t *testing.T, td *datadriven.TestData) string {
	if out, ok := scripttest.Files(t, td, &e.names); ok {
		return out
	}
	id := "t1"
	td.MaybeScanArgs(t, "id", &id)
	o := e.terms[id]
	if td.Cmd != "pty-open" && o == nil {
		t.Fatalf("%s: no terminal %s", td.Pos, id)
	}
	switch td.Cmd {
	case "pty-open":
		return e.open(t, td, id)
	case "pty-run":
		e.runs++
		// The shell prints the sentinel; typed, it would read END_""n.
		e.send(o, fmt.Sprintf("%s; echo __END_\"\"%d\n", strings.TrimSpace(td.Input), e.runs))
		return e.until(t, o, regexp.MustCompile(fmt.Sprintf(`(?m)^__END_%d\r?\n`, e.runs)))
	case "pty-resize":
		var rows, cols uint16
		td.ScanArgs(t, "rows", &rows)
		td.ScanArgs(t, "cols", &cols)
		e.sys.Root.Send(o.pid, &Resize{Rows: rows, Cols: cols})
		return ""
	case "pty-stop":
		res, err := e.sys.Root.RequestFuture(o.pid, &Info{}, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		shell := res.(*InfoReply).PID
		if err := e.sys.Root.StopFuture(o.pid).Wait(); err != nil {
			t.Fatal(err)
		}
		delete(e.terms, id)
		var b strings.Builder
		// Stopped means killed and reaped: the shell is gone at once.
		if alive(shell) {
			fmt.Fprintf(&b, "stopped; shell: ALIVE\n")
		} else {
			fmt.Fprintf(&b, "stopped; shell: gone\n")
		}
		select {
		case ex := <-o.screen.exited:
			who := "another process"
			if ex.PID == shell {
				who = "the shell"
			}
			fmt.Fprintf(&b, "exited %s: %s, exit code %d, signal %q, error %q\n", ex.ID, who, ex.ExitCode, ex.Signal, ex.Err)
		case <-time.After(waitLimit):
			b.WriteString("no Exited message\n")
		}
		return b.String()
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

func (e *ptyEnv) open(t *testing.T, td *datadriven.TestData, id string) string {
	o := &openTerm{screen: newScreen()}
	cfg := Config{ID: id, Location: e.names.Dir("$LOC"), Shell: "/bin/sh", Env: map[string]string{}}
	td.MaybeScanArgs(t, "rows", &cfg.Rows)
	td.MaybeScanArgs(t, "cols", &cfg.Cols)
	overlay := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch f[0] {
			case "base":
				t.Setenv(k, v)
			case "caller":
				cfg.Env[k] = v
			case "overlay":
				overlay[k] = v
			default:
				t.Fatalf("%s: %q: want base, caller or overlay", td.Pos, l)
			}
		}
	}
	cfg.Overlay = EnvOverlayFunc(func(_ context.Context, location, dir string) (map[string]string, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.overlays = append(o.overlays, fmt.Sprintf("location %s, dir %s", location, dir))
		return overlay, nil
	})
	sub := e.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return o.screen }))
	cfg.Subscribers = []*actor.PID{sub}
	props, err := Props(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o.pid = e.sys.Root.Spawn(props)
	e.terms[id] = o
	// Echo off and no prompts: what a command prints is then all that
	// follows it. The kernel echoes this line itself (the shell may not have
	// started yet), so the sentinel is split in it.
	e.send(o, "stty -echo; PS1=''; PS2=''; echo __READ\"\"Y\n")
	// Not anchored: the first prompt may come between the echo and the
	// output.
	e.until(t, o, regexp.MustCompile(`__READY\r?\n`))
	o.mu.Lock()
	defer o.mu.Unlock()
	return e.names.Normalize(fmt.Sprintf("opened %s; the overlay was asked for %s\n", id, strings.Join(o.overlays, "; ")))
}

func (e *ptyEnv) send(o *openTerm, s string) {
	e.sys.Root.Send(o.pid, &Input{Data: []byte(s)})
}

// until waits, bounded, for sentinel in the output after the mark and
// returns the output before it.
func (e *ptyEnv) until(t *testing.T, o *openTerm, sentinel *regexp.Regexp) string {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		o.screen.mu.Lock()
		all := o.screen.buf.String()
		o.screen.mu.Unlock()
		if loc := sentinel.FindStringIndex(all[o.mark:]); loc != nil {
			out := all[o.mark : o.mark+loc[0]]
			o.mark += loc[1]
			out = strings.ReplaceAll(out, "\r\n", "\n")
			return e.names.Normalize(ptsName.ReplaceAllString(out, "/dev/pts/N"))
		}
		select {
		case <-o.screen.change:
		case <-deadline:
			t.Fatalf("no %s in the terminal's output within %s:\n%q", sentinel, waitLimit, all[o.mark:])
		}
	}
}
