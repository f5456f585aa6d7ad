package shell

import (
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// replyPermission hands a client's reply to a question or permission
// request to the core, which takes it only for an open request, once
// (session.Reply), and decides what follows: its Append journals it (a
// question's settles the call, then the drain in flight goes on, is
// stopped by a dismissal, or a drain of its own starts for the answer);
// a permission's Answer is handed to the call waiting for it once the
// reply is durable. A reply the journal did not take is answered with
// the append's error.
func (a *sessionActor) replyPermission(m *protocol.ReplyPermission) any {
	d := a.drain
	rd := a.core.Step(session.Reply{RequestID: m.RequestID, Reply: m.Reply, Answers: m.Answers, Feedback: m.Feedback})
	if r := rd.Refused; r != nil {
		return refused(r)
	}
	if err := a.write(rd.Append); err != nil {
		a.appendFailed(d, rd, err)
		return err
	}
	rd.Append = nil
	a.execute(rd)
	if r := rd.Answer; r != nil {
		a.perms.Answer(r.RequestID, permission.Reply{Answer: permission.Answer(r.Reply), Feedback: r.Feedback})
	}
	return &protocol.Done{LastSeq: a.journal.Seq()}
}
