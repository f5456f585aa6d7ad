package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/permission"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

func TestS16_OneToolCallRoundTrip(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			return bashEcho("hi"), nil
		}
		return scripted.Turn{Text: "the tool said hi"}, nil
	})
	id := h.create("")
	h.prompt(id, "", "run echo", "", true)
	h.waitIdle(id)
	reqs := h.prov.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	got := requestRoles(reqs[1])
	want := []string{"user:run echo", "assistant:[call bash]", "tool:hi\n<bash_metadata>exit code 0</bash_metadata>\n"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("second request %q, want %q", got, want)
	}
	evs := strings.Join(h.events(id), " ")
	if !strings.Contains(evs, "turn.started tool.called tool.succeeded turn.ended") {
		t.Fatalf("events %s", evs)
	}
	h.checkReplay()
}

// fiveCalls streams five tool calls, then waits until all five have started
// (each touches a file) before it finishes: so they cannot have been started
// after the stream ended.
type fiveCalls struct {
	dir  string
	n    int
	rest provider.Provider
}

func (f *fiveCalls) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	f.n++
	if f.n > 1 {
		return f.rest.Stream(ctx, req)
	}
	parts := make(chan provider.Part, 8)
	errs := make(chan error, 1)
	go func() {
		defer close(parts)
		for i := 0; i < 5; i++ {
			args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("touch started_%d && sleep 0.2 && echo done_%d", i, i), "description": "x"})
			parts <- provider.Part{Kind: provider.PartToolCall, Index: i, ID: fmt.Sprintf("c%d", i), Name: "bash", Args: args}
		}
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			all := true
			for i := 0; i < 5; i++ {
				if _, err := os.Stat(filepath.Join(f.dir, fmt.Sprintf("started_%d", i))); err != nil {
					all = false
				}
			}
			if all {
				parts <- provider.Part{Kind: provider.PartFinish, Finish: provider.FinishToolCalls}
				return
			}
			select {
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		errs <- fmt.Errorf("the tools did not start while the stream was open")
	}()
	return &chanStream{parts: parts, errs: errs}, nil
}

type chanStream struct {
	parts chan provider.Part
	errs  chan error
	done  bool
}

func (s *chanStream) Next() (provider.Part, error) {
	if s.done {
		return provider.Part{}, io.EOF
	}
	p, ok := <-s.parts
	if !ok {
		select {
		case err := <-s.errs:
			return provider.Part{}, err
		default:
			return provider.Part{}, io.EOF
		}
	}
	if p.Kind == provider.PartFinish {
		s.done = true
	}
	return p, nil
}

func (s *chanStream) Close() error { return nil }

func TestS17_ToolsStartBeforeTheStreamEndsAndAllSettleFirst(t *testing.T) {
	h := newHarness(t, text("unused"))
	rest, err := scripted.New(scripted.Config{Script: &scripted.Script{Turns: []scripted.Turn{{Text: "all five settled"}}}})
	if err != nil {
		t.Fatal(err)
	}
	five := &fiveCalls{dir: h.loc, rest: rest}
	h.restart(func(c *Config) { c.Providers = func(messages.ModelRef) (provider.Provider, error) { return five, nil } })
	id := h.create("")
	h.prompt(id, "", "five", "", true)
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain: %+v", out)
	}
	hist := h.history(id)
	want := []string{"U:five", "A:[bash:completed][bash:completed][bash:completed][bash:completed][bash:completed]", "A:all five settled"}
	if !reflect.DeepEqual(hist, want) {
		t.Fatalf("history %v, want %v", hist, want)
	}
	h.checkReplay()
}

func TestS18_RepeatedCallIDSettlesAgainstItsOwnTurn(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		switch n {
		case 0, 1:
			word := []string{"first", "second"}[n]
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_same", Name: "bash", Args: []byte(`{"command":"echo ` + word + `","description":"x"}`)}}}, nil
		}
		return scripted.Turn{Text: "done"}, nil
	})
	id := h.create("")
	h.prompt(id, "", "go", "", true)
	h.waitIdle(id)
	reqs := h.prov.Requests()
	got := requestRoles(reqs[2])
	exit0 := "\n<bash_metadata>exit code 0</bash_metadata>\n"
	want := []string{"user:go", "assistant:[call bash]", "tool:first" + exit0, "assistant:[call bash]", "tool:second" + exit0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("third request %q, want %q", got, want)
	}
	h.restart()
	want = append(want, "assistant:done")
	if again := requestRolesOf(t, h, id); !reflect.DeepEqual(again, want) {
		t.Fatalf("after replay %q, want %q", again, want)
	}
	h.checkReplay()
}

// requestRolesOf builds, from the journal alone, the request the next turn would send.
func requestRolesOf(t *testing.T, h *harness, id string) []string {
	t.Helper()
	hist, err := h.journal.ModelHistory(h.ctx(), id)
	if err != nil {
		t.Fatal(err)
	}
	return requestRoles(*buildRequest(turnRequest{Model: testModel, History: hist}))
}

// panicky is a tool that panics.
type panicky struct{}

func (panicky) Definition() tools.Definition {
	return tools.Definition{Name: "panicky", Description: "panics", Action: "panicky"} // no input schema: allowed
}
func (panicky) Run(context.Context, tools.Call) (tools.Result, error) { panic("tool bug") }

func TestS19_ToolErrorsReachTheModelAndTheDrainGoesOn(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			return scripted.Turn{ToolCalls: []scripted.ToolCall{
				{ID: "a", Name: "nope", Args: []byte(`{}`)},
				{ID: "b", Name: "panicky", Args: []byte(`{}`)},
				{ID: "c", Name: "bash", Args: []byte(`{"command":"echo no","description":"x"}`)},
			}}, nil
		}
		return scripted.Turn{Text: "coped"}, nil
	}, func(c *Config) {
		c.Agents = map[string]Agent{"build": {Rules: []permission.Rule{
			{Action: "*", Resource: "*", Effect: permission.Allow},
			{Action: "bash", Resource: "*", Effect: permission.Deny},
		}}}
	})
	id := h.create("")
	registry, err := h.locs.Child(h.ctx(), h.loc, ToolRegistryName)
	if err != nil {
		t.Fatal(err)
	}
	h.system.Root.Send(registry, &toolactors.Contribute{Scope: "test", Tools: []tools.Tool{panicky{}}})
	h.prompt(id, "", "try", "", true)
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain: %+v", out)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	errorsSeen := 0
	for _, m := range reqs[1].Messages {
		if m.ToolResult != nil && m.ToolResult.IsError {
			errorsSeen++
		}
	}
	if errorsSeen != 3 {
		t.Fatalf("model saw %d tool errors, want 3: %q", errorsSeen, requestRoles(reqs[1]))
	}
	h.checkReplay()
}

func TestS20_ProviderErrorAfterAToolCallStillSettlesIt(t *testing.T) {
	three := 3 // tool-input start, delta, then the complete call
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c", Name: "bash", Args: []byte(`{"command":"echo done","description":"x"}`)}},
			Error: &scripted.ErrorSpec{Kind: "retryable", Message: "connection reset", AfterParts: &three}}, nil
	})
	id := h.create("")
	h.prompt(id, "", "go", "", true)
	out := h.waitIdle(id)
	if out.Kind != "provider" {
		t.Fatalf("outcome %+v, want a provider failure", out)
	}
	if n := h.prov.Count(); n != 1 {
		t.Fatalf("%d requests, want 1 (no continuation)", n)
	}
	evs := strings.Join(h.events(id), " ")
	if !strings.Contains(evs, "tool.called tool.succeeded turn.failed") {
		t.Fatalf("events %s", evs)
	}
	h.checkReplay()
}

func TestS21_TurnLimitLastTurnHasNoToolsThenFails(t *testing.T) {
	// A model that calls a tool even when none is offered.
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) { return bashEcho("again"), nil }, withTurnLimit(2))
	id := h.create("")
	h.prompt(id, "", "loop", "", true)
	out := h.waitIdle(id)
	if out.Kind != "turn_limit" || !strings.Contains(out.Err, "maximum provider turns") {
		t.Fatalf("outcome %+v, want the turn-limit failure", out)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	last := reqs[1]
	if len(last.Tools) != 0 || last.ToolChoice != provider.ToolChoiceNone {
		t.Fatalf("last allowed turn offered tools: %v", last.Tools)
	}
	if m := last.Messages[len(last.Messages)-1]; m.Role != provider.RoleSystem || m.Text != session.MaxStepsInstruction {
		t.Fatalf("last allowed turn ends with %+v, want the maximum-steps instruction", m)
	}
	if len(reqs[0].Tools) == 0 {
		t.Fatal("first turn offered no tools")
	}
	h.checkReplay()
}

func TestS22_DeltasAreLiveOnlyAndFinalValuesStoredOnce(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{Reasoning: "let me think", Text: "hello there, world", Chunk: 3}, nil
	})
	id := h.create("")
	sub := h.bus.Subscribe(id, 1024)
	defer sub.Close()
	h.prompt(id, "", "hi", "", true)
	h.waitIdle(id)
	var text, reasoning strings.Builder
	deltas := 0
	for done := false; !done; {
		select {
		case l := <-sub.C():
			if l.Delta != nil {
				deltas++
				switch l.Delta.Kind {
				case messages.TextDelta:
					text.WriteString(l.Delta.Text)
				case messages.ReasoningDelta:
					reasoning.WriteString(l.Delta.Text)
				}
			}
			if l.Event != nil && l.Event.Type.Name == "session.idle" {
				done = true
			}
		case <-time.After(10 * time.Second):
			t.Fatal("live stream never reached idle")
		}
	}
	if deltas < 4 || text.String() != "hello there, world" || reasoning.String() != "let me think" {
		t.Fatalf("%d deltas gave text %q reasoning %q", deltas, text.String(), reasoning.String())
	}
	evs := h.events(id)
	count := map[string]int{}
	for _, e := range evs {
		count[e]++
	}
	if count["text.ended"] != 1 || count["reasoning.ended"] != 1 {
		t.Fatalf("events %v: want the final text and reasoning stored once", evs)
	}
	h.checkReplay()
}

func TestS23_ContentFilterKeepsPartialTextAndTheReason(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{Text: "partial answ", Finish: provider.FinishContentFilter}, nil
	})
	id := h.create("")
	h.prompt(id, "", "hi", "", true)
	h.waitIdle(id)
	msgs, err := h.journal.ModelHistory(h.ctx(), id)
	if err != nil {
		t.Fatal(err)
	}
	last := msgs[len(msgs)-1]
	if last.FinishReason != string(provider.FinishContentFilter) || renderHistory(msgs)[1] != "A:partial answ" {
		t.Fatalf("assistant %+v", last)
	}
	if n := h.prov.Count(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	h.checkReplay()
}

func TestS24_ReasoningReplaysOnlyToTheSameModel(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{Reasoning: "thinking hard", Text: fmt.Sprintf("answer %d", n)}, nil
	})
	id := h.create("")
	h.prompt(id, "", "one", "", true)
	h.waitIdle(id)
	h.prompt(id, "", "two", "", true)
	h.waitIdle(id)
	same := h.prov.Requests()[1].Messages[1]
	if len(same.Reasoning) != 1 || same.Reasoning[0].Text != "thinking hard" || strings.Contains(same.Text, "thinking") {
		t.Fatalf("same model: assistant %+v, want native reasoning", same)
	}
	if _, err := h.sessions.SwitchModel(h.ctx(), id, messages.ModelRef{Provider: "scripted", ID: "other-model"}); err != nil {
		t.Fatal(err)
	}
	h.prompt(id, "", "three", "", true)
	h.waitIdle(id)
	reqs := h.prov.Requests()
	switched := reqs[2]
	if switched.Model.Model != "other-model" {
		t.Fatalf("next turn used %v", switched.Model)
	}
	for _, m := range switched.Messages {
		if m.Role == provider.RoleAssistant && (len(m.Reasoning) != 0 || !strings.Contains(m.Text, "thinking hard")) {
			t.Fatalf("after a model switch: assistant %+v, want reasoning as plain text", m)
		}
	}
	if switched.System != reqs[0].System {
		t.Fatal("a model switch replaced the baseline")
	}
	h.checkReplay()
}
