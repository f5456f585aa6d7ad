// Package echograin is a trivial grain for the cluster's multi-process
// tests: it answers a Ping with where it runs (member address, process ID)
// and how many pings this activation has served, so a test can tell a
// fresh activation on another member from the old one.
package echograin

import (
	"os"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/cluster"
)

// KindName is the grain kind.
const KindName = "echo"

// Ping asks the grain to identify itself.
type Ping struct{ Seq int }

// Pong is the answer.
type Pong struct {
	Identity string
	Member   string // actor address of the hosting member
	PID      int    // OS process ID of the hosting member
	Served   int    // pings served by this activation, this one included
	Seq      int
}

// Registry returns the wire registry for Ping and Pong plus the Session types.
func Registry() *cluster.Registry {
	r := cluster.SessionRegistry()
	if err := r.Register("echo.Ping", &Ping{}); err != nil {
		panic(err)
	}
	if err := r.Register("echo.Pong", &Pong{}); err != nil {
		panic(err)
	}
	return r
}

// Kind is the echo grain kind.
func Kind() cluster.Kind {
	return cluster.Kind{Name: KindName, Produce: func(id string) actor.Actor { return &grain{id: id} }}
}

type grain struct {
	id     string
	served int
}

func (g *grain) Receive(ctx actor.Context) {
	if p, ok := ctx.Message().(*Ping); ok {
		g.served++
		ctx.Respond(&Pong{Identity: g.id, Member: ctx.ActorSystem().Address(), PID: os.Getpid(), Served: g.served, Seq: p.Seq})
	}
}
