package actors

import (
	"fmt"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// QuestionTool is the tool the session answers itself (session.QuestionTool).
const QuestionTool = session.QuestionTool

// QuestionRejectedError is what the model sees of a dismissed question.
const QuestionRejectedError = session.QuestionRejectedError

// askQuestion hands a question call to the core instead of running a
// tool, with a new request ID and whether the agent's rules let it ask:
// the core journals the request, or fails the call (denied, or input that
// is not a list of questions). The call counts as settled for the turn.
func (a *sessionActor) askQuestion(t *turn, c *toolCall) {
	c.settled = true
	a.execute(a.core.Step(session.QuestionAsked{
		RequestID: messages.NewID("que"),
		Call:      messages.ToolCalled{AssistantMessageID: t.assistantID, CallID: c.id, Tool: c.tool, Input: c.input},
		Denied:    permission.Evaluate(t.rules, QuestionTool, "*").Effect == permission.Deny,
	}))
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
