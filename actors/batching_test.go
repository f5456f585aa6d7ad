package actors

import (
	"context"
	"reflect"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// gatedTool settles only once the test lets it.
type gatedTool struct{ release chan struct{} }

func (gatedTool) Definition() tools.Definition {
	return tools.Definition{Name: "gated", Description: "waits for the test", Action: "gated"}
}

func (g gatedTool) Run(ctx context.Context, _ tools.Call) (tools.Result, error) {
	select {
	case <-g.release:
		return tools.Result{Text: "released"}, nil
	case <-ctx.Done():
		return tools.Result{}, ctx.Err()
	}
}

// closeSignal reports each provider stream's Close (the drain closes a
// stream once it has read it to its end).
type closeSignal struct {
	provider.Provider
	closed chan struct{}
}

func (p closeSignal) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	s, err := p.Provider.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return signalStream{s, p.closed}, nil
}

type signalStream struct {
	provider.Stream
	closed chan struct{}
}

func (s signalStream) Close() error {
	err := s.Stream.Close()
	s.closed <- struct{}{}
	return err
}

// TestATurnsFactsAreWrittenAtItsBoundaries: a prompt answered by one tool
// call and a final text takes four appends after its admission — the
// promotion with its TurnStarted, the call before its tool starts, the
// settlement and TurnEnded with the next TurnStarted, and the final text
// with TurnEnded and Idle — with the events in the spec's order. The tool
// settles after its turn's stream ended (the usual order), so the
// settlement is the turn's last fact.
func TestATurnsFactsAreWrittenAtItsBoundaries(t *testing.T) {
	closed := make(chan struct{}, 16)
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == provider.RoleTool:
			return scripted.Turn{Text: "done"}, nil
		case last.Text == "again":
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "gated", Args: []byte(`{}`)}}}, nil
		}
		return scripted.Turn{Text: "ok"}, nil
	}, func(c *Config) {
		inner := c.Providers
		c.Providers = func(m messages.ModelRef) (provider.Provider, error) {
			p, err := inner(m)
			return closeSignal{p, closed}, err
		}
	})
	id := h.create("")
	registry, err := h.locs.Child(h.ctx(), h.loc, ToolRegistryName)
	if err != nil {
		t.Fatal(err)
	}
	gate := gatedTool{release: make(chan struct{})}
	h.system.Root.Send(registry, &toolactors.Contribute{Scope: "test", Tools: []tools.Tool{gate}})
	h.ask(id, "warm up") // initializes the context epoch
	<-closed
	before, seen := h.sessions.rt.appends.Load(), len(h.events(id))

	h.prompt(id, "", "again", "", true)
	<-closed // the tool-call turn's stream is over
	close(gate.release)
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain: %+v", out)
	}
	if n := h.sessions.rt.appends.Load() - before; n != 4 {
		t.Fatalf("%d appends for a tool turn, want 4", n)
	}
	want := []string{"prompt.admitted", "prompt.promoted", "turn.started", "tool.called", "tool.succeeded", "turn.ended",
		"turn.started", "text.ended", "turn.ended", "idle"}
	if got := h.events(id)[seen:]; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	h.checkReplay()
}
