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
const QuestionRejectedError = "The user dismissed this question without answering."

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
// Turn.OpenQuestions).
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
	d := a.drain
	a.execute(a.core.Step(session.QuestionAsked{Asked: messages.QuestionAsked{RequestID: messages.NewID("que"), AssistantMessageID: t.assistantID, CallID: c.id, Questions: qs}}))
	if a.drain == d && a.openQuestions >= 0 {
		a.openQuestions++
	}
}

// replyQuestion settles a pending question request: answered, the model
// gets the answers as the call's result and the drain continues (a new one
// when none runs); rejected, the call fails and the drain stops as it does
// for a declined permission.
func (a *sessionActor) replyQuestion(m *ReplyPermission) any {
	q, err := a.pendingQuestion(m.RequestID)
	if err != nil {
		return err
	}
	var evs []messages.Event
	reject := m.Reply == messages.ReplyReject
	if reject {
		reason := m.Feedback
		if reason == "" {
			reason = "dismissed by the user"
		}
		evs = []messages.Event{messages.QuestionRejected{RequestID: q.RequestID, Reason: reason},
			messages.ToolFailed{AssistantMessageID: q.AssistantMessageID, CallID: q.CallID, Error: QuestionRejectedError}}
	} else {
		evs = []messages.Event{messages.QuestionReplied{RequestID: q.RequestID, Answers: m.Answers},
			messages.ToolSucceeded{AssistantMessageID: q.AssistantMessageID, CallID: q.CallID, Output: answerText(q.Questions, m.Answers)}}
	}
	if err := a.append(evs...); err != nil {
		return err
	}
	if a.openQuestions > 0 {
		a.openQuestions--
	}
	// Answered while the asking turn still streams or settles, owed a
	// provider attempt at the drain's next boundary, or (answered) a drain
	// of its own.
	a.execute(a.core.Step(session.QuestionAnswered{AssistantMessageID: q.AssistantMessageID, Rejected: reject}))
	return &Done{LastSeq: a.seq}
}

// pendingQuestion is the session's pending question request id.
func (a *sessionActor) pendingQuestion(id string) (persistence.QuestionRequest, error) {
	qs, err := a.rt.journal.Questions(a.rt.ctx, a.id)
	if err != nil {
		return persistence.QuestionRequest{}, err
	}
	for _, q := range qs {
		if q.RequestID == id && q.State == "pending" {
			return q, nil
		}
	}
	return persistence.QuestionRequest{}, &CommandError{Code: CodeNotFound, Msg: fmt.Sprintf("session %s has no pending question request %s", a.id, id)}
}

// rejectOpenQuestions dismisses the session's open questions before a new
// prompt becomes model-visible: the user spoke instead of answering (the
// history must not hold a call without a result when the model is asked
// again).
func (a *sessionActor) rejectOpenQuestions() error {
	if a.openQuestions == 0 {
		return nil
	}
	qs, err := a.rt.journal.Questions(a.rt.ctx, a.id)
	if err != nil {
		return err
	}
	var evs []messages.Event
	for _, q := range qs {
		if q.State != "pending" {
			continue
		}
		evs = append(evs, messages.QuestionRejected{RequestID: q.RequestID, Reason: "the user sent a new message instead"},
			messages.ToolFailed{AssistantMessageID: q.AssistantMessageID, CallID: q.CallID, Error: "The user sent a new message instead of answering this question."})
	}
	if len(evs) > 0 {
		if err := a.append(evs...); err != nil {
			return err
		}
	}
	a.openQuestions = 0
	return nil
}

// answerText is what the model reads of the user's answers.
func answerText(qs []messages.Question, answers [][]string) string {
	var b strings.Builder
	b.WriteString("The user answered:\n")
	for i, q := range qs {
		ans := "(no answer)"
		if i < len(answers) && len(answers[i]) > 0 {
			ans = strings.Join(answers[i], ", ")
		}
		fmt.Fprintf(&b, "- %s → %s\n", q.Question, ans)
	}
	b.WriteString("Continue with these answers in mind.")
	return b.String()
}

// openQuestionCalls are the calls of the session's pending questions: a
// restart leaves them open (their answer is still awaited).
func (a *sessionActor) openQuestionCalls() (map[string]bool, error) {
	qs, err := a.rt.journal.Questions(a.rt.ctx, a.id)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, q := range qs {
		if q.State == "pending" {
			out[q.AssistantMessageID+"\x00"+q.CallID] = true
		}
	}
	return out, nil
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
