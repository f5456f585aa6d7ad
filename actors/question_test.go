package actors

import (
	"errors"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// A question left open when the user sends a new message instead of
// answering: the drain that promotes the message dismisses it first, in
// the journal order clients and replays rely on (the dismissal, the call's
// failure, then the promotion), the model sees the call failed with the
// dismissal's text, and a late answer is refused. The open question is
// folded by session.State as the journal projects it (checkReplay).
func TestQuestionDismissedByANewPrompt(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			return scripted.Turn{ToolCalls: []scripted.ToolCall{call("q1", "question", map[string]any{
				"questions": []map[string]any{{"question": "Which color?", "options": []map[string]any{{"label": "red"}, {"label": "blue"}}}}})}}, nil
		}
		return scripted.Turn{Text: "ok"}, nil
	})
	id := h.create("")
	h.prompt(id, "", "pick a color", "", true)
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain: %+v", out)
	}
	h.checkReplay() // the open question folded as projected

	envs, err := h.journal.ReadEvents(h.ctx(), id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	var request string
	for _, e := range envs {
		if q, ok := e.Event.(messages.QuestionAsked); ok {
			request = q.RequestID
		}
	}
	if request == "" {
		t.Fatalf("no question asked: %v", h.events(id))
	}

	h.prompt(id, "", "never mind, use green", "", true)
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain after the new prompt: %+v", out)
	}
	envs, err = h.journal.ReadEvents(h.ctx(), id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range envs[len(envs)-10:] {
		switch ev := e.Event.(type) {
		case messages.QuestionRejected:
			if ev.RequestID != request || ev.Reason != "the user sent a new message instead" {
				t.Fatalf("dismissal %+v", ev)
			}
			order = append(order, "dismissed")
		case messages.ToolFailed:
			if ev.CallID != "q1" || ev.Error != "The user sent a new message instead of answering this question." {
				t.Fatalf("call failure %+v", ev)
			}
			order = append(order, "failed")
		case messages.PromptPromoted:
			order = append(order, "promoted")
		case messages.TurnStarted:
			order = append(order, "turn")
		}
	}
	if want := []string{"dismissed", "failed", "promoted", "turn"}; len(order) != len(want) || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] || order[3] != want[3] {
		t.Fatalf("events %v, want %v (%v)", order, want, h.events(id))
	}
	reqs := h.prov.Requests()
	var seen string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.ToolResult != nil {
			seen = m.ToolResult.Output
		}
	}
	if seen != "The user sent a new message instead of answering this question." {
		t.Fatalf("the model saw the question's call as %q", seen)
	}

	err = h.sessions.ReplyPermission(h.ctx(), id, ReplyPermission{RequestID: request, Reply: messages.ReplyOnce, Answers: [][]string{{"blue"}}})
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Code != CodeNotFound {
		t.Fatalf("a late answer to the dismissed question: %v, want not_found", err)
	}
	h.checkReplay()
}

// The shell's part of a question the agent may not ask: its rules decide
// the verdict it hands the core (session.QuestionAsked.Denied), which
// fails the call instead of asking; the model reads the denial and the
// drain goes on. The other rules (allow everything else) do not let it
// through: the last matching rule wins.
func TestQuestionTheAgentsRulesDenyFailsTheCall(t *testing.T) {
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			return scripted.Turn{ToolCalls: []scripted.ToolCall{call("q1", QuestionTool, map[string]any{
				"questions": []map[string]any{{"question": "Which color?"}}})}}, nil
		}
		return scripted.Turn{Text: "fine"}, nil
	}, func(c *Config) {
		c.Agents = map[string]Agent{"build": {Rules: []permission.Rule{
			{Action: "*", Resource: "*", Effect: permission.Allow},
			{Action: QuestionTool, Resource: "*", Effect: permission.Deny},
		}}}
	})
	id := h.create("")
	h.prompt(id, "", "pick a color", "", true)
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain: %+v", out)
	}
	envs, err := h.journal.ReadEvents(h.ctx(), id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range envs {
		if _, ok := e.Event.(messages.QuestionAsked); ok {
			t.Fatalf("a denied question was asked: %v", h.events(id))
		}
	}
	reqs := h.prov.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (the continuation after the denial)", len(reqs))
	}
	var seen *provider.ToolResult
	for _, m := range reqs[1].Messages {
		if m.ToolResult != nil {
			seen = m.ToolResult
		}
	}
	if seen == nil || !seen.IsError || seen.Output != session.QuestionDeniedError {
		t.Fatalf("the model saw the question's call as %+v, want the error %q", seen, session.QuestionDeniedError)
	}
	h.checkReplay()
}
