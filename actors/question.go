package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// QuestionTool is the tool the session answers itself: the model asks the
// user, the call stays open in the journal (QuestionAsked) and the drain
// ends; a reply (or rejection) settles the call and, when answered, starts
// the drain that lets the model continue. Nothing waits in memory, so the
// question outlives restarts, passivation and moves.
const QuestionTool = "question"

// QuestionRejectedError is what the model sees of a dismissed question.
const QuestionRejectedError = session.QuestionRejectedError

// questionInput is the question tool's input (OpenCode's shape).
type questionInput struct {
	Questions []struct {
		Question string `json:"question"`
		Header   string `json:"header"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
		Multiple bool  `json:"multiple"`
		Custom   *bool `json:"custom"`
	} `json:"questions"`
}

func parseQuestions(input []byte) ([]messages.Question, error) {
	var in questionInput
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("question: input is not {\"questions\": [...]}: %v", err)
	}
	if len(in.Questions) == 0 {
		return nil, fmt.Errorf("question: ask at least one question")
	}
	out := make([]messages.Question, 0, len(in.Questions))
	for i, q := range in.Questions {
		if strings.TrimSpace(q.Question) == "" {
			return nil, fmt.Errorf("question: questions[%d].question is empty", i)
		}
		mq := messages.Question{Question: q.Question, Header: q.Header, Multiple: q.Multiple, Custom: q.Custom == nil || *q.Custom}
		for _, o := range q.Options {
			mq.Options = append(mq.Options, messages.QuestionOption{Label: o.Label, Description: o.Description})
		}
		out = append(out, mq)
	}
	return out, nil
}

// askQuestion journals a question tool call's request instead of running
// a tool. The call counts as settled for the turn; the turn's end does not
// continue the drain while the question is open (the core's
// State.Questions).
func (a *sessionActor) askQuestion(t *turn, c *toolCall) {
	c.settled = true
	fail := func(msg string) {
		a.execute(a.core.Step(session.ToolSettled{Result: messages.ToolFailed{AssistantMessageID: t.assistantID, CallID: c.id, Error: msg}}))
	}
	if permission.Evaluate(t.rules, QuestionTool, "*").Effect == permission.Deny {
		fail("permission denied: question (the agent may not ask the user)")
		return
	}
	qs, err := parseQuestions(c.input)
	if err != nil {
		fail(err.Error())
		return
	}
	a.execute(a.core.Step(session.QuestionAsked{Asked: messages.QuestionAsked{RequestID: messages.NewID("que"), AssistantMessageID: t.assistantID, CallID: c.id, Questions: qs}}))
}

// replyQuestion hands a client's reply to the core, which takes it only
// for an open question request and decides what follows
// (session.QuestionReply): its Append settles the call, then the drain
// in flight goes on, is stopped (a dismissal), or a drain of its own
// starts for the answer.
func (a *sessionActor) replyQuestion(m *ReplyPermission) any {
	rd := a.core.Step(session.QuestionReply{RequestID: m.RequestID, Answers: m.Answers, Reject: m.Reply == messages.ReplyReject, Feedback: m.Feedback})
	if len(rd.Append) == 0 {
		return &CommandError{Code: CodeNotFound, Msg: fmt.Sprintf("session %s has no pending question request %s", a.id, m.RequestID)}
	}
	d := a.drain
	if err := a.write(rd.Append); err != nil {
		a.appendFailed(d, rd, err)
		return err
	}
	rd.Append = nil
	a.execute(rd)
	return &Done{LastSeq: a.seq}
}

// loadQuestions reads the session's open question requests (the
// journal's pending questions rows) as the session state holds them.
func loadQuestions(ctx context.Context, j *persistence.Journal, id string) (map[string]session.Question, error) {
	qs, err := j.Questions(ctx, id)
	if err != nil {
		return nil, err
	}
	var out map[string]session.Question
	for _, q := range qs {
		if q.State != "pending" {
			continue
		}
		if out == nil {
			out = map[string]session.Question{}
		}
		out[q.RequestID] = session.Question{AssistantMessageID: q.AssistantMessageID, CallID: q.CallID, Questions: q.Questions, Seq: q.Seq}
	}
	return out, nil
}
