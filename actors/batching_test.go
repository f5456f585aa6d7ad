package actors

import (
	"context"
	"reflect"
	"strings"
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

// TestATurnsFactsAreWrittenAtItsBoundaries: after its admission, a prompt
// answered by one tool call and a final text is written in four appends —
// the promotion with its TurnStarted, the call before its tool starts, the
// settlement and TurnEnded with the next TurnStarted, the final text with
// TurnEnded and Idle — with the events in the spec's order. The tool is held
// until its turn's stream is over, the usual order; should the settlement
// still overtake the stream's end (a descheduled stream goroutine), it is
// written at once and the turn's end goes with the next TurnStarted.
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
	before := h.sessions.rt.appends.Load()
	seen, err := h.journal.ReadEvents(h.ctx(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}

	h.prompt(id, "", "again", "", true)
	<-closed // the tool-call turn's stream is over
	close(gate.release)
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain: %+v", out)
	}
	envs, err := h.journal.ReadEvents(h.ctx(), id, int64(len(seen)), 1000)
	if err != nil {
		t.Fatal(err)
	}
	// The events of one append share its time stamp: group them.
	var groups [][]string
	for i, e := range envs {
		name := strings.TrimPrefix(e.Type.Name, "session.")
		if i == 0 || !e.Time.Equal(envs[i-1].Time) {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], name)
	}
	want := [][]string{{"prompt.admitted"}, {"prompt.promoted", "turn.started"}, {"tool.called"},
		{"tool.succeeded", "turn.ended", "turn.started"}, {"text.ended", "turn.ended", "idle"}}
	overtaken := [][]string{{"prompt.admitted"}, {"prompt.promoted", "turn.started"}, {"tool.called"},
		{"tool.succeeded"}, {"turn.ended", "turn.started"}, {"text.ended", "turn.ended", "idle"}}
	if !reflect.DeepEqual(groups, want) && !reflect.DeepEqual(groups, overtaken) {
		t.Fatalf("appends %v, want %v", groups, want)
	}
	if n := h.sessions.rt.appends.Load() - before; n != int64(len(groups)-1) {
		t.Fatalf("%d appends after the admission, the journal shows %d", n, len(groups)-1)
	}
	h.checkReplay()
}
