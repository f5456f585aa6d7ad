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
