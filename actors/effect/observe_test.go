package effect

import (
	"errors"
	"testing"
)

// TestObserveWithoutItsAgentAsksNothing: a configuration that does not
// give the session's agent is posted as ConfigErr with nothing observed
// (the registries are never asked: these have none); a configuration read
// that panics is the observation's error.
func TestObserveWithoutItsAgentAsksNothing(t *testing.T) {
	ch := make(posted, 1)
	unknown := errors.New(`unknown agent "plan"`)
	Observe(Registries{}, 3, true, true, func() (Config[string], error) { return Config[string]{}, unknown }, ch.post)
	m, ok := ch.next(t).(*Observed[string])
	if !ok || m.Token != 3 || !m.Init || !errors.Is(m.ConfigErr, unknown) || m.Err != nil || m.Catalog != nil {
		t.Fatalf("%#v, want ConfigErr only", m)
	}
	Observe(Registries{}, 4, false, false, func() (Config[string], error) { panic("bad config") }, ch.post)
	m, ok = ch.next(t).(*Observed[string])
	if !ok || m.Token != 4 || m.Err == nil || m.ConfigErr != nil {
		t.Fatalf("%#v, want the panic as the observation's error", m)
	}
}

// TestLocatePostsTheLocationWithTheAgent: the Location's registries and
// the agent read there come back together, each with its own error; a
// panic while resolving is the Location's error.
func TestLocatePostsTheLocationWithTheAgent(t *testing.T) {
	ch := make(posted, 1)
	unknown := errors.New("unknown agent")
	Locate(5, func() (string, error) { return "registries", nil }, func() (int, error) { return 0, unknown }, ch.post)
	m, ok := ch.next(t).(*Located[string, int])
	if !ok || m.Token != 5 || m.Loc != "registries" || m.Err != nil || !errors.Is(m.ConfigErr, unknown) {
		t.Fatalf("%#v, want the registries with the agent's error", m)
	}
	Locate(6, func() (string, error) { panic("no location") }, func() (int, error) { return 1, nil }, ch.post)
	m, ok = ch.next(t).(*Located[string, int])
	if !ok || m.Token != 6 || m.Err == nil {
		t.Fatalf("%#v, want the panic as the Location's error", m)
	}
}
