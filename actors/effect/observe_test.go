package effect

import (
	"errors"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/session"
)

// TestObserveWithoutItsAgentAsksNothing: a configuration that does not
// give the session's agent is posted as ConfigErr with nothing observed
// (the registries are never asked: these have none), and Take keeps the
// agent the drain had; a configuration read that panics is the
// observation's error.
func TestObserveWithoutItsAgentAsksNothing(t *testing.T) {
	ch := make(posted, 1)
	x := &Drain{Token: 3, Post: ch.post, Agent: Agent{TurnLimit: 7}, Config: func(name string) (Agent, error) {
		return Agent{}, errors.New("unknown agent " + name)
	}}
	x.Observe(true, true, "plan")
	if !x.Busy() {
		t.Fatal("the drain does not wait for its observation")
	}
	m, ok := ch.next(t).(*Observed)
	if !ok || m.Of() != 3 || !m.In.Init || m.In.ConfigErr != "unknown agent plan" || m.In.Err != "" || m.Catalog != nil || m.In.Catalog {
		t.Fatalf("%#v, want ConfigErr only", m)
	}
	if in, ok := x.Take(m).(session.ContextObserved); !ok || in.ConfigErr == "" || x.Agent.TurnLimit != 7 || x.Busy() {
		t.Fatalf("took %#v with agent %+v, want the ConfigErr and the drain's agent kept", in, x.Agent)
	}
	x.Token, x.Config = 4, func(string) (Agent, error) { panic("bad config") }
	x.Observe(false, false, "plan")
	m, ok = ch.next(t).(*Observed)
	if !ok || m.Of() != 4 || m.In.Err == "" || m.In.ConfigErr != "" {
		t.Fatalf("%#v, want the panic as the observation's error", m)
	}
}

// TestLocatePostsTheLocationWithTheAgent: the Location's registries and
// the agent read there come back together, each with its own error, and
// Take keeps them only when both came; a panic while resolving is the
// Location's error.
func TestLocatePostsTheLocationWithTheAgent(t *testing.T) {
	ch := make(posted, 1)
	reg := actor.NewPID("local", "tools")
	x := &Drain{Token: 5, Post: ch.post, Config: func(name string) (Agent, error) {
		if name != "build" {
			return Agent{}, errors.New("unknown agent")
		}
		return Agent{TurnLimit: 2}, nil
	}}
	resolve := func() (*actor.PID, *actor.PID, error) { return reg, reg, nil }
	x.Locate(resolve, "plan")
	m, ok := ch.next(t).(*Located)
	if !ok || m.Of() != 5 || m.Tools != reg || m.Err != nil || m.ConfigErr == nil {
		t.Fatalf("%#v, want the registries with the agent's error", m)
	}
	if in := x.Take(m).(session.LocationResolved); in.ConfigErr != "unknown agent" || x.Tools != nil {
		t.Fatalf("took %#v, registries %v: want the ConfigErr, nothing kept", in, x.Tools)
	}
	x.Locate(resolve, "build")
	m = ch.next(t).(*Located)
	if in := x.Take(m).(session.LocationResolved); in != (session.LocationResolved{TurnLimit: 2}) || x.Tools != reg || x.Agent.TurnLimit != 2 {
		t.Fatalf("took %#v, registries %v, agent %+v: want both kept", in, x.Tools, x.Agent)
	}
	x.Token = 6
	x.Locate(func() (*actor.PID, *actor.PID, error) { panic("no location") }, "build")
	m, ok = ch.next(t).(*Located)
	if !ok || m.Token != 6 || m.Err == nil {
		t.Fatalf("%#v, want the panic as the Location's error", m)
	}
}
