package api_test

import (
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

const colorQuestion = `{"questions":[{"question":"Which color?","header":"Color","options":[{"label":"red","description":"warm"},{"label":"blue","description":"cool"}]}]}`

// askThenEcho asks the color question, then answers with what the tool
// result said.
func askThenEcho(req *provider.Request, n int) (scripted.Turn, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == provider.RoleTool {
		return scripted.Turn{Text: "noted: " + last.ToolResult.Output}, nil
	}
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "question", Args: []byte(colorQuestion)}}}, nil
}

// The question tool: the model asks, the drain ends with the request
// pending (listed per session and per Location, question.v2.asked on the
// stream); the server restarts; the answer settles the call and the model
// continues with it. A rejected question fails the call with no further
// turn.
func TestQuestionAnsweredAndRejectedAcrossARestart(t *testing.T) {
	cf := newConfigured(t)
	data := t.TempDir()
	opts := apitest.Options{Data: data, Turns: askThenEcho}
	rt := cf.start(t, opts)
	c := newClient(t, rt)
	ctx := ctxT(t)
	mk := func() string {
		s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	answered, rejected := mk(), mk()
	for _, id := range []string{answered, rejected} {
		prompt(t, c, id, "pick a color")
		if out, err := c.WaitOutcome(ctx, id); err != nil || out.Error != "" {
			t.Fatalf("wait: %+v %v (the drain waits for the answer by ending cleanly)", out, err)
		}
	}
	qs, err := c.Questions(ctx, answered)
	if err != nil || len(qs) != 1 || len(qs[0].Questions) != 1 || qs[0].Questions[0].Question != "Which color?" || len(qs[0].Questions[0].Options) != 2 {
		t.Fatalf("pending questions: %+v %v", qs, err)
	}
	asked := waitEvent(t, c, answered, "question.v2.asked")
	if !strings.Contains(string(asked.Data), qs[0].ID) {
		t.Fatalf("question.v2.asked %s does not name %s", asked.Data, qs[0].ID)
	}
	var located struct {
		Data []wire.QuestionRequest `json:"data"`
	}
	getJSON(t, rt, "/api/question/request?location[directory]="+cf.project, &located)
	if len(located.Data) != 2 {
		t.Fatalf("the Location lists %d pending questions, want 2", len(located.Data))
	}
	rq, err := c.Questions(ctx, rejected)
	if err != nil || len(rq) != 1 {
		t.Fatalf("second session's questions: %+v %v", rq, err)
	}

	rt.Stop()
	rt2 := cf.start(t, opts)
	c2 := newClient(t, rt2)
	if err := c2.ReplyQuestion(ctx, answered, qs[0].ID, [][]string{{"blue"}}); err != nil {
		t.Fatal(err)
	}
	if out, err := c2.WaitOutcome(ctx, answered); err != nil || out.Error != "" {
		t.Fatalf("wait after the answer: %+v %v", out, err)
	}
	var v1ok bool
	if code := v1(t, rt2, "POST", "/question/"+rq[0].ID+"/reject", "", &v1ok); code != 200 || !v1ok {
		t.Fatalf("V1 reject: %d %v", code, v1ok)
	}
	if out, err := c2.WaitOutcome(ctx, rejected); err != nil || out.Error != "" {
		t.Fatalf("wait after the rejection: %+v %v", out, err)
	}

	evs, err := rt2.Node.Journal.ReadEvents(ctx, answered, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	for _, e := range evs {
		switch ev := e.Event.(type) {
		case messages.ToolFailed:
			t.Fatalf("the answered question's call failed: %q", ev.Error)
		case messages.TextEnded:
			answer = ev.Text
		}
	}
	if !strings.Contains(answer, "Which color? → blue") {
		t.Fatalf("the model's last text %q does not hold the answer (events %v)", answer, journalTypes(t, rt2, answered))
	}
	if left, _ := c2.Questions(ctx, answered); len(left) != 0 {
		t.Fatalf("still pending after the answer: %+v", left)
	}

	turns := 0
	failed := ""
	for _, typ := range journalTypes(t, rt2, rejected) {
		if typ == "session.turn.started" {
			turns++
		}
	}
	if _, fail := toolSettlement(t, rt2, rejected); true {
		failed = fail
	}
	if failed != actors.QuestionRejectedError || turns != 1 {
		t.Fatalf("rejected question: call error %q, %d turns; want %q and no further turn", failed, turns, actors.QuestionRejectedError)
	}
}
