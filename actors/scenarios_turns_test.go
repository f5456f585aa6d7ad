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
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/render"
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
			// The first call runs longest, so the calls settle in the
			// reverse of their order.
			args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("touch started_%d && sleep 0.%d && echo done_%d", i, 5-i, i), "description": "x"})
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
	// The continuation request carries all five results, in the order of
	// the calls (not of their settlement): it was sent once all five
	// had settled.
	reqs := rest.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d continuation requests, want 1", len(reqs))
	}
	exit0 := "\n<bash_metadata>exit code 0</bash_metadata>\n"
	wantReq := []string{"user:five", "assistant:[call bash][call bash][call bash][call bash][call bash]"}
	for i := 0; i < 5; i++ {
		wantReq = append(wantReq, fmt.Sprintf("tool:done_%d", i)+exit0)
	}
	if got := requestRoles(reqs[0]); !reflect.DeepEqual(got, wantReq) {
		t.Fatalf("continuation request %q, want %q", got, wantReq)
	}
	for i, m := range reqs[0].Messages[2:] {
		if r := m.ToolResult; r == nil || r.CallID != fmt.Sprintf("c%d", i) || r.IsError {
			t.Fatalf("tool message %d answers %+v, want call c%d's success", i, r, i)
		}
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
	return requestRoles(*render.Request(render.Turn{Model: testModel, History: hist}))
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

// heldStream streams reasoning, text and a tool call's input as deltas,
// then holds the stream open until released: only then does the complete
// call and the finish arrive. Later requests go to rest.
type heldStream struct {
	release chan struct{}
	args    string
	n       atomic.Int64
	rest    provider.Provider
}

func (p *heldStream) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	if p.n.Add(1) > 1 {
		return p.rest.Stream(ctx, req)
	}
	parts := make(chan provider.Part, 64)
	errs := make(chan error, 1)
	go func() {
		defer close(parts)
		for _, c := range []string{"let ", "me ", "think"} {
			parts <- provider.Part{Kind: provider.PartReasoning, Text: c}
		}
		for _, c := range []string{"hello", " there,", " world"} {
			parts <- provider.Part{Kind: provider.PartText, Text: c}
		}
		parts <- provider.Part{Kind: provider.PartToolInputStart, ID: "c1", Name: "bash"}
		for i := 0; i < len(p.args); i += 7 {
			parts <- provider.Part{Kind: provider.PartToolInputDelta, ID: "c1", Text: p.args[i:min(i+7, len(p.args))]}
		}
		select {
		case <-p.release:
		case <-ctx.Done():
			errs <- ctx.Err()
			return
		}
		parts <- provider.Part{Kind: provider.PartToolCall, ID: "c1", Name: "bash", Args: json.RawMessage(p.args)}
		parts <- provider.Part{Kind: provider.PartFinish, Finish: provider.FinishToolCalls}
	}()
	return &chanStream{parts: parts, errs: errs}, nil
}

func TestS22_DeltasAreLiveOnlyAndFinalValuesStoredOnce(t *testing.T) {
	h := newHarness(t, text("unused"))
	rest, err := scripted.New(scripted.Config{Script: &scripted.Script{Turns: []scripted.Turn{{Text: "ran it"}}}})
	if err != nil {
		t.Fatal(err)
	}
	held := &heldStream{release: make(chan struct{}), args: `{"command":"echo streamed input","description":"x"}`, rest: rest}
	h.restart(func(c *Config) { c.Providers = func(messages.ModelRef) (provider.Provider, error) { return held, nil } })
	id := h.create("")
	sub := h.bus.Subscribe(id, 1024)
	defer sub.Close()
	h.prompt(id, "", "hi", "", true)

	// Every delta reaches the subscriber while the stream is still open.
	var text, reasoning, input strings.Builder
	deltas := 0
	for input.Len() < len(held.args) {
		select {
		case l := <-sub.C():
			if l.Delta == nil {
				continue
			}
			deltas++
			switch l.Delta.Kind {
			case messages.TextDelta:
				text.WriteString(l.Delta.Text)
			case messages.ReasoningDelta:
				reasoning.WriteString(l.Delta.Text)
			case messages.ToolInputDelta:
				if l.Delta.CallID != "c1" {
					t.Fatalf("tool-input delta for call %q, want c1", l.Delta.CallID)
				}
				input.WriteString(l.Delta.Text)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("live deltas stopped at text %q reasoning %q input %q", text.String(), reasoning.String(), input.String())
		}
	}
	if text.String() != "hello there, world" || reasoning.String() != "let me think" || input.String() != held.args {
		t.Fatalf("%d live deltas gave text %q reasoning %q tool input %q", deltas, text.String(), reasoning.String(), input.String())
	}
	// Nothing final is stored while the stream is open.
	for _, e := range h.events(id) {
		if e == "text.ended" || e == "reasoning.ended" || e == "tool.called" {
			t.Fatalf("%s stored while the stream was still open: %v", e, h.events(id))
		}
	}
	close(held.release)
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain: %+v", out)
	}

	// The journal holds no delta, and each final value once.
	envs, err := h.journal.ReadEvents(h.ctx(), id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range envs {
		name := strings.TrimPrefix(e.Type.Name, "session.")
		count[name]++
		if strings.Contains(strings.ToLower(name), "delta") {
			t.Fatalf("a delta row in the journal: %s (seq %d)", e.Type.Name, e.Seq)
		}
		switch ev := e.Event.(type) {
		case messages.TextEnded:
			if ev.Text != "hello there, world" && ev.Text != "ran it" {
				t.Fatalf("stored text %q", ev.Text)
			}
		case messages.ReasoningEnded:
			if ev.Text != "let me think" {
				t.Fatalf("stored reasoning %q", ev.Text)
			}
		case messages.ToolCalled:
			if string(ev.Input) != held.args {
				t.Fatalf("stored tool input %s, want %s", ev.Input, held.args)
			}
		}
	}
	if count["text.ended"] != 2 || count["reasoning.ended"] != 1 || count["tool.called"] != 1 {
		t.Fatalf("events %v: want each final value stored once (text once per turn)", h.events(id))
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

// S24, the shell's part: the provider's signature of its reasoning (a
// metadata part of the stream) reaches the journal with the reasoning part
// it signs, and the next request to the same model carries it back. Which
// model is sent what is the renderer's (render/testdata/s24_*.txt).
func TestS24_ReasoningSignatureIsJournaledAndReplayed(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{Parts: []scripted.Part{
			{Kind: "reasoning", Text: "thinking hard"},
			{Kind: "metadata", Key: provider.MetaReasoningSignature, Text: fmt.Sprintf("sig-%d", n)},
			{Kind: "text", Text: fmt.Sprintf("answer %d", n)},
			{Kind: "finish", Finish: provider.FinishStop},
		}}, nil
	})
	id := h.create("")
	h.prompt(id, "", "one", "", true)
	h.waitIdle(id)
	h.prompt(id, "", "two", "", true)
	h.waitIdle(id)
	same := h.prov.Requests()[1].Messages[1]
	if len(same.Reasoning) != 1 || same.Reasoning[0].Text != "thinking hard" || same.Reasoning[0].Signature != "sig-0" {
		t.Fatalf("same model: assistant %+v, want native reasoning with its signature", same)
	}
	msgs, err := h.journal.ModelHistory(h.ctx(), id)
	if err != nil {
		t.Fatal(err)
	}
	signed := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == messages.PartReasoning && strings.Contains(string(p.ProviderMetadata), "sig-") {
				signed++
			}
		}
	}
	if signed != 2 {
		t.Fatalf("%d stored reasoning parts keep their signature, want 2", signed)
	}
	h.checkReplay()
}

// awaitPermission waits on sub for the session's next permission request.
func awaitPermission(t *testing.T, sub *Subscription) messages.PermissionAsked {
	t.Helper()
	for {
		select {
		case l := <-sub.C():
			if l.Event != nil {
				if ask, ok := l.Event.Event.(messages.PermissionAsked); ok {
					return ask
				}
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no permission request")
		}
	}
}

// S56 at session level: a bash call the agent's rules ask about (the last
// matching rule wins over the allow-all before it) raises a request; the
// client's reply decides. A reject without feedback interrupts the drain:
// the call fails without running, no continuation is sent, the session is
// idle. With feedback the model sees it as the tool's error and the drain
// goes on; once runs the call.
func TestS56_PermissionRepliesAtSessionLevel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reply    messages.PermissionReply
		feedback string
	}{
		{"reject without feedback", messages.ReplyReject, ""},
		{"reject with feedback", messages.ReplyReject, "use ls instead"},
		{"once", messages.ReplyOnce, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
				if n == 0 {
					return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "bash", Args: []byte(`{"command":"touch ran && echo ran","description":"x"}`)}}}, nil
				}
				return scripted.Turn{Text: "after the reply"}, nil
			}, func(c *Config) {
				c.Agents = map[string]Agent{"build": {Rules: []permission.Rule{
					{Action: "*", Resource: "*", Effect: permission.Allow},
					{Action: "bash", Resource: "*", Effect: permission.Ask},
				}}}
			})
			id := h.create("")
			sub := h.bus.Subscribe(id, 1024)
			defer sub.Close()
			h.prompt(id, "", "go", "", true)
			ask := awaitPermission(t, sub)
			if ask.CallID != "c1" || ask.Action != "bash" {
				t.Fatalf("permission asked %+v", ask)
			}
			if err := h.sessions.ReplyPermission(h.ctx(), id, ReplyPermission{RequestID: ask.RequestID, Reply: tc.reply, Feedback: tc.feedback}); err != nil {
				t.Fatal(err)
			}
			out := h.waitIdle(id)
			_, statErr := os.Stat(filepath.Join(h.loc, "ran"))
			ran := statErr == nil
			evs := strings.Join(h.events(id), " ")
			reqs := h.prov.Requests()
			switch {
			case tc.reply == messages.ReplyOnce:
				if out.Err != "" || !ran || len(reqs) != 2 || !strings.Contains(evs, "permission.replied tool.succeeded") {
					t.Fatalf("once: outcome %+v, ran %v, %d requests, events %s", out, ran, len(reqs), evs)
				}
			case tc.feedback == "":
				if out.Kind != "interrupted" || ran || len(reqs) != 1 {
					t.Fatalf("reject: outcome %+v, ran %v, %d requests: want an interrupted drain, the call not run, no continuation", out, ran, len(reqs))
				}
				if !strings.Contains(evs, "permission.asked permission.replied tool.failed") || !strings.HasSuffix(evs, "idle") {
					t.Fatalf("reject: events %s", evs)
				}
			default:
				if out.Err != "" || ran || len(reqs) != 2 {
					t.Fatalf("reject with feedback: outcome %+v, ran %v, %d requests: want the drain to go on", out, ran, len(reqs))
				}
				r := reqs[1].Messages[2].ToolResult
				if r == nil || !r.IsError || !strings.Contains(r.Output, tc.feedback) {
					t.Fatalf("reject with feedback: the model saw %q", requestRoles(reqs[1]))
				}
			}
			h.checkReplay()
		})
	}
}
