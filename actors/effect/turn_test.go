package effect

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/render"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// toolRegistry is a tool registry that hands what it receives (the calls
// started, the cancels) to got.
func toolRegistry(t *testing.T, got posted) (*actor.ActorSystem, *actor.PID) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	return system, system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *toolactors.ExecuteTool, *toolactors.CancelTool:
			got <- m
		}
	}))
}

// inFlight is a drain of session ses_1 in /loc whose turn is built with
// rules and streamed (token 11) from prov.
func inFlight(t *testing.T, prov provider.Provider, rules []permission.Rule, post Post, system *actor.ActorSystem, tools *actor.PID) (*Drain, messages.TurnStarted) {
	t.Helper()
	x := &Drain{Token: 3, Session: "ses_1", Location: "/loc", Post: post, ReplyTo: actor.NewPID("local", "session"),
		Registries: Registries{System: system, Tools: tools}, Agent: testAgent(prov, session.Limits{})}
	x.Agent.Rules = rules
	model := messages.ModelRef{Provider: scripted.Kind, ID: "test"}
	if in, ok := x.StartTurn("plan", render.Turn{Model: model}, func() ([]messages.Message, error) { return nil, nil }).(session.TurnBuilt); !ok {
		t.Fatalf("started %#v, want the TurnBuilt", in)
	}
	if x.Built() == nil || x.TurnToken() != 0 || x.TurnID() != "" {
		t.Fatal("a built turn is in flight before its stream")
	}
	ts := x.Stream(context.Background(), 11)
	if ts.AssistantMessageID == "" || ts.Agent != "plan" || ts.Model != model || x.Built() != nil ||
		x.TurnToken() != 11 || x.TurnID() != ts.AssistantMessageID {
		t.Fatalf("streamed %+v: token %d, ID %q", ts, x.TurnToken(), x.TurnID())
	}
	return x, ts
}

// TestTheTurnInFlightRunsItsCallsUnderItsRules: the built turn streams
// under its token once, its calls start in the Location's tool registry
// with the turn's agent and rules (their asks tagged with the turn), a
// question is denied by the turn's rules only, and the turn is in flight
// until the core ends it, whatever the stream did.
func TestTheTurnInFlightRunsItsCallsUnderItsRules(t *testing.T) {
	got := make(posted, 4)
	system, tools := toolRegistry(t, got)
	rules := []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Allow}}
	ch := make(posted, 8)
	x, ts := inFlight(t, scriptedProvider(t, scripted.Turn{Text: "hi"}), rules, ch.post, system, tools)
	if m, ok := ch.next(t).(*StreamPart); !ok || m.Token != 11 || m.Part.Text != "hi" {
		t.Fatalf("%#v, want the text tagged with the turn", m)
	}
	for {
		m := ch.next(t)
		if p, ok := m.(*StreamPart); ok && p.Token == 11 {
			continue // the usage, the finish
		}
		if m, ok := m.(*StreamEnded); !ok || m.Token != 11 || m.Err != nil {
			t.Fatalf("%#v, want the stream's end", m)
		}
		break
	}
	x.EndStream()

	call := messages.ToolCalled{AssistantMessageID: ts.AssistantMessageID, CallID: "call_1", Tool: "bash", Input: json.RawMessage(`{"command":"ls"}`)}
	x.StartTool(call, nil)
	ex := got.next(t).(*toolactors.ExecuteTool)
	want := toolactors.ExecuteTool{SessionID: "ses_1", AssistantMessageID: ts.AssistantMessageID, CallID: "call_1", Tool: "bash",
		Input: call.Input, Agent: "plan", Dir: "/loc", Rules: rules, ReplyTo: x.ReplyTo}
	asker := ex.Asker
	ex.Asker = nil
	if !reflect.DeepEqual(*ex, want) || asker == nil {
		t.Fatalf("registry got %+v, want %+v with an asker", *ex, want)
	}
	go func() { _, _ = asker.Ask(context.Background(), permission.Request{Action: "bash"}) }()
	ask := ch.next(t).(*PermissionAsk)
	if ask.Token != 11 || ask.AssistantID != ts.AssistantMessageID || ask.CallID != "call_1" {
		t.Fatalf("asked %+v, want the turn's call", ask)
	}
	close(ask.Reply)

	q := messages.ToolCalled{AssistantMessageID: ts.AssistantMessageID, CallID: "call_2", Tool: session.QuestionTool}
	if in := x.Question(q); in.Denied || in.RequestID == "" || in.Call.CallID != "call_2" {
		t.Fatalf("%+v, want an allowed question with a request ID", in)
	}
	x.turn.rules = append(rules, permission.Rule{Action: session.QuestionTool, Resource: "*", Effect: permission.Deny})
	if in := x.Question(q); !in.Denied {
		t.Fatalf("%+v, want the question denied by the turn's rules", in)
	}

	x.EndTurn("msg_other")
	if x.TurnToken() != 11 {
		t.Fatal("another turn's end ended the turn in flight")
	}
	x.EndTurn(ts.AssistantMessageID)
	if x.TurnToken() != 0 || x.TurnID() != "" {
		t.Fatal("the turn the core ended is still in flight")
	}
}

// TestInterruptCancelsTheTurnElseTheCompaction: an interrupt ends the
// turn in flight's stream (its end is interrupted) and cancels the
// session's calls, and the turn stays in flight until the core ends it;
// the drain's end forgets it. Without a turn, an interrupt ends the
// compaction's summary request.
func TestInterruptCancelsTheTurnElseTheCompaction(t *testing.T) {
	got := make(posted, 4)
	system, tools := toolRegistry(t, got)
	ch := make(posted, 8)
	x, _ := inFlight(t, scriptedProvider(t, scripted.Turn{Text: "partial", Hang: true}), nil, ch.post, system, tools)
	if _, ok := ch.next(t).(*StreamPart); !ok {
		t.Fatal("no part before the hang")
	}
	x.Interrupt()
	if m, ok := ch.next(t).(*StreamEnded); !ok || m.Token != 11 || provider.KindOf(m.Err) != provider.KindInterrupted {
		t.Fatalf("%#v, want the stream's interrupted end", m)
	}
	if m := got.next(t).(*toolactors.CancelTool); m.SessionID != "ses_1" || m.CallID != "" {
		t.Fatalf("registry got %+v, want every call of the session cancelled", m)
	}
	if x.TurnToken() != 11 {
		t.Fatal("an interrupt ended the turn before the core did")
	}
	x.Stop()
	if x.TurnToken() != 0 {
		t.Fatal("the turn is in flight after its drain's end")
	}
	if m := got.next(t).(*toolactors.CancelTool); m.SessionID != "ses_1" {
		t.Fatalf("registry got %+v at the drain's end", m)
	}

	x.Agent = testAgent(scriptedProvider(t, scripted.Turn{Text: "half a summ", Hang: true}), session.Limits{})
	facts := x.CompactionFacts(messages.ModelRef{ID: "test"}, func() ([]messages.Message, error) { return nil, nil }).(session.CompactionFacts)
	if err := x.Summarize(context.Background(), &session.Summarize{ID: facts.ID, Plan: &compaction.Plan{Request: testRequest()}}); err != nil {
		t.Fatal(err)
	}
	x.Interrupt()
	if m := ch.next(t).(*Summarized); m.Token != 3 || provider.KindOf(m.Err) != provider.KindInterrupted {
		t.Fatalf("%#v, want the summary's interrupted end", m)
	}
}
