package actors

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
)

// resolvingRuntime is a runtime whose Locations have a "build" agent (no
// model of its own, the default) and a "plan" agent on model "own", and
// whose providers serve every model but "gone".
func resolvingRuntime(defaultModel messages.ModelRef) *runtime {
	return &runtime{cfg: Config{
		DefaultModel: messages.ModelRef{Provider: "p", ID: "runtime"},
		Setup: func(loc string) (Setup, error) {
			if strings.HasSuffix(loc, "broken") {
				return Setup{}, errors.New("bad json")
			}
			return Setup{DefaultAgent: "build", DefaultModel: defaultModel, Agents: map[string]Agent{
				"build": {}, "plan": {Model: messages.ModelRef{Provider: "p", ID: "own"}},
			}}, nil
		},
		Providers: func(m messages.ModelRef) (provider.Provider, error) {
			if m.ID == "gone" {
				return nil, fmt.Errorf("unknown model (known: own, runtime)")
			}
			return nil, nil
		},
	}}
}

// TestCreationResolvesAgentAndModel: a new session gets the canonical
// Location, the agent asked or the Location's default, the model asked,
// else the agent's own, else the Location's default, else the runtime's;
// a bad Location, configuration, agent or model is refused as invalid.
func TestCreationResolvesAgentAndModel(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(dir+"/broken", 0o755); err != nil {
		t.Fatal(err)
	}
	asked := messages.ModelRef{Provider: "p", ID: "asked"}
	for _, c := range []struct {
		name     string
		location string
		def      messages.ModelRef
		m        Create
		want     messages.SessionCreated
		err      string
	}{
		{name: "defaults", m: Create{Title: "t"}, want: messages.SessionCreated{Agent: "build", Model: messages.ModelRef{Provider: "p", ID: "runtime"}, Title: "t"}},
		{name: "location default", def: messages.ModelRef{Provider: "p", ID: "loc"}, want: messages.SessionCreated{Agent: "build", Model: messages.ModelRef{Provider: "p", ID: "loc"}}},
		{name: "agent's own model", m: Create{Agent: "plan"}, want: messages.SessionCreated{Agent: "plan", Model: messages.ModelRef{Provider: "p", ID: "own"}}},
		{name: "asked model", m: Create{Agent: "plan", Model: asked}, want: messages.SessionCreated{Agent: "plan", Model: asked}},
		{name: "unknown agent", m: Create{Agent: "nope"}, err: `unknown agent "nope"`},
		{name: "unserved model", m: Create{Model: messages.ModelRef{Provider: "p", ID: "gone"}}, err: "model p/gone: unknown model"},
		{name: "bad configuration", location: dir + "/broken", err: "configuration of"},
		{name: "no location", location: "-", err: "location: empty directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.m.Location = dir
			switch c.location {
			case "-":
				c.m.Location = ""
			case "":
			default:
				c.m.Location = c.location
			}
			got, err := resolvingRuntime(c.def).creation(&c.m)
			if c.err != "" {
				if err == nil || errorCode(err) != CodeInvalid || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v (code %q), want an invalid one saying %q", err, errorCode(err), c.err)
				}
				return
			}
			c.want.Location = dir
			if err != nil || got != c.want {
				t.Fatalf("%+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// TestSwitchesResolveTheLocationsConfiguration: an agent switch takes the
// agent's own model with it, marked when the Location does not serve it;
// a model switch is marked likewise; an unknown agent is refused.
func TestSwitchesResolveTheLocationsConfiguration(t *testing.T) {
	rt := resolvingRuntime(messages.ModelRef{})
	if in, err := rt.agentSwitch("/work/p", "plan"); err != nil || in.Agent != "plan" || in.Model == nil || in.Model.ID != "own" || in.ModelErr != "" {
		t.Fatalf("switch to plan: %+v, %v", in, err)
	}
	if in, err := rt.agentSwitch("/work/p", "build"); err != nil || in.Model != nil {
		t.Fatalf("switch to build: %+v, %v", in, err)
	}
	if _, err := rt.agentSwitch("/work/p", "nope"); errorCode(err) != CodeInvalid {
		t.Fatalf("switch to an unknown agent: %v", err)
	}
	if in, err := rt.modelSwitch("/work/p", messages.ModelRef{Provider: "p", ID: "gone"}); err != nil || !strings.Contains(in.ModelErr, "unknown model") {
		t.Fatalf("switch to an unserved model: %+v, %v", in, err)
	}
	if in, err := rt.modelSwitch("/work/p", messages.ModelRef{Provider: "p", ID: "asked"}); err != nil || in.ModelErr != "" {
		t.Fatalf("switch to a served model: %+v, %v", in, err)
	}
	if _, err := rt.modelSwitch("/work/broken", messages.ModelRef{Provider: "p", ID: "asked"}); errorCode(err) != CodeInvalid {
		t.Fatalf("switch in a Location whose configuration is broken: %v", err)
	}
}
