package actors

import (
	"reflect"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// TestInspectShowsTheCallADrainWaitsFor: mid-tool, a session's inspection
// names the turn's unsettled call and a waiter; once idle it shows no
// drain; a session with no activation here is not activated by it.
func TestInspectShowsTheCallADrainWaitsFor(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == provider.RoleTool {
			return scripted.Turn{Text: "done"}, nil
		}
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_gated", Name: "gated", Args: []byte(`{}`)}}}, nil
	})
	if in, err := h.sessions.Inspect(h.ctx(), "ses_nowhere"); in != nil || err != nil {
		t.Fatalf("inspect of a session with no activation: %+v, %v; want nil, nil", in, err)
	}
	if h.sessions.rt.acts.isLive("ses_nowhere") {
		t.Fatal("inspect activated a session")
	}
	id := h.create("")
	registry, err := h.locs.Child(h.ctx(), h.loc, ToolRegistryName)
	if err != nil {
		t.Fatal(err)
	}
	gate := gatedTool{release: make(chan struct{})}
	h.system.Root.Send(registry, &toolactors.Contribute{Scope: "test", Tools: []tools.Tool{gate}})
	h.prompt(id, "", "go", "", true)
	waited := make(chan *Outcome, 1)
	go func() { waited <- h.waitIdle(id) }()

	ctx := h.ctx()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var in *Inspection
	for {
		if in, err = h.sessions.Inspect(ctx, id); err != nil {
			t.Fatal(err)
		}
		if in != nil && in.Drain != nil && in.Drain.Turn != nil && len(in.Drain.Turn.Unsettled) > 0 && in.Drain.Waiters > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no inspection showed the call in flight with its waiter: last %+v", in)
		case <-tick.C:
		}
	}
	if !reflect.DeepEqual(in.Drain.Turn.Unsettled, []string{"call_gated"}) {
		t.Fatalf("mid-tool inspection: %+v, turn %+v; want call_gated unsettled", in, in.Drain.Turn)
	}
	close(gate.release)
	if out := <-waited; out.Err != "" {
		t.Fatalf("drain: %+v", out)
	}
	if in, err = h.sessions.Inspect(h.ctx(), id); err != nil || in == nil || in.Drain != nil || len(in.Staged) > 0 {
		t.Fatalf("inspection once idle: %+v, %v; want no drain, nothing staged", in, err)
	}
}
