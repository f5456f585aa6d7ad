package supervisor

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

type boom struct{}
type incarnation struct{}

// counted reports each start of an incarnation and panics on demand.
type counted struct {
	name string
	ch   chan<- string
}

func (c *counted) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		c.ch <- c.name
	case boom:
		panic("boom")
	case incarnation:
		ctx.Respond(ctx.Self().Id)
	}
}

func newTree(t testing.TB, ch chan string) (*actor.ActorSystem, *Locations) {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	locs, err := New(system, Config{Children: []ChildSpec{
		{Name: "context", Props: func(dir string) *actor.Props {
			return actor.PropsFromProducer(func() actor.Actor { return &counted{name: "context", ch: ch} })
		}},
		{Name: "tools", Props: func(dir string) *actor.Props {
			return actor.PropsFromProducer(func() actor.Actor { return &counted{name: "tools", ch: ch} })
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locs.Stop)
	return system, locs
}

// expectStarts waits for the named children to start, in any order: siblings
// start concurrently.
func expectStarts(t *testing.T, ch chan string, want ...string) {
	t.Helper()
	missing := map[string]int{}
	for _, w := range want {
		missing[w]++
	}
	for range want {
		select {
		case got := <-ch:
			if missing[got] == 0 {
				t.Fatalf("unexpected start of %q while waiting for %v", got, missing)
			}
			missing[got]--
		case <-time.After(5 * time.Second):
			t.Fatalf("children never started: %v", missing)
		}
	}
}

func TestOneLocationPerCanonicalDirectory(t *testing.T) {
	ch := make(chan string, 100)
	_, locs := newTree(t, ch)
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	a, err := locs.Get(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := locs.Get(link + "/.")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Equal(b) {
		t.Fatalf("a symlink to the same directory got another Location: %v vs %v", a, b)
	}
	expectStarts(t, ch, "context", "tools")
	if _, err := locs.Get(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing directory got a Location")
	}
}

func TestFailingRegistryIsRestartedInPlace(t *testing.T) {
	ch := make(chan string, 100)
	system, locs := newTree(t, ch)
	dir := t.TempDir()
	tools, err := locs.Child(context.Background(), dir, "tools")
	if err != nil {
		t.Fatal(err)
	}
	expectStarts(t, ch, "context", "tools")
	system.Root.Send(tools, boom{})
	expectStarts(t, ch, "tools") // restarted, same PID
	again, err := locs.Child(context.Background(), dir, "tools")
	if err != nil || !again.Equal(tools) {
		t.Fatalf("after restart: %v, %v (want %v)", again, err, tools)
	}
	if _, err := system.Root.RequestFuture(tools, incarnation{}, 5*time.Second).Result(); err != nil {
		t.Fatalf("restarted registry does not answer: %v", err)
	}
}

func TestRegistryFailingTooOftenRestartsTheLocation(t *testing.T) {
	ch := make(chan string, 100)
	system, locs := newTree(t, ch)
	dir := t.TempDir()
	tools, err := locs.Child(context.Background(), dir, "tools")
	if err != nil {
		t.Fatal(err)
	}
	expectStarts(t, ch, "context", "tools")
	for i := 0; i < maxRestarts; i++ {
		system.Root.Send(tools, boom{})
		expectStarts(t, ch, "tools")
	}
	system.Root.Send(tools, boom{}) // one too many: the Location restarts with fresh children
	expectStarts(t, ch, "context", "tools")
}

func TestShortLivedChildIsStoppedNotRestarted(t *testing.T) {
	ch := make(chan string, 100)
	system, locs := newTree(t, ch)
	dir := t.TempDir()
	pty, err := locs.Spawn(dir, "pty", actor.PropsFromProducer(func() actor.Actor { return &counted{name: "pty", ch: ch} }))
	if err != nil {
		t.Fatal(err)
	}
	expectStarts(t, ch, "context", "tools", "pty")
	stopped := make(chan struct{})
	watcher := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			ctx.Watch(pty)
		case *actor.Terminated:
			if m.Who.Equal(pty) {
				close(stopped)
			}
		}
	}))
	defer system.Root.Stop(watcher)
	system.Root.Send(pty, boom{})
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("failed PTY child was not stopped")
	}
	select {
	case name := <-ch:
		t.Fatalf("%s restarted after a PTY failure", name)
	default:
	}
}
