package session

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
)

// Questions: the question tool asks the user instead of running (the
// owner steps QuestionAsked, the core journals the request:
// stepQuestionAsked); the request stays open
// in State across drains and restarts until the client's reply
// (QuestionReply) closes it and settles its call, or the model is asked
// again without the answer (a promotion: the user spoke instead; an
// explicit run: the session resumed without it) and dismisses it first
// (decideBoundary). A restart does not resume the model while a question
// is open (stepRecover): the answer does.

// QuestionTool is the tool the session answers itself: the model asks the
// user, the call stays open in the journal (QuestionAsked) and the drain
// ends; a reply (or rejection) settles the call and, when answered, starts
// the drain that lets the model continue. Nothing waits in memory, so the
// question outlives restarts, passivation and moves.
const QuestionTool = "question"

// QuestionDeniedError is what the model sees of a question call the
// agent's rules deny.
const QuestionDeniedError = "permission denied: question (the agent may not ask the user)"

// stepQuestionAsked: a call the agent may not make, or whose input is not
// a list of questions, settles failed with an error the model reads (and
// the turn goes on, as after any tool error); otherwise the request is
// journaled and the call counts as settled for the turn (the user's
// answer settles it durably later), while the turn's end does not
// continue the drain while the question is open (State.Questions, once
// Append is folded). A call not of the turn in flight, not recorded or
// already settled is dropped.
func (c *Core) stepQuestionAsked(in QuestionAsked) Ready {
	call := in.Call
	d := c.Drain
	if d == nil || d.Turn == nil || d.Turn.AssistantMessageID != call.AssistantMessageID {
		return Ready{}
	}
	t := d.Turn
	if settled, ok := t.settled[call.CallID]; !ok || settled {
		return Ready{}
	}
	fail := func(msg string) Ready {
		return c.stepToolSettled(ToolSettled{Result: messages.ToolFailed{AssistantMessageID: call.AssistantMessageID, CallID: call.CallID, Error: msg}})
	}
	if in.Denied {
		return fail(QuestionDeniedError)
	}
	qs, err := parseQuestions(call.Input)
	if err != nil {
		return fail(err.Error())
	}
	t.settled[call.CallID] = true
	t.Unsettled--
	asked := messages.QuestionAsked{RequestID: in.RequestID, AssistantMessageID: call.AssistantMessageID, CallID: call.CallID, Questions: qs}
	rd := Ready{Append: append(c.takeCarry(), asked)}
	if !t.Streaming && t.Unsettled == 0 {
		rd.TurnOver = true
	}
	return rd
}

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

// parseQuestions reads the question tool's input; its errors are what the
// model reads of a malformed call, so they say what shape was expected.
// A question allows a typed answer unless it says custom: false.
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

// QuestionReply: a client answered an open question request (Answers:
// one list of chosen labels or typed text per question) or dismissed it
// (Reject; Feedback: why). The core takes it only for a request open in
// State (not one already closed, nor one a promotion is dismissing):
// Append journals the reply and settles the asking call (QuestionReplied
// and ToolSucceeded with the answers as the model reads them, or
// QuestionRejected and ToolFailed with QuestionRejectedError). An answer
// lets the turn in flight that asked continue, owes an earlier turn's
// drain a provider attempt at its next boundary, or, when no drain runs,
// starts one of its own (Ready.StartDrain) so the model continues from
// it; a dismissal of the turn in flight's question stops the drain as an
// interrupt does. Otherwise Ready is empty and the owner refuses the reply.
type QuestionReply struct {
	RequestID string
	Answers   [][]string
	Reject    bool
	Feedback  string
}

// QuestionRejectedError is what the model sees of a dismissed question.
const QuestionRejectedError = "The user dismissed this question without answering."

// DismissedByPromptReason and DismissedByPromptError are the journal's
// reason and what the model sees of a question dismissed because the user
// sent a new message instead of answering it.
const (
	DismissedByPromptReason = "the user sent a new message instead"
	DismissedByPromptError  = "The user sent a new message instead of answering this question."

	// DismissedByRunReason and DismissedByRunError: the client resumed
	// the session (an explicit run) without answering.
	DismissedByRunReason = "the session was resumed without an answer"
	DismissedByRunError  = "The session was resumed without an answer to this question."
)

// stepQuestionReply settles an open question request with the client's
// reply, and decides what follows (QuestionReply).
func (c *Core) stepQuestionReply(in QuestionReply) Ready {
	q, open := c.State.Questions[in.RequestID]
	if !c.State.Exists || !open || c.dismissing(in.RequestID) {
		return Ready{}
	}
	var evs []messages.Event
	if in.Reject {
		reason := in.Feedback
		if reason == "" {
			reason = "dismissed by the user"
		}
		evs = []messages.Event{messages.QuestionRejected{RequestID: in.RequestID, Reason: reason},
			messages.ToolFailed{AssistantMessageID: q.AssistantMessageID, CallID: q.CallID, Error: QuestionRejectedError}}
	} else {
		evs = []messages.Event{messages.QuestionReplied{RequestID: in.RequestID, Answers: in.Answers},
			messages.ToolSucceeded{AssistantMessageID: q.AssistantMessageID, CallID: q.CallID, Output: answerText(q.Questions, in.Answers)}}
	}
	rd := c.afterQuestionReply(q.AssistantMessageID, in.Reject)
	rd.Append = append(append(c.takeCarry(), evs...), rd.Append...)
	return rd
}

// afterQuestionReply: an answer to the turn in flight lets its end
// continue; one to an earlier turn is owed a provider attempt at this
// drain's next boundary; with no drain, the model continues from it in a
// drain of its own. A dismissal of the turn in flight's question stops the
// drain as a declined permission does.
func (c *Core) afterQuestionReply(assistant string, rejected bool) Ready {
	d := c.Drain
	switch {
	case d != nil && d.Turn != nil && d.Turn.AssistantMessageID == assistant:
		if rejected {
			return c.stepInterrupt(Interrupt{})
		}
	case rejected:
	case c.State.openQuestionsOf(assistant) > 1: // this reply's close is not folded yet
		// The model asked several questions: it continues once all of
		// them are answered, not with some still open (the run would
		// have to dismiss them: decideBoundary).
	case d == nil:
		return Ready{StartDrain: &StartDrain{Run: true}}
	default:
		d.RunOwed = true
	}
	return Ready{}
}

// dismissQuestions are the events that dismiss every open question
// request because the model is asked again without their answers (a new
// prompt is promoted: byPrompt; an explicit run), in request ID order (as
// the journal lists them): each request's rejection, then its call's
// failure.
func (c *Core) dismissQuestions(byPrompt bool) []messages.Event {
	reason, why := DismissedByRunReason, DismissedByRunError
	if byPrompt {
		reason, why = DismissedByPromptReason, DismissedByPromptError
	}
	ids := make([]string, 0, len(c.State.Questions))
	for id := range c.State.Questions {
		if !c.dismissing(id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var evs []messages.Event
	for _, id := range ids {
		q := c.State.Questions[id]
		evs = append(evs, messages.QuestionRejected{RequestID: id, Reason: reason},
			messages.ToolFailed{AssistantMessageID: q.AssistantMessageID, CallID: q.CallID, Error: why})
	}
	return evs
}

// dismissing reports whether the carried events already dismiss the
// question request (a promotion waiting for its turn's TurnStarted).
func (c *Core) dismissing(requestID string) bool {
	for _, ev := range c.Carry {
		if r, ok := ev.(messages.QuestionRejected); ok && r.RequestID == requestID {
			return true
		}
	}
	return false
}

// openQuestionsOf counts the open question requests of a turn.
func (s *State) openQuestionsOf(assistant string) int {
	n := 0
	for _, q := range s.Questions {
		if q.AssistantMessageID == assistant {
			n++
		}
	}
	return n
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
