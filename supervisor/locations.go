package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Config configures the Location tree.
type Config struct {
	// Children are started in every Location, in order.
	Children []ChildSpec
	// Logger receives supervision diagnostics; nil discards them.
	Logger *slog.Logger
	// AskTimeout bounds each request to a Location; default 10 s.
	AskTimeout time.Duration
}

// Locations creates one Location supervisor per canonical directory, on demand.
type Locations struct {
	system *actor.ActorSystem
	cfg    Config
	parent *actor.PID

	mu    sync.Mutex
	byDir map[string]*actor.PID
	// byPath remembers what a directory as callers spell it resolved to, so
	// that a drain (two Gets per turn) pays two stats instead of an lstat per
	// path element; see resolve for when an entry is trusted.
	byPath map[string]resolved
}

// resolved is a remembered Canonical result: the canonical path and the
// directory it named then.
type resolved struct {
	canon string
	dir   os.FileInfo
}

// New starts the Locations parent under the actor system's root.
func New(system *actor.ActorSystem, cfg Config) (*Locations, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AskTimeout <= 0 {
		cfg.AskTimeout = 10 * time.Second
	}
	l := &Locations{system: system, cfg: cfg, byDir: map[string]*actor.PID{}, byPath: map[string]resolved{}}
	// A Location that escalates (its children keep failing) is restarted
	// with a fresh set of children; one that fails more than 5 times a
	// minute is stopped and recreated on the next use.
	props := actor.PropsFromProducer(func() actor.Actor { return &locationsParent{owner: l} },
		actor.WithSupervisor(actor.NewOneForOneStrategy(5, time.Minute, func(any) actor.Directive { return actor.RestartDirective })))
	pid, err := system.Root.SpawnNamed(props, "locations")
	if err != nil {
		return nil, fmt.Errorf("start locations: %w", err)
	}
	l.parent = pid
	return l, nil
}

// Canonical resolves dir to the absolute, symlink-free path that identifies a
// Location. The directory must exist.
func Canonical(dir string) (string, error) {
	real, _, err := canonical(dir)
	return real, err
}

// canonical is Canonical that also returns the directory's FileInfo.
func canonical(dir string) (string, os.FileInfo, error) {
	if dir == "" {
		return "", nil, errors.New("location: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("location %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, fmt.Errorf("location %q: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", nil, fmt.Errorf("location %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", nil, fmt.Errorf("location %q: not a directory", dir)
	}
	return real, fi, nil
}

// Get returns the Location supervisor of dir, starting it if needed.
func (l *Locations) Get(dir string) (*actor.PID, error) {
	if pid := l.remembered(dir); pid != nil {
		return pid, nil
	}
	canon, fi, err := canonical(dir)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if filepath.IsAbs(dir) { // a relative one depends on the working directory
		l.byPath[dir] = resolved{canon: canon, dir: fi}
	}
	if pid, ok := l.byDir[canon]; ok {
		return pid, nil
	}
	res, err := l.system.Root.RequestFuture(l.parent, &spawnLocation{dir: canon}, l.cfg.AskTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("start location %s: %w", canon, err)
	}
	pid, ok := res.(*actor.PID)
	if !ok {
		return nil, fmt.Errorf("start location %s: %v", canon, res)
	}
	l.byDir[canon] = pid
	return pid, nil
}

// remembered returns the running Location that dir resolved to before, if
// that answer still holds, else nil.
//
// The trade-off: an entry is trusted when dir and the remembered canonical
// path both still name the very directory (device and inode) they named at
// resolution: two stats instead of an lstat per path element. A symlink
// retargeted to another directory, a directory renamed (its old canonical path
// is gone) or replaced by a new one under either name all miss and resolve
// afresh. Not noticed is a second symlink-free path to that same directory,
// which only a bind mount gives: dir then keeps reaching the Location it
// reached before, which runs in the same directory under its other name,
// until that Location stops.
func (l *Locations) remembered(dir string) *actor.PID {
	l.mu.Lock()
	r, ok := l.byPath[dir]
	var pid *actor.PID
	if ok {
		pid = l.byDir[r.canon]
	}
	l.mu.Unlock()
	if pid == nil {
		return nil
	}
	now, err := os.Stat(dir)
	if err != nil || !os.SameFile(now, r.dir) {
		return nil
	}
	if now, err = os.Stat(r.canon); err != nil || !os.SameFile(now, r.dir) {
		return nil
	}
	return pid
}

// Child returns the PID of a long-lived child of dir's Location.
func (l *Locations) Child(ctx context.Context, dir, name string) (*actor.PID, error) {
	loc, err := l.Get(dir)
	if err != nil {
		return nil, err
	}
	res, err := l.system.Root.RequestFuture(loc, &WhereIs{Name: name}, l.cfg.AskTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("location %s: find %s: %w", dir, name, err)
	}
	c, ok := res.(*Child)
	if !ok || c.PID == nil {
		return nil, fmt.Errorf("location %s has no child %q", dir, name)
	}
	return c.PID, nil
}

// Spawn starts a short-lived child (a PTY) under dir's Location.
func (l *Locations) Spawn(dir, prefix string, props *actor.Props) (*actor.PID, error) {
	loc, err := l.Get(dir)
	if err != nil {
		return nil, err
	}
	res, err := l.system.Root.RequestFuture(loc, &SpawnChild{Prefix: prefix, Props: props}, l.cfg.AskTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("location %s: spawn %s: %w", dir, prefix, err)
	}
	return res.(*Child).PID, nil
}

// System is the actor system the Locations run in (callers that spawn
// children through Spawn talk to them through it).
func (l *Locations) System() *actor.ActorSystem { return l.system }

// Stop stops every Location and its children, waiting for them.
func (l *Locations) Stop() {
	_ = l.system.Root.StopFuture(l.parent).Wait()
	l.mu.Lock()
	l.byDir = map[string]*actor.PID{}
	l.byPath = map[string]resolved{}
	l.mu.Unlock()
}

type spawnLocation struct{ dir string }

// locationsParent owns every Location actor so that their supervision is ours
// rather than the root guardian's.
type locationsParent struct {
	owner *Locations
	n     int
}

func (p *locationsParent) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *spawnLocation:
		p.n++
		cfg := p.owner.cfg
		props := actor.PropsFromProducer(func() actor.Actor {
			return &location{dir: m.dir, specs: cfg.Children, log: cfg.Logger}
		})
		pid, err := ctx.SpawnNamed(props, fmt.Sprintf("loc-%d", p.n))
		if err != nil {
			ctx.Respond(err)
			return
		}
		ctx.Respond(pid)
	case *actor.Terminated:
		p.owner.mu.Lock()
		for dir, pid := range p.owner.byDir {
			if pid.Equal(m.Who) {
				delete(p.owner.byDir, dir)
				for path, r := range p.owner.byPath {
					if r.canon == dir {
						delete(p.owner.byPath, path)
					}
				}
			}
		}
		p.owner.mu.Unlock()
	}
}
