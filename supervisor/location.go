package supervisor

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ChildSpec describes one long-lived child of every Location.
type ChildSpec struct {
	// Name identifies the child within its Location, e.g. "tools".
	Name string
	// Props builds the child's props for a canonical directory.
	Props func(dir string) *actor.Props
}

// WhereIs asks a Location for the PID of its long-lived child Name.
type WhereIs struct{ Name string }

// Child answers WhereIs; PID is nil when the Location has no such child.
type Child struct {
	Name string
	PID  *actor.PID
}

// SpawnChild asks a Location to start a short-lived child (a PTY, say) under
// its supervision; the reply is a Child with the new PID or an error.
type SpawnChild struct {
	Prefix string
	Props  *actor.Props
}

// location is the supervisor actor of one directory.
type location struct {
	dir      string
	specs    []ChildSpec
	children map[string]*actor.PID
	log      *slog.Logger
}

func (l *location) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		// Also runs after a restart: protoactor stops the children of a
		// restarting actor, so the Location starts a fresh set each time.
		l.children = make(map[string]*actor.PID, len(l.specs))
		for _, s := range l.specs {
			pid, err := ctx.SpawnNamed(s.Props(l.dir), s.Name)
			if err != nil {
				// A name collision means a child of the previous
				// incarnation is still stopping; fail so the strategy retries.
				panic(fmt.Errorf("location %s: start %s: %w", l.dir, s.Name, err))
			}
			l.children[s.Name] = pid
		}
	case *WhereIs:
		ctx.Respond(&Child{Name: m.Name, PID: l.children[m.Name]})
	case *SpawnChild:
		ctx.Respond(&Child{Name: m.Prefix, PID: ctx.SpawnPrefix(m.Props, m.Prefix)})
	case *actor.Terminated:
		for name, pid := range l.children {
			if pid.Equal(m.Who) {
				l.log.Warn("location child stopped", "dir", l.dir, "child", name)
				delete(l.children, name)
			}
		}
	}
}

// HandleFailure makes the Location its children's supervisor strategy.
// A long-lived registry is restarted (its state is rebuilt from
// configuration); more than maxRestarts failures within restartWindow
// escalate to the Locations parent, which restarts the whole Location with a
// fresh set of children. Any other child — a PTY, whose shell would not come
// back with the actor — is stopped.
func (l *location) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, message any) {
	longLived := false
	for _, pid := range l.children {
		if pid.Equal(child) {
			longLived = true
		}
	}
	if !longLived {
		l.log.Warn("location child failed; stopping it", "dir", l.dir, "child", child.Id, "reason", reason)
		sup.StopChildren(child)
		return
	}
	rs.Fail()
	if rs.NumberOfFailures(restartWindow) > maxRestarts {
		rs.Reset()
		l.log.Error("location child keeps failing; restarting the location", "dir", l.dir, "child", child.Id, "reason", reason)
		sup.EscalateFailure(reason, message)
		return
	}
	l.log.Warn("location child failed; restarting it", "dir", l.dir, "child", child.Id, "reason", reason)
	sup.RestartChildren(child)
}

const (
	maxRestarts   = 10
	restartWindow = 10 * time.Second
)
